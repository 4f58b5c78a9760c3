// The accounting region the daemon creates for a slice, read back with src/shm's own code.
// Built when src/shm is part of the build.
#include "node/slice_region.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "shm/arbiter.h"
#include "shm/region.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

namespace vgpu::node {
namespace {

TEST(SliceRegionTest, CreatedWithTheSliceLimits) {
  const std::string dir = "/tmp/vgpu-region-test-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/region";
  ContainerSlice spec;
  spec.pod_uid = "u";
  spec.container = "c";
  spec.priority = 0;
  spec.devices = {{"GPU-a", 0, 0, 8ULL << 30, 30}, {"GPU-b", 1, 0, 4ULL << 30, 100}};
  ASSERT_TRUE(CreateSliceRegion(path, spec).ok());
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0666, 0666u);  // any user of the container may join

  shm::Mapping m;
  ASSERT_EQ(shm::Mapping::OpenExisting(path.c_str(), false, &m), shm::RegionError::kOk);
  const shm::RegionConfig& c = m.region()->header.config;
  EXPECT_EQ(c.device_count, 2u);
  EXPECT_EQ(c.priority, shm::kPriorityHigh);  // nvidia.com/priority 0
  EXPECT_EQ(c.memory_limit[0], 8ULL << 30);
  EXPECT_EQ(c.memory_limit[1], 4ULL << 30);
  EXPECT_EQ(c.sm_limit[0], 30u);
  EXPECT_EQ(c.sm_limit[1], 0u);  // 100%: no limit
  EXPECT_EQ(c.memory_limit[2], shm::kNoLimit);

  auto usage = ReadSliceRegion(path, 2);
  ASSERT_TRUE(usage.has_value()) << usage.error().ToString();
  EXPECT_EQ(usage->used_bytes, (std::vector<uint64_t>{0, 0}));
  EXPECT_EQ(usage->processes, 0);
  // A second Allocate of the same container keeps the region.
  ASSERT_TRUE(CreateSliceRegion(path, spec).ok());
  EXPECT_EQ(ReadSliceRegion(dir + "/missing", 1).error().code(), StatusCode::kNotFound);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace vgpu::node
