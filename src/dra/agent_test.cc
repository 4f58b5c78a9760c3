#include "dra/agent.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "support/temp_dir.h"

namespace vgpu::dra {
namespace {

namespace fs = std::filesystem;

TEST(PcieRoot, IsTheFirstElementOfTheDevicesSysfsPath) {
  vgpu::testing::TempDir tmp("vgpu-dra-sysfs");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string root = tmp.path();
  const std::string dev = root + "/devices/pci0000:17/0000:17:00.0/0000:18:00.0";
  fs::create_directories(dev);
  fs::create_directories(root + "/bus/pci/devices");
  fs::create_symlink("../../../devices/pci0000:17/0000:17:00.0/0000:18:00.0",
                     root + "/bus/pci/devices/0000:18:00.0");
  EXPECT_EQ(PcieRootOf(root, "0000:18:00.0"), "pci0000:17");
  EXPECT_EQ(PcieRootOf(root, "0000:19:00.0"), "");
  EXPECT_EQ(PcieRootOf(root, ""), "");
}

}  // namespace
}  // namespace vgpu::dra
