#include "node/plugin/device_list.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace vgpu::node {
namespace {

SliceRecord TwoGpuSlice() {
  SliceRecord r;
  r.spec.pod_ns = "ml";
  r.spec.pod_name = "train";
  r.spec.pod_uid = "0b1c2d3e-0000-4000-8000-000000000001";
  r.spec.container = "main";
  r.spec.devices = {{"GPU-aaaa", 0, 0, 1 << 30, 30}, {"GPU-cccc", 2, 1, 1 << 30, 100}};
  return r;
}

std::vector<device::DeviceInfo> Gpus() {
  std::vector<device::DeviceInfo> gpus(3);
  const char* uuids[] = {"GPU-aaaa", "GPU-bbbb", "GPU-cccc"};
  for (int i = 0; i < 3; ++i) {
    gpus[i].index = i;
    gpus[i].uuid = uuids[i];
    gpus[i].minor_number = 4 + i;
  }
  return gpus;
}

TEST(DeviceListTest, ParsesNvidiasStrategyNames) {
  DeviceListOptions o;
  EXPECT_TRUE(o.envvar);
  EXPECT_FALSE(o.AnyCdi());
  ASSERT_TRUE(ParseDeviceListStrategy("cdi-cri", &o).ok());
  EXPECT_FALSE(o.envvar);
  EXPECT_TRUE(o.cdi_cri);
  EXPECT_FALSE(o.cdi_annotations);
  ASSERT_TRUE(ParseDeviceListStrategy("envvar,cdi-annotations", &o).ok());
  EXPECT_TRUE(o.envvar && o.cdi_annotations && !o.cdi_cri);
  for (const char* bad : {"", "cdi", "envvar,", "envvar,envvar", "volume-mounts"}) {
    DeviceListOptions before;
    Status s = ParseDeviceListStrategy(bad, &before);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_TRUE(before.envvar) << "unchanged on error: " << bad;
  }
  EXPECT_NE(ParseDeviceListStrategy("volume-mounts", &o)
                .message()
                .find("\"volume-mounts\" is not one of envvar, cdi-annotations, cdi-cri"),
            std::string::npos);
  EXPECT_NE(ParseDeviceListStrategy("cdi-cri,cdi-cri", &o).message().find("given twice"),
            std::string::npos);
}

TEST(DeviceListTest, ChecksCdiKinds) {
  EXPECT_TRUE(CheckCdiKind("nvidia.com/gpu").ok());
  EXPECT_TRUE(CheckCdiKind("k8s.device-plugin.nvidia.com/gpu_x").ok());
  for (const char* bad :
       {"gpu", "nvidia.com/", "/gpu", "a/b/c", "nvidia.com/g=u", "-x.com/gpu", "nvidia_com/gpu"}) {
    EXPECT_EQ(CheckCdiKind(bad).code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(DeviceListTest, EnvvarLeavesTheAllocationAlone) {
  ContainerAllocation a;
  a.envs["NVIDIA_VISIBLE_DEVICES"] = "GPU-aaaa,GPU-cccc";
  ASSERT_TRUE(ApplyDeviceList(TwoGpuSlice(), Gpus(), DeviceListOptions{}, &a).ok());
  EXPECT_EQ(a.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-aaaa,GPU-cccc");
  EXPECT_TRUE(a.cdi_devices.empty());
  EXPECT_TRUE(a.devices.empty());
  EXPECT_TRUE(a.annotations.empty());
}

TEST(DeviceListTest, CdiNamesTheSlicesGpus) {
  DeviceListOptions o;
  ASSERT_TRUE(ParseDeviceListStrategy("cdi-cri,cdi-annotations", &o).ok());
  ContainerAllocation a;
  a.envs["NVIDIA_VISIBLE_DEVICES"] = "GPU-aaaa,GPU-cccc";
  ASSERT_TRUE(ApplyDeviceList(TwoGpuSlice(), Gpus(), o, &a).ok());
  EXPECT_EQ(a.cdi_devices,
            (std::vector<std::string>{"nvidia.com/gpu=GPU-aaaa", "nvidia.com/gpu=GPU-cccc"}));
  const std::string key = "cdi.k8s.io/vgpu_0b1c2d3e-0000-4000-8000-000000000001";
  ASSERT_TRUE(a.annotations.count(key));
  EXPECT_EQ(a.annotations.at(key), "nvidia.com/gpu=GPU-aaaa,nvidia.com/gpu=GPU-cccc");
  // Without envvar, an image's NVIDIA_VISIBLE_DEVICES=all cannot reach every GPU.
  EXPECT_EQ(a.envs.at("NVIDIA_VISIBLE_DEVICES"), "void");
  // Another kind; with envvar kept.
  o.cdi_kind = "k8s.device-plugin.nvidia.com/gpu";
  o.envvar = true;
  ContainerAllocation b;
  b.envs["NVIDIA_VISIBLE_DEVICES"] = "GPU-aaaa,GPU-cccc";
  ASSERT_TRUE(ApplyDeviceList(TwoGpuSlice(), Gpus(), o, &b).ok());
  EXPECT_EQ(b.cdi_devices.front(), "k8s.device-plugin.nvidia.com/gpu=GPU-aaaa");
  EXPECT_EQ(b.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-aaaa,GPU-cccc");
  // The annotation key's name part fits the 63 characters of an annotation name.
  EXPECT_LE(CdiAnnotationKey(std::string(100, 'a')).size(), std::string("cdi.k8s.io/").size() + 63);
}

TEST(DeviceListTest, DeviceSpecsNameEachGpuAndTheControlNodes) {
  const std::string root = "/tmp/vgpu-devlist-" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/dev");
  std::ofstream(root + "/dev/nvidia-uvm") << "";
  DeviceListOptions o;
  o.pass_device_specs = true;
  o.probe_root = root;
  o.dev_root = "/host";
  ContainerAllocation a;
  ASSERT_TRUE(ApplyDeviceList(TwoGpuSlice(), Gpus(), o, &a).ok());
  std::vector<std::string> paths;
  for (const auto& d : a.devices) {
    paths.push_back(d.container_path);
    EXPECT_EQ(d.host_path, "/host" + d.container_path);
    EXPECT_EQ(d.permissions, "rw");
  }
  // GPU-aaaa and GPU-cccc have minor numbers 4 and 6; only the optional node that exists.
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia4", "/dev/nvidia6", "/dev/nvidiactl",
                                             "/dev/nvidia-uvm"}));
  // A GPU whose minor number the driver did not tell: refused, not guessed.
  auto gpus = Gpus();
  gpus[2].minor_number = -1;
  ContainerAllocation b;
  Status s = ApplyDeviceList(TwoGpuSlice(), gpus, o, &b);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("GPU GPU-cccc"), std::string::npos) << s.message();
  std::filesystem::remove_all(root);
}

TEST(DeviceListTest, MigDevicesGetTheirParentsNodeAndTheirCapabilities) {
  const char* minors =
      "config 1\nmonitor 2\ngpu6/gi3/access 21\ngpu6/gi3/ci0/access 22\n"
      "gpu6/gi4/access 23\ngpu6/gi4/ci0/access 24\n";
  auto m = MigCapMinors(minors, 6, 4, 0);
  ASSERT_TRUE(m);
  EXPECT_EQ(*m, (std::pair<int, int>(23, 24)));
  auto missing = MigCapMinors(minors, 6, 5, 0);
  ASSERT_FALSE(missing);
  EXPECT_NE(missing.error().message().find("gpu6/gi5/access"), std::string::npos);

  const std::string root = "/tmp/vgpu-devlist-mig-" + std::to_string(getpid());
  std::filesystem::create_directories(root + "/proc/driver/nvidia-caps");
  DeviceListOptions o;
  o.pass_device_specs = true;
  o.probe_root = root;
  SliceRecord r = TwoGpuSlice();
  r.spec.devices = {{"MIG-1234", 2, 0, 1 << 30, 100, 4, 0}};
  ContainerAllocation none;
  Status unreadable = ApplyDeviceList(r, Gpus(), o, &none);
  EXPECT_EQ(unreadable.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(unreadable.message().find("mig-minors cannot be read"), std::string::npos);
  std::ofstream(root + "/proc/driver/nvidia-caps/mig-minors") << minors;
  ContainerAllocation a;
  ASSERT_TRUE(ApplyDeviceList(r, Gpus(), o, &a).ok());
  std::vector<std::string> paths;
  for (const auto& d : a.devices) paths.push_back(d.container_path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidia6", "/dev/nvidia-caps/nvidia-cap23",
                                             "/dev/nvidia-caps/nvidia-cap24", "/dev/nvidiactl"}));
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace vgpu::node
