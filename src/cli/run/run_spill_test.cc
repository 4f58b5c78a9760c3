// `vgpu run --memory-mode spill` admission on this machine's GPUs beside its live slices: what
// they promise and spill counts, dead slices do not, and a refusal names the GPU and the numbers.
#include "cli/run/run_spill.h"

#include <gtest/gtest.h>

namespace vgpu::cli {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;

std::vector<device::DeviceInfo> Gpus() {
  device::DeviceInfo a;
  a.index = 0;
  a.uuid = "GPU-a";
  a.memory_total_bytes = 80 * kGiB;
  device::DeviceInfo b = a;
  b.index = 1;
  b.uuid = "GPU-b";
  return {a, b};
}

slice::SliceEntry Live(uint64_t limit, const char* uuid, uint64_t spilled, bool alive = true) {
  slice::SliceEntry e;
  e.creator_alive = alive;
  e.region.header.config.device_count = 1;
  e.region.header.config.memory_limit[0] = limit;
  std::snprintf(e.region.header.uuid[0], sizeof(e.region.header.uuid[0]), "%s", uuid);
  e.region.header.spill.spilled_bytes = spilled;
  return e;
}

slice::SliceSpec Spill(uint64_t memory, std::vector<std::string> devices = {}) {
  slice::SliceSpec s;
  s.memory = memory;
  s.memory_mode = MemoryMode::kSpill;
  s.devices = std::move(devices);
  return s;
}

TEST(RunSpill, CountsWhatLiveSlicesPromiseAndSpill) {
  slice::SpillPolicy p{8 * kGiB, 1.5};
  // 60 GiB promised on GPU-a + 40 asked = 100 on 80: a spill of 20 GiB; 64 - 8 - 10 = 46 left.
  std::vector<slice::SliceEntry> slices = {Live(60 * kGiB, "GPU-a", 10 * kGiB),
                                           Live(70 * kGiB, "GPU-b", 0)};
  EXPECT_TRUE(AdmitSpillOnGpus(Spill(40 * kGiB), Gpus(), slices, 64 * kGiB, p).ok());
  // Host memory for 20 GiB is not there: 30 - 8 - 10 = 12.
  Status s = AdmitSpillOnGpus(Spill(40 * kGiB), Gpus(), slices, 30 * kGiB, p);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("spill refused on GPU 0: host memory cannot cover the spill: "
                             "20.00 GiB asked"),
            std::string::npos)
      << s.message();
  // The ratio cap: 70 + 65 = 135 GiB on GPU 1's 80 is 1.69x, above 1.5x.
  Status r = AdmitSpillOnGpus(Spill(65 * kGiB, {"GPU-b"}), Gpus(), slices, 640 * kGiB, p);
  EXPECT_NE(r.message().find("GPU 1: the GPU would be promised 1.69x"), std::string::npos)
      << r.message();
}

TEST(RunSpill, DeadSlicesAndOtherGpusDoNotCount) {
  slice::SpillPolicy p{8 * kGiB, 1.5};
  std::vector<slice::SliceEntry> slices = {Live(80 * kGiB, "GPU-a", 50 * kGiB, false),
                                           Live(80 * kGiB, "GPU-b", 0)};
  // GPU-a alone: 40 GiB fits, no spill at all, whatever the host has.
  EXPECT_TRUE(AdmitSpillOnGpus(Spill(40 * kGiB, {"0"}), Gpus(), slices, 0, p).ok());
  EXPECT_FALSE(AdmitSpillOnGpus(Spill(40 * kGiB, {"GPU-x"}), Gpus(), slices, 0, p).ok())
      << "a GPU that is not found is refused";
}

}  // namespace
}  // namespace vgpu::cli
