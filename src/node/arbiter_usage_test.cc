// The node's view of the per-GPU compute arbiters: created at start, read back without writing,
// a slice's record found by the key of its region path, and the compute series of /metrics.
#include "node/arbiter_usage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "node/metrics/metrics_compute.h"
#include "node/metrics/metrics_text.h"
#include "shm/arbiter.h"
#include "shm/arbiter_file.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;

constexpr const char* kGpu = "GPU-aaaaaaaa-1111-4222-8333-444444444444";

class ArbiterUsageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/vgpu-arbiter-usage-" + std::to_string(getpid());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
};

TEST_F(ArbiterUsageTest, CreatedForEveryGpuAndReadBackEmpty) {
  fs::create_directories(dir_);
  ASSERT_TRUE(CreateArbiters(dir_, {kGpu}).ok());
  ASSERT_TRUE(CreateArbiters(dir_, {kGpu}).ok());  // an existing arbiter is kept
  auto usage = ReadArbiters(dir_, {kGpu, "GPU-missing"});
  ASSERT_EQ(usage.size(), 2u);
  EXPECT_EQ(usage[kGpu].error, "");
  EXPECT_TRUE(usage[kGpu].slices.empty());
  EXPECT_EQ(usage[kGpu].turns, 0u);
  EXPECT_NE(usage["GPU-missing"].error, "");  // no file: an error, not an empty arbiter
}

TEST_F(ArbiterUsageTest, ASliceIsFoundByItsRegionPathAndReported) {
  fs::create_directories(dir_);
  ASSERT_TRUE(CreateArbiters(dir_, {kGpu}).ok());
  const std::string region = dir_ + "/slices/uid-a_main/default_a_main/region";
  {
    // What libvgpu.so's gate writes when a process of the slice joins and launches.
    char path[1024];
    ASSERT_TRUE(shm::ArbiterPath(dir_.c_str(), kGpu, path, sizeof path));
    shm::ArbiterMapping m;
    ASSERT_EQ(shm::ArbiterMapping::OpenExisting(path, true, &m), shm::RegionError::kOk);
    shm::ArbiterSlice& s = m.arbiter()->slices[3];
    s.key = SliceKeyOf(region);
    std::strncpy(s.name, "default_a_main", sizeof s.name);
    s.config = {30, 30, 1, shm::kPriorityHigh, shm::kModeCapped, 0, 5'000'000};
    s.members = 1;
    s.used_ns = 2'500'000'000ULL;
    s.kernels = 2500;
    s.held_ns = 1'000'000'000ULL;
    m.arbiter()->header.turns = 42;
  }
  auto usage = ReadArbiters(dir_, {kGpu});
  const ArbiterUsage& gpu = usage[kGpu];
  ASSERT_EQ(gpu.error, "");
  EXPECT_EQ(gpu.turns, 42u);
  ASSERT_EQ(gpu.slices.size(), 1u);
  const ArbiterSliceUsage* a = gpu.Find(SliceKeyOf(region));
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name, "default_a_main");
  EXPECT_EQ(a->max_pct, 30);
  EXPECT_EQ(a->level, shm::kPriorityHigh);
  EXPECT_EQ(a->members, 1);
  EXPECT_EQ(gpu.Find(SliceKeyOf(region + "x")), nullptr);

  SliceRecord r;
  r.region_path = region;
  r.arbitrated = true;
  r.spec.priority = 0;
  r.spec.devices.push_back({kGpu, 0, 0, 1u << 30, 30});
  MetricsBuilder m;
  const Labels l = {{"pod", "a"}, {"uuid", kGpu}};
  AddSliceComputeMetrics(m, l, r, 0, &gpu);
  AddGpuComputeMetrics(m, {{"uuid", kGpu}}, gpu);
  const std::string text = m.Render();
  for (const char* line :
       {"vgpu_slice_compute_guarantee_ratio{pod=\"a\",uuid=\"" /* capped: guarantee = max */,
        "vgpu_slice_compute_seconds_total{pod=\"a\",uuid=\"GPU-aaaaaaaa-1111-4222-8333-"
        "444444444444\"} 2.5",
        "vgpu_slice_kernels_total{pod=\"a\",uuid=\"GPU-aaaaaaaa-1111-4222-8333-444444444444\"} "
        "2500",
        "vgpu_slice_compute_wait_seconds_total{pod=\"a\",uuid=\"GPU-aaaaaaaa-1111-4222-8333-"
        "444444444444\"} 1",
        "vgpu_slice_compute_achieved_ratio{pod=\"a\"", "priority=\"high\"",
        "vgpu_gpu_compute_turns_total{uuid=\"GPU-aaaaaaaa-1111-4222-8333-444444444444\"} 42",
        "vgpu_gpu_compute_arbitrated_slices{uuid=\"GPU-aaaaaaaa-1111-4222-8333-444444444444\"} "
        "1"}) {
    EXPECT_NE(text.find(line), std::string::npos) << line << " in\n" << text;
  }
  EXPECT_NE(text.find("vgpu_slice_compute_guarantee_ratio{pod=\"a\",uuid=\"GPU-aaaaaaaa-1111-4222-"
                      "8333-444444444444\"} 0.3"),
            std::string::npos)
      << text;

  // A slice without a record in the arbiter got no GPU time from it.
  SliceRecord other = r;
  other.region_path = region + "-other";
  MetricsBuilder m2;
  AddSliceComputeMetrics(m2, l, other, 0, &gpu);
  EXPECT_NE(m2.Render().find("vgpu_slice_compute_achieved_ratio{pod=\"a\",uuid=\"GPU-aaaaaaaa-1111-"
                             "4222-8333-444444444444\"} 0\n"),
            std::string::npos)
      << m2.Render();
  EXPECT_EQ(m2.Render().find("vgpu_slice_kernels_total"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::node
