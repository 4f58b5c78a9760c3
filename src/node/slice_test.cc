#include "node/slice.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "shm/priority.h"
#include "support/temp_dir.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class SliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    root_ = tmp_.path();
    layout_.root = (root_ / "slices").string();
    layout_.host_libvgpu = (root_ / "libvgpu.so").string();
    layout_.arbiter_dir = (root_ / "arbiter").string();
  }

  ContainerSlice Spec(const std::string& uid) {
    ContainerSlice s;
    s.pod_ns = "ns";
    s.pod_name = "pod-" + uid;
    s.pod_uid = uid;
    s.container = "main";
    s.priority = 0;
    s.devices = {{"GPU-a", 0, 3, 8ULL << 30, 30}, {"GPU-b", 1, 0, (1ULL << 30) + 5, 100}};
    return s;
  }

  vgpu::testing::TempDir tmp_{"vgpu-slice-test"};
  fs::path root_;
  SliceLayout layout_;
};

TEST_F(SliceTest, CreatesTheSliceDirectory) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  EXPECT_EQ(ReadFile(layout_.root + "/ld.so.preload"), "/usr/local/vgpu/libvgpu.so\n");
  auto r = m.Create(Spec("u1"), 1000);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->name, "u1_main");
  EXPECT_EQ(r->dir, layout_.root + "/u1_main");
  const std::string limits = ReadFile(r->limits_path);
  EXPECT_NE(limits.find("uuid.0=GPU-a\nmemory.0=8589934592\ncores.0=30\n"), std::string::npos)
      << limits;
  EXPECT_NE(limits.find("uuid.1=GPU-b\nmemory.1=1073741829\ncores.1=100\n"), std::string::npos);
  EXPECT_NE(limits.find("priority=high\n"), std::string::npos);  // nvidia.com/priority 0
  EXPECT_EQ(limits.find("weight="), std::string::npos);          // has compute settings of its own
  EXPECT_NE(limits.find("arbiter_dir=" + layout_.arbiter_dir + "\n"), std::string::npos);
  // The region lives in a directory named after the pod, under the slice.
  EXPECT_EQ(r->region_path, r->dir + "/ns_pod-u1_main/region");
  EXPECT_NE(limits.find("region=" + r->region_path + "\n"), std::string::npos);
  struct stat st;
  ASSERT_EQ(stat(r->limits_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0444u);
  ASSERT_EQ(stat((r->dir + "/ns_pod-u1_main").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 01777, 01777u);
  ASSERT_EQ(stat(layout_.arbiter_dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 01777, 01777u);
  auto listed = m.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].spec.pod_name, "pod-u1");
  EXPECT_EQ(listed[0].spec.devices[0].unit, 3);
  EXPECT_EQ(listed[0].spec.devices[1].memory_bytes, (1ULL << 30) + 5);
  EXPECT_EQ(listed[0].created_unix, 1000);
  EXPECT_EQ(listed[0].region_path, r->region_path);
  EXPECT_EQ(listed[0].arbiter_dir, layout_.arbiter_dir);
  EXPECT_EQ(listed[0].spec.priority, 0);
  // A repeated Allocate rewrites the same slice and keeps its creation time.
  auto again = m.Create(Spec("u1"), 2000);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->created_unix, 1000);
  EXPECT_EQ(m.List().size(), 1u);
}

TEST_F(SliceTest, AllocationGivesTheContainerItsSlice) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  auto r = m.Create(Spec("u2"), 1);
  ASSERT_TRUE(r.has_value());
  ContainerAllocation a = BuildAllocation(*r, layout_);
  EXPECT_EQ(a.envs["NVIDIA_VISIBLE_DEVICES"], "GPU-a,GPU-b");
  EXPECT_EQ(a.envs["CUDA_DEVICE_ORDER"], "PCI_BUS_ID");  // CUDA's ordinals follow the limits
  EXPECT_EQ(a.envs["CUDA_DEVICE_MEMORY_LIMIT_0"], "8192m");
  EXPECT_EQ(a.envs["CUDA_DEVICE_MEMORY_LIMIT_1"], "1073741829");
  EXPECT_EQ(a.envs["CUDA_DEVICE_SM_LIMIT"], "30");
  EXPECT_EQ(a.envs["CUDA_DEVICE_SM_LIMIT_1"], "100");
  EXPECT_EQ(a.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"], r->region_path);
  EXPECT_EQ(a.envs["VGPU_LIMITS_FILE"], "/etc/vgpu/limits");
  EXPECT_EQ(a.envs["CUDA_TASK_PRIORITY"], "0");
  EXPECT_EQ(a.envs["VGPU_PRIORITY"], "high");
  EXPECT_EQ(a.envs["VGPU_ARBITER_DIR"], layout_.arbiter_dir);
  ASSERT_EQ(a.mounts.size(), 5u);
  EXPECT_EQ(a.mounts[0].container_path, "/usr/local/vgpu/libvgpu.so");
  EXPECT_EQ(a.mounts[0].host_path, layout_.host_libvgpu);
  EXPECT_TRUE(a.mounts[0].read_only);
  EXPECT_EQ(a.mounts[1].container_path, "/etc/ld.so.preload");
  EXPECT_TRUE(a.mounts[1].read_only);
  EXPECT_EQ(a.mounts[2].container_path, "/etc/vgpu/limits");
  EXPECT_EQ(a.mounts[2].host_path, r->limits_path);
  EXPECT_TRUE(a.mounts[2].read_only);
  // The region's directory and the arbiter directory at their host paths, read-write.
  EXPECT_EQ(a.mounts[3].container_path, r->dir + "/ns_pod-u2_main");
  EXPECT_EQ(a.mounts[3].host_path, r->dir + "/ns_pod-u2_main");
  EXPECT_FALSE(a.mounts[3].read_only);
  EXPECT_EQ(a.mounts[4].container_path, layout_.arbiter_dir);
  EXPECT_EQ(a.mounts[4].host_path, layout_.arbiter_dir);
  EXPECT_FALSE(a.mounts[4].read_only);
  layout_.preload = false;
  EXPECT_EQ(BuildAllocation(*r, layout_).mounts.size(), 4u);
}

TEST_F(SliceTest, ComputeSettingsReachTheLimitsFileAndTheEnvironment) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  ContainerSlice s = Spec("u4");
  s.priority = 1;
  s.compute.guarantee = 20;
  s.compute.weight = 3;
  s.compute.mode = "elastic";
  s.compute.level = shm::kPriorityRealtime;
  s.compute.time_slice_ns = 2'000'000;
  s.compute.memory_mode = "spill";
  s.compute.copy_h2d = 10'000'000'000;
  s.compute.copy_d2h = 2'000'000'000;
  s.compute.copy_borrow = true;
  auto r = m.Create(s, 1);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  const std::string limits = ReadFile(r->limits_path);
  for (const char* line : {"guarantee=20\n", "weight=3\n", "mode=elastic\n", "priority=realtime\n",
                           "time_slice=2ms\n", "memory_mode=spill\n", "copy_h2d=10000000000\n",
                           "copy_d2h=2000000000\n", "copy_borrow=on\n"}) {
    EXPECT_NE(limits.find(line), std::string::npos) << line << " in\n" << limits;
  }
  ContainerAllocation a = BuildAllocation(*r, layout_);
  // realtime is not a HAMi number: only the vgpu name is given.
  EXPECT_EQ(a.envs.count("CUDA_TASK_PRIORITY"), 0u);
  EXPECT_EQ(a.envs["VGPU_PRIORITY"], "realtime");
  // Read back from slice.json.
  auto listed = m.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].spec.compute.guarantee, 20);
  EXPECT_EQ(listed[0].spec.compute.weight, 3);
  EXPECT_EQ(listed[0].spec.compute.mode, "elastic");
  EXPECT_EQ(listed[0].spec.compute.level, shm::kPriorityRealtime);
  EXPECT_EQ(listed[0].spec.compute.time_slice_ns, 2'000'000u);
  EXPECT_EQ(listed[0].spec.compute.memory_mode, "spill");
  EXPECT_EQ(listed[0].spec.compute.copy_h2d, 10'000'000'000u);
  EXPECT_EQ(listed[0].spec.compute.copy_d2h, 2'000'000'000u);
  EXPECT_EQ(listed[0].spec.compute.copy_borrow, true);
}

TEST_F(SliceTest, ASliceWithoutComputeSettingsJoinsTheArbiterUnlessToldNot) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  ContainerSlice s = Spec("u5");
  s.priority = -1;
  for (SliceDevice& d : s.devices) d.cores = 100;
  auto r = m.Create(s, 1);
  ASSERT_TRUE(r.has_value());
  std::string limits = ReadFile(r->limits_path);
  EXPECT_NE(limits.find("\nweight=1\n"), std::string::npos) << limits;
  EXPECT_EQ(limits.find("priority="), std::string::npos);
  ContainerAllocation a = BuildAllocation(*r, layout_);
  EXPECT_EQ(a.envs.count("CUDA_TASK_PRIORITY"), 0u);
  EXPECT_EQ(a.envs.count("VGPU_PRIORITY"), 0u);
  // nvidia.com/priority 1 is the normal level: not a reason to take part by itself.
  s.priority = 1;
  r = m.Create(s, 1);
  ASSERT_TRUE(r.has_value());
  limits = ReadFile(r->limits_path);
  EXPECT_NE(limits.find("\nweight=1\n"), std::string::npos) << limits;
  EXPECT_NE(limits.find("\npriority=normal\n"), std::string::npos) << limits;
  EXPECT_TRUE(r->arbitrated);
  s.priority = -1;
  layout_.arbitrate_all = false;
  SliceManager limited(layout_);
  r = limited.Create(s, 1);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(ReadFile(r->limits_path).find("weight="), std::string::npos);
  EXPECT_FALSE(r->arbitrated);
}

TEST(ContainerSliceTest, LevelIsTheComputeLevelElseHamisPriorityElseNormal) {
  ContainerSlice s;
  EXPECT_EQ(s.Level(), shm::kPriorityNormal);
  s.priority = 0;
  EXPECT_EQ(s.Level(), shm::kPriorityHigh);
  s.priority = 1;
  EXPECT_EQ(s.Level(), shm::kPriorityNormal);
  s.priority = 2;  // not one of HAMi's numbers
  EXPECT_EQ(s.Level(), shm::kPriorityNormal);
  s.priority = 0;
  s.compute.level = shm::kPriorityIdle;
  EXPECT_EQ(s.Level(), shm::kPriorityIdle);
}

TEST_F(SliceTest, SlicesOfAnOlderDaemonKeepTheirRegionPath) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  fs::create_directories(layout_.root + "/old_main/shared");
  std::ofstream(layout_.root + "/old_main/slice.json")
      << R"({"version": 1, "namespace": "ns", "pod": "p", "podUID": "old", "container": "main",
            "priority": -1, "created": 5, "devices": [{"uuid": "GPU-a", "index": 0, "unit": 1,
            "memoryBytes": 1024, "cores": 40}]})";
  auto listed = m.List();
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].region_path, layout_.root + "/old_main/shared/region");
  EXPECT_EQ(listed[0].arbiter_dir, "");
  EXPECT_FALSE(listed[0].spec.compute.Any());
  EXPECT_EQ(listed[0].spec.devices[0].cores, 40);
}

TEST_F(SliceTest, RegionDirectoryNamesAreSafeAndShort) {
  ContainerSlice s = Spec("u6");
  s.pod_name = std::string(200, 'p');
  EXPECT_EQ(RegionDirName(s).size(), 120u);
  s.pod_name = "a b";
  EXPECT_EQ(RegionDirName(s), "ns_a-b_main");
}

TEST_F(SliceTest, RefusesUnsafeNames) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  ContainerSlice s = Spec("../etc");
  EXPECT_EQ(m.Create(s, 1).error().code(), StatusCode::kInvalidArgument);
  s = Spec("u3");
  s.container = "a/b";
  EXPECT_EQ(m.Create(s, 1).error().code(), StatusCode::kInvalidArgument);
  s = Spec("u3");
  s.devices.clear();
  EXPECT_EQ(m.Create(s, 1).error().code(), StatusCode::kInvalidArgument);
}

TEST_F(SliceTest, GarbageCollectionRemovesSlicesOfGonePods) {
  SliceManager m(layout_);
  ASSERT_TRUE(m.Init().ok());
  ASSERT_TRUE(m.Create(Spec("live"), 100).has_value());
  ASSERT_TRUE(m.Create(Spec("gone"), 100).has_value());
  ASSERT_TRUE(m.Create(Spec("young"), 195).has_value());
  auto removed = m.CollectGarbage({"live"}, 200, 60);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].spec.pod_uid, "gone");
  EXPECT_FALSE(fs::exists(layout_.root + "/gone_main"));
  EXPECT_TRUE(fs::exists(layout_.root + "/live_main"));
  EXPECT_TRUE(fs::exists(layout_.root + "/young_main"));  // within the grace period
  EXPECT_TRUE(fs::exists(layout_.root + "/ld.so.preload"));
  EXPECT_EQ(m.CollectGarbage({"live"}, 1000, 60).size(), 1u);
  EXPECT_EQ(m.List().size(), 1u);
}

}  // namespace
}  // namespace vgpu::node
