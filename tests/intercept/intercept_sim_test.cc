// libvgpu.so on the simulated GPU, across real processes: every allocation path holds its slice
// exactly, the slice is what cuMemGetInfo and NVML report, racing processes never exceed the
// limit, and killed processes neither wedge the others nor keep their memory. The slice's
// counters (intercept/telemetry.h) equal the simulated driver's own counts, and the measured
// busy time of gated slices matches the simulated timeline.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "sanitizer_env.h"
#include "shm/proc_identity.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "simgpu/shared_state.h"
#include "support/temp_dir.h"
#include "support/wait_for.h"

namespace vgpu {
namespace {

using testing::ChildProcess;
using testing::NowMs;
using testing::RunToCompletion;

constexpr uint64_t kMiB = 1ULL << 20;

// In a sanitizer build the sanitizer runtime must be loaded before libvgpu.so.
const std::string kPreload = testing::PreloadList(LIBVGPU_PATH);

class SliceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    std::ofstream(dir_ + "/devices.conf") << "model=h100 memory=8GiB\n";
  }

  // The environment of a process in slice `name` with a memory limit of `limit` bytes.
  std::vector<std::string> SliceEnv(const std::string& name, uint64_t limit,
                                    std::vector<std::string> extra = {}) const {
    std::vector<std::string> env = {
        std::string("LD_PRELOAD=") + kPreload,
        std::string("LD_LIBRARY_PATH=") + SIMGPU_DIR,
        "VGPU_SIMGPU_CONFIG=" + dir_ + "/devices.conf",
        "VGPU_SIMGPU_STATE=" + dir_ + "/simgpu.state",
        "VGPU_SIMGPU_LOG_LEVEL=1",
        "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + Region(name),
        "CUDA_DEVICE_MEMORY_LIMIT=" + std::to_string(limit),
        "VGPU_CONTEXT_OVERHEAD=0",
        "LIBCUDA_LOG_LEVEL=1",
    };
    env.insert(env.end(), extra.begin(), extra.end());
    return env;
  }
  std::string Region(const std::string& name) const { return dir_ + "/" + name + ".region"; }
  static std::vector<std::string> Worker(std::vector<std::string> args) {
    args.insert(args.begin(), WORKER_PATH);
    return args;
  }

  testing::TempDir tmp_{"vgpu-intercept-sim"};
  std::string dir_;
};

std::map<std::string, std::string> Lines(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return m;
}

struct PathCase {
  const char* path;
  uint64_t bytes;
  uint64_t extra;  // smallest further allocation the driver accepts on this path
};

TEST_F(SliceTest, EveryAllocationPathHoldsNBytesAndNotOneByteMore) {
  const uint64_t n = 64 * kMiB;
  const PathCase cases[] = {
      {"alloc", n, 1},      {"legacy", n, 1},        {"managed", n, 1},    {"pitch", n, 512},
      {"vmm", n, 2 * kMiB}, {"async", n, 1},         {"async_ptsz", n, 1}, {"pool", n, 1},
      {"array", n, 1},      {"array3d", n, 1},       {"mipmap", n, 1},     {"graph", n, 1},
      {"procaddr", n, 1},   {"procaddr_ptsz", n, 1}, {"dlsym", n, 1},
  };
  for (const PathCase& c : cases) {
    int code = -1;
    std::string out =
        RunToCompletion(Worker({"fill", c.path, std::to_string(c.bytes), std::to_string(c.extra)}),
                        SliceEnv(std::string("fill-") + c.path, n), &code);
    EXPECT_EQ(code, 0) << c.path << "\n" << out;
    auto lines = Lines(out);
    EXPECT_EQ(lines["first"], "CUDA_SUCCESS") << c.path;
    EXPECT_EQ(lines["extra"], "CUDA_ERROR_OUT_OF_MEMORY") << c.path << " is not limited";
  }
}

TEST_F(SliceTest, WithoutTheLibraryTheSameCallsSucceed) {
  // Control: the simulated device has 8 GiB; the refusals above come from libvgpu.
  std::vector<std::string> env = SliceEnv("control", 64 * kMiB);
  env[0] = "LD_PRELOAD=";
  std::string out = RunToCompletion(Worker({"fill", "alloc", std::to_string(64 * kMiB)}), env);
  EXPECT_EQ(Lines(out)["extra"], "CUDA_SUCCESS") << out;
}

TEST_F(SliceTest, LimitsFileWinsOverTheEnvironment) {
  std::ofstream(dir_ + "/limits") << "memory=32MiB\n";
  std::string out =
      RunToCompletion(Worker({"fill", "alloc", std::to_string(48 * kMiB)}),
                      SliceEnv("file", 64 * kMiB, {"VGPU_LIMITS_FILE=" + dir_ + "/limits"}));
  EXPECT_EQ(Lines(out)["first"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
}

TEST_F(SliceTest, ContextOverheadIsPartOfTheSlice) {
  std::string out = RunToCompletion(Worker({"fill", "alloc", std::to_string(48 * kMiB)}),
                                    SliceEnv("ctx", 64 * kMiB, {"VGPU_CONTEXT_OVERHEAD=16MiB"}));
  auto lines = Lines(out);
  EXPECT_EQ(lines["first"], "CUDA_SUCCESS") << out;
  EXPECT_EQ(lines["extra"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
}

TEST_F(SliceTest, UnusableRegionStillEnforcesTheLimitPerProcess) {
  std::vector<std::string> env = SliceEnv("x", 64 * kMiB);
  env[5] = "CUDA_DEVICE_MEMORY_SHARED_CACHE=/nonexistent/dir/slice.region";
  std::string out = RunToCompletion(Worker({"fill", "alloc", std::to_string(64 * kMiB)}), env);
  auto lines = Lines(out);
  EXPECT_EQ(lines["first"], "CUDA_SUCCESS") << out;
  EXPECT_EQ(lines["extra"], "CUDA_ERROR_OUT_OF_MEMORY") << out;
}

TEST_F(SliceTest, MemGetInfoAndNvmlReportTheSlice) {
  const uint64_t limit = 1024 * kMiB;
  ChildProcess holder(Worker({"hold", std::to_string(100 * kMiB)}), SliceEnv("info", limit));
  std::string ready = holder.ReadLine();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  std::string holder_pid = ready.substr(6);

  auto info = Lines(RunToCompletion(Worker({"info"}), SliceEnv("info", limit)));
  EXPECT_EQ(info["cuMemGetInfo"], std::to_string(limit - 100 * kMiB) + " " + std::to_string(limit));
  EXPECT_EQ(info["totalmem"], std::to_string(limit));
  EXPECT_EQ(info["nvml"], std::to_string(limit) + " " + std::to_string(100 * kMiB) + " " +
                              std::to_string(limit - 100 * kMiB));
  EXPECT_EQ(info["procs"], "1");
  EXPECT_EQ(info["proc"], holder_pid + " " + std::to_string(100 * kMiB));

  // A process that uses NVML only (as nvidia-smi does) sees the same slice.
  auto nvml = Lines(RunToCompletion(Worker({"nvml"}), SliceEnv("info", limit)));
  EXPECT_EQ(nvml["nvml"], info["nvml"]);
  EXPECT_EQ(nvml["proc"], info["proc"]);

  holder.CloseStdin();
  EXPECT_EQ(holder.Wait(), 0);
  info = Lines(RunToCompletion(Worker({"info"}), SliceEnv("info", limit)));
  EXPECT_EQ(info["cuMemGetInfo"], std::to_string(limit) + " " + std::to_string(limit));
  EXPECT_EQ(info["procs"], "0");
}

// Eight processes race to fill one slice, 100 times; together they never get more than the limit.
TEST_F(SliceTest, EightRacingProcessesNeverExceedTheLimit) {
  constexpr int kRaces = 100;
  constexpr int kProcs = 8;
  const uint64_t limit = 256 * kMiB;
  const uint64_t chunk = 3 * kMiB + 4096;
  int exceeded = 0;
  for (int race = 0; race < kRaces; ++race) {
    std::string name = "race" + std::to_string(race);
    std::vector<std::unique_ptr<ChildProcess>> procs;
    for (int p = 0; p < kProcs; ++p) {
      procs.push_back(std::make_unique<ChildProcess>(Worker({"race", std::to_string(chunk)}),
                                                     SliceEnv(name, limit)));
    }
    for (auto& p : procs) ASSERT_EQ(p->ReadLine(), "ready") << "race " << race;
    for (auto& p : procs) p->Write("go\n");
    uint64_t total = 0;
    for (auto& p : procs) {
      std::string line = p->ReadLine();
      ASSERT_EQ(line.rfind("granted ", 0), 0u) << line;
      total += std::stoull(line.substr(8));
    }
    if (total > limit) ++exceeded;
    EXPECT_LE(total, limit) << "race " << race;
    EXPECT_GT(total, limit - chunk) << "race " << race << ": the slice was not filled";
    for (auto& p : procs) p->CloseStdin();
    for (auto& p : procs) EXPECT_EQ(p->Wait(), 0);
    unlink(Region(name).c_str());
  }
  EXPECT_EQ(exceeded, 0);
}

uint64_t CounterValue(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  uint64_t v = 0;
  in.read(reinterpret_cast<char*>(&v), sizeof v);
  return v;
}

bool SlotHeldBy(const shm::Region* r, pid_t pid) {
  for (const shm::ProcSlot& s : r->slots) {
    if (shm::LoadPid(s) == pid) return true;
  }
  return false;
}

uint64_t LiveSlotsUsed(const shm::Region* r) {
  uint64_t sum = 0;
  for (const shm::ProcSlot& s : r->slots) {
    if (shm::LoadPid(s) != 0) sum += shm::LoadU64(s.used[0]);
  }
  return sum;
}

// Processes allocating and freeing in a loop are SIGKILLed at random moments. A test-only delay
// inside the library's critical sections (VGPU_TEST_CRITICAL_SLEEP_US) makes many kills land
// while the victim holds the region lock; the loop goes on until some have. The survivors keep
// going, the lock is never wedged, and the victim's memory is back within a second.
//
// The workers pause between iterations so that the lock is not busy all the time: a mutex that
// is always held starves some waiters for seconds (barging), which is not what this test is about.
TEST_F(SliceTest, KilledProcessesNeverWedgeTheOthersAndTheirMemoryReturns) {
  constexpr int kWorkers = 4;
  constexpr int kMinKills = 20;
  constexpr int kMaxKills = 120;
  const uint64_t limit = 512 * kMiB;
  std::vector<std::string> env = SliceEnv("kill", limit, {"VGPU_TEST_CRITICAL_SLEEP_US=500"});
  std::vector<std::unique_ptr<ChildProcess>> workers(kWorkers);
  std::vector<std::string> counters(kWorkers);
  int started = 0;
  auto start = [&](int i) {
    counters[i] = dir_ + "/counter" + std::to_string(started++);
    workers[i] = std::make_unique<ChildProcess>(Worker({"churn", counters[i], "4000"}), env);
    ASSERT_EQ(workers[i]->ReadLine(), "ready");
  };
  for (int i = 0; i < kWorkers; ++i) start(i);
  shm::Mapping mapping;
  ASSERT_EQ(shm::Mapping::OpenExisting(Region("kill").c_str(), true, &mapping),
            shm::RegionError::kOk);
  const shm::Region* region = mapping.region();
  std::mt19937 rng(2024);
  double worst_return_ms = 0;
  int kills = 0;
  for (; kills < kMaxKills && (kills < kMinKills || region->header.repairs == 0); ++kills) {
    int victim = static_cast<int>(rng() % kWorkers);
    usleep(1000 * (5 + rng() % 40));
    pid_t pid = workers[victim]->pid();
    workers[victim]->Kill(SIGKILL);
    double killed_at = NowMs();
    EXPECT_EQ(workers[victim]->Wait(), 128 + SIGKILL);
    // The others free the victim's slot when they poll (cuMemGetInfo) or need room.
    vgpu::testing::WaitFor([&] { return !SlotHeldBy(region, pid); },
                           std::chrono::milliseconds(3000), std::chrono::milliseconds(2));
    double returned_ms = NowMs() - killed_at;
    worst_return_ms = std::max(worst_return_ms, returned_ms);
    EXPECT_LT(returned_ms, 1000) << "kill " << kills << ": memory of pid " << pid
                                 << " still charged";
    // Nobody is wedged: every survivor makes progress.
    for (int i = 0; i < kWorkers; ++i) {
      if (i == victim) continue;
      uint64_t before = CounterValue(counters[i]);
      vgpu::testing::WaitFor([&] { return CounterValue(counters[i]) != before; },
                             std::chrono::milliseconds(3000), std::chrono::milliseconds(1));
      EXPECT_GT(CounterValue(counters[i]), before) << "worker " << i << " is stuck";
    }
    start(victim);
  }
  EXPECT_GT(region->header.repairs, 0u) << "no kill landed inside a critical section";
  // Kill everyone (maybe inside the lock once more): the lock is still usable, and once the
  // dead are swept nothing stays charged.
  for (auto& w : workers) {
    w->Kill(SIGKILL);
    w->Wait();
  }
  shm::ProcIdentity self = shm::CurrentProcIdentity();
  {
    shm::RegionLock lock(mapping.region(), self, 1000);
    ASSERT_TRUE(lock.held());
  }
  shm::SweepDeadSlots(mapping.region(), self);
  EXPECT_EQ(LiveSlotsUsed(region), 0u);
  EXPECT_EQ(shm::DeviceUsed(region, 0), 0u);
  std::printf(
      "%d kills, %llu of them inside the lock (repaired); worst time for a killed "
      "process's memory to return: %.0f ms\n",
      kills, static_cast<unsigned long long>(region->header.repairs), worst_return_ms);
}

// The simulated GPU's shared state (simgpu/shared_state.h), mapped read-only: the driver's own
// counts of kernels, host-link copy bytes and device time.
class SimState {
 public:
  explicit SimState(const std::string& path) {
    int fd = open(path.c_str(), O_RDONLY);
    if (fd < 0) return;
    void* p = mmap(nullptr, sizeof(simgpu::SharedStateLayout), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p != MAP_FAILED) layout_ = static_cast<const simgpu::SharedStateLayout*>(p);
  }
  ~SimState() {
    if (layout_ != nullptr)
      munmap(const_cast<simgpu::SharedStateLayout*>(layout_), sizeof(*layout_));
  }
  const simgpu::SharedStateLayout* layout() const { return layout_; }
  const simgpu::DeviceRecord& device0() const { return layout_->devices[0]; }
  // Kernel time the timeline gave process `pid` on device 0 (0 when it has no record).
  uint64_t BusyOf(pid_t pid) const {
    for (const simgpu::ProcessRecord& p : layout_->processes) {
      if (p.pid == pid) return p.busy_ns[0];
    }
    return 0;
  }

 private:
  const simgpu::SharedStateLayout* layout_ = nullptr;
};

shm::SliceCounters ReadCounters(const std::string& region_path) {
  shm::Mapping mapping;
  shm::SliceCounters c;
  EXPECT_EQ(shm::Mapping::OpenExisting(region_path.c_str(), false, &mapping),
            shm::RegionError::kOk);
  if (mapping.region() != nullptr) {
    EXPECT_TRUE(shm::ReadSliceCounters(mapping.region(), &c));
  }
  return c;
}

uint64_t Field(const std::map<std::string, std::string>& lines, const std::string& key,
               int word = 0) {
  auto it = lines.find(key);
  if (it == lines.end()) return ~0ULL;
  std::istringstream in(it->second);
  uint64_t v = 0;
  for (int i = 0; i <= word; ++i) in >> v;
  return v;
}

TEST_F(SliceTest, CountersEqualTheSimulatedDriversCounts) {
  const uint64_t limit = 64 * kMiB;
  // Two processes one after the other: the first one's counters are folded into the slice's
  // totals when it exits. Each: 300 launches, 20 + 20 copies of 1 MiB, and 4 MiB allocations
  // until the 64 MiB limit refuses them (1 MiB buffer + 15 x 4 MiB fit, 25 refused).
  uint64_t launched = 0, h2d = 0, d2h = 0, allocated = 0, refused = 0, freed = 0;
  for (int run = 0; run < 2; ++run) {
    int code = -1;
    std::string out = RunToCompletion(Worker({"telemetry", "300", "0", "20", std::to_string(kMiB),
                                              "40", std::to_string(4 * kMiB)}),
                                      SliceEnv("counted", limit), &code);
    ASSERT_EQ(code, 0) << out;
    auto lines = Lines(out);
    launched += Field(lines, "launched");
    h2d += Field(lines, "copied", 0);
    d2h += Field(lines, "copied", 1);
    allocated += Field(lines, "allocated");
    refused += Field(lines, "refused");
    freed += Field(lines, "freed");
  }
  EXPECT_EQ(launched, 600u);
  EXPECT_EQ(refused, 50u);
  SimState sim(dir_ + "/simgpu.state");
  ASSERT_NE(sim.layout(), nullptr);
  shm::SliceCounters c = ReadCounters(Region("counted"));
  EXPECT_TRUE(c.counting);
  EXPECT_EQ(c.processes, 0);  // both exited: everything is in the folded totals
  // The driver's own counts: kernels queued, bytes over the host link in each direction.
  EXPECT_EQ(c.totals.launches, sim.device0().kernels_total);
  EXPECT_EQ(c.totals.launches, launched);
  EXPECT_EQ(c.totals.graph_launches, 0u);
  EXPECT_EQ(c.totals.copy_bytes[shm::kCopyKindHostToDevice], sim.device0().copy_bytes_total[0]);
  EXPECT_EQ(c.totals.copy_bytes[shm::kCopyKindDeviceToHost], sim.device0().copy_bytes_total[1]);
  EXPECT_EQ(c.totals.copy_bytes[shm::kCopyKindHostToDevice], h2d);
  EXPECT_EQ(c.totals.copy_bytes[shm::kCopyKindDeviceToHost], d2h);
  EXPECT_EQ(c.totals.copy_bytes[shm::kCopyKindDeviceToDevice], 0u);
  // Allocations and refusals: what the program was answered (a refused allocation never
  // reaches the driver; libvgpu refuses it).
  EXPECT_EQ(c.totals.allocations, allocated);
  EXPECT_EQ(c.totals.frees, freed);
  shm::Mapping mapping;
  ASSERT_EQ(shm::Mapping::OpenExisting(Region("counted").c_str(), false, &mapping),
            shm::RegionError::kOk);
  EXPECT_EQ(shm::LoadU64(mapping.region()->header.control.oom_refusals), refused);
  EXPECT_EQ(c.peak_used[0], 61 * kMiB);
  EXPECT_EQ(shm::DeviceUsed(mapping.region(), 0), 0u);
  // Ungated launches are not measured.
  EXPECT_EQ(c.totals.busy_ns, 0u);
  EXPECT_EQ(c.totals.gate_wait_ns, 0u);
}

TEST_F(SliceTest, BusyTimeSharesOfGatedSlicesMatchTheTimeline) {
  // Two gated slices share the GPU (30% and 60%), 5 ms kernels (the gate measures a launch onto
  // an idle GPU from its launch call, so a loaded host's scheduling delay before the driver call
  // counts as busy time: a smaller share of longer kernels). Each worker holds after its work so
  // that the timeline still has its record.
  struct Tenant {
    const char* name;
    const char* cores;
    const char* launches;
    std::unique_ptr<ChildProcess> child;
  };
  Tenant tenants[] = {{"busy-a", "30", "60", nullptr}, {"busy-b", "60", "120", nullptr}};
  const double t0 = NowMs();
  for (Tenant& t : tenants) {
    t.child = std::make_unique<ChildProcess>(
        Worker({"telemetry-hold", t.launches, "5000", "0", "0", "0", "0"}),
        SliceEnv(t.name, 256 * kMiB,
                 {std::string("CUDA_DEVICE_SM_LIMIT=") + t.cores, "VGPU_ARBITER_DIR=" + dir_}));
  }
  for (Tenant& t : tenants) {
    std::string line = t.child->ReadLine(30000);
    ASSERT_EQ(line.rfind("launched", 0), 0u) << t.name << ": " << line;
  }
  // Both are done by now (each printed after its cuCtxSynchronize).
  const double elapsed_ns = (NowMs() - t0) * 1e6;
  SimState sim(dir_ + "/simgpu.state");
  ASSERT_NE(sim.layout(), nullptr);
  for (Tenant& t : tenants) {
    shm::SliceCounters c = ReadCounters(Region(t.name));
    uint64_t timeline = sim.BusyOf(t.child->pid());
    SCOPED_TRACE(std::string(t.name) + ": counted " + std::to_string(c.totals.busy_ns) +
                 " ns, timeline " + std::to_string(timeline) + " ns over " +
                 std::to_string(elapsed_ns) + " ns");
    std::printf("%s: busy share counted %.4f, timeline %.4f; gate wait %.3f s\n", t.name,
                static_cast<double>(c.totals.busy_ns) / elapsed_ns,
                static_cast<double>(timeline) / elapsed_ns, c.totals.gate_wait_ns / 1e9);
    EXPECT_GT(timeline, 0u);
    EXPECT_NEAR(static_cast<double>(c.totals.busy_ns) / elapsed_ns,
                static_cast<double>(timeline) / elapsed_ns, 0.02);
    EXPECT_EQ(c.totals.launches, std::strtoull(t.launches, nullptr, 10));
  }
  // The 30% slice waited at the gate.
  EXPECT_GT(ReadCounters(Region("busy-a")).totals.gate_wait_ns, 0u);
  for (Tenant& t : tenants) {
    t.child->CloseStdin();
    EXPECT_EQ(t.child->Wait(), 0);
  }
}

}  // namespace
}  // namespace vgpu
