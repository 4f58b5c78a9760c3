#include "slice/spill_admission.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "slice/host_memory.h"

namespace vgpu::slice {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;

SpillBudget Budget() {
  SpillBudget b;
  b.host_available = 64 * kGiB;
  b.headroom = 8 * kGiB;
  b.already_spilled = 16 * kGiB;
  b.gpu_physical = 80 * kGiB;
  b.max_ratio = 1.5;
  return b;
}

TEST(SpillAdmission, AdmitsWhatHostMemoryCovers) {
  SpillDecision d = AdmitSpill({40 * kGiB, 120 * kGiB}, Budget());  // 64 - 8 - 16 = 40
  EXPECT_TRUE(d.admitted) << d.reason;
  EXPECT_TRUE(d.reason.empty());
}

TEST(SpillAdmission, RefusesASpillHostMemoryCannotCoverWithTheNumbers) {
  SpillDecision d = AdmitSpill({41 * kGiB, 100 * kGiB}, Budget());
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("host memory cannot cover the spill"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("41.00 GiB asked"), std::string::npos) << d.reason;
  EXPECT_NE(d.reason.find("= 40.00 GiB"), std::string::npos) << d.reason;
  SpillBudget low = Budget();
  low.host_available = 4 * kGiB;  // below the headroom: nothing may spill
  EXPECT_FALSE(AdmitSpill({1, 80 * kGiB}, low).admitted);
}

TEST(SpillAdmission, RefusesAboveTheRatioCap) {
  SpillDecision d = AdmitSpill({kGiB, 121 * kGiB}, Budget());
  EXPECT_FALSE(d.admitted);
  EXPECT_NE(d.reason.find("above the cap of 1.50x"), std::string::npos) << d.reason;
  SpillBudget unknown = Budget();
  unknown.gpu_physical = 0;
  EXPECT_FALSE(AdmitSpill({kGiB, kGiB}, unknown).admitted);
}

TEST(SpillAdmission, ReadsMemAvailable) {
  char path[] = "/tmp/vgpu-meminfo-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string text = "MemTotal:       131072000 kB\nMemAvailable:    2048 kB\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  EXPECT_EQ(ReadMemAvailable(path), 2048u * 1024);
  unlink(path);
  EXPECT_EQ(ReadMemAvailable("/nonexistent/meminfo"), 0u);
  EXPECT_GT(ReadMemAvailable(), 0u);
}

TEST(SpillAdmission, OnGpusTheSpillIsWhatThePromiseLeavesOverAndAddsUp) {
  SpillPolicy p{4 * kGiB, 2.0};
  // GPU 0: 60 + 40 on 80 spills 20; GPU 1: 10 + 40 on 80 spills nothing.
  std::vector<SpillGpu> gpus = {{"GPU 0", 80 * kGiB, 60 * kGiB, 40 * kGiB},
                                {"GPU 1", 80 * kGiB, 10 * kGiB, 40 * kGiB}};
  EXPECT_TRUE(AdmitSpillOnGpus(gpus, 0, 24 * kGiB, p).admitted);
  SpillDecision d = AdmitSpillOnGpus(gpus, 1, 24 * kGiB, p);
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.reason.rfind("GPU 0: host memory cannot cover the spill: 20.00 GiB asked", 0), 0u)
      << d.reason;
  // Both GPUs spilling 20 GiB each need 40 GiB of host memory together.
  gpus[1].promised_by_others = 60 * kGiB;
  SpillDecision both = AdmitSpillOnGpus(gpus, 0, 40 * kGiB, p);
  EXPECT_FALSE(both.admitted);
  EXPECT_EQ(both.reason.rfind("GPU 1: ", 0), 0u) << both.reason;
  EXPECT_TRUE(AdmitSpillOnGpus(gpus, 0, 44 * kGiB, p).admitted);
  EXPECT_FALSE(AdmitSpillOnGpus({}, 0, 1000 * kGiB, p).admitted) << "no GPU: refused";
}

}  // namespace
}  // namespace vgpu::slice
