// Compute sharing on the simulated GPU, end to end: `vgpu bench share --sim --json` runs tenants as
// separate processes, each in its own slice with libvgpu.so, and these tests check the Done-when
// of compute slices on short runs (2-3 s; `vgpu bench share --seconds 10` gives the full 10 s
// windows, docs/compute.md):
//   - 2 to 4 saturating capped tenants (10-90%) get their cap within 3 points, and converge
//     within a second; a capped tenant alone stays at its cap;
//   - elastic: guarantee 30 alone gets >= 95%, and is back at 30 +- 3 one second after a tenant
//     with guarantee 70 starts;
//   - guarantees 30/70 hold for tenants with one kernel in flight (the GPU split 30/70 within 3
//     points of the time they used);
//   - priority: a high tenant next to a saturating low one waits at most one time slice plus one
//     kernel (p99) and keeps >= 95% of its throughput alone, and the low one gets at least half
//     of the time the high one leaves idle;
//   - graph, cooperative, Ex and per-thread-stream launches are held like plain launches;
//   - spare time is shared by weight, also between tenants that launch a few kernels, synchronize
//     and work on the host before their next burst.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>
#include <string>

#include "sanitizer_env.h"
#include "support/bench_json.h"
#include "support/run_command.h"
#include "support/temp_dir.h"

namespace vgpu {
namespace {

using nlohmann::json;

// vgpu as the first word of a shell command (with the ASan runtime in an asan build).
std::string Vgpu() { return testing::SanitizerCommandPrefix() + VGPU_BIN; }

json Bench(const std::string& args) {
  return testing::RunJson(Vgpu() + " bench share --sim --json " + args);
}

const json& Tenant(const json& report, const std::string& name) {
  return testing::FindTenant(report, name);
}

// Every tenant within `tolerance` points of its target over the run, the simulated GPU's own
// count agreeing with the tenants' events, and converged within a second.
void ExpectTargets(const json& report, double tolerance) {
  ASSERT_TRUE(report.contains("tenants"));
  for (const json& t : report["tenants"]) {
    SCOPED_TRACE(t.dump());
    ASSERT_TRUE(t["target"].is_number());
    double target = t["target"];
    EXPECT_NEAR(t["share"].get<double>(), target, tolerance);
    EXPECT_LE(t["worst_window_pp"].get<double>(), tolerance);
    ASSERT_TRUE(t["share_timeline"].is_number());
    EXPECT_NEAR(t["share_timeline"].get<double>(), t["share"].get<double>(), 0.5);
    ASSERT_TRUE(t["converge_s"].is_number());
    EXPECT_LE(t["converge_s"].get<int>(), 1);
  }
}

TEST(ComputeShare, TwoCappedTenants) {
  ExpectTargets(Bench("--seconds 2.5 --tenant a:max=30 --tenant b:max=70"), 3.0);
}

TEST(ComputeShare, TenAndNinety) {
  ExpectTargets(Bench("--seconds 2.5 --tenant a:max=10 --tenant b:max=90"), 3.0);
}

TEST(ComputeShare, FourCappedTenants) {
  ExpectTargets(Bench("--seconds 2.5 --tenant a:max=10 --tenant b:max=20 --tenant c:max=30 "
                      "--tenant d:max=40"),
                3.0);
}

TEST(ComputeShare, ACappedTenantAloneStaysAtItsCap) {
  ExpectTargets(Bench("--seconds 2 --tenant a:max=40"), 3.0);
}

TEST(ComputeShare, ElasticUsesIdleTimeAndGivesItBackWithinASecond) {
  json r = Bench("--seconds 3 --tenant a:guarantee=30 --tenant b:guarantee=70,start=1s");
  const json& a = Tenant(r, "a");
  ASSERT_EQ(a["per_second"].size(), 3u);
  EXPECT_GE(a["per_second"][0].get<double>(), 95.0) << a.dump();  // alone
  EXPECT_NEAR(a["per_second"][2].get<double>(), 30.0, 3.0) << a.dump();
  EXPECT_NEAR(Tenant(r, "b")["per_second"][2].get<double>(), 70.0, 3.0);
}

TEST(ComputeShare, HighPriorityWaitsOneSliceAtMostAndKeepsItsThroughput) {
  // hi: 1 ms kernels with 1 ms of host work in between (a latency-bound service); lo saturates.
  json r = Bench(
      "--seconds 2 --baseline --baseline-seconds 2 --tenant hi:priority=high,gap=1ms "
      "--tenant lo:priority=low");
  const json& hi = Tenant(r, "hi");
  SCOPED_TRACE(hi.dump());
  EXPECT_LE(hi["wait_p99_ms"].get<double>(), 5.0 + 1.0);  // one time slice + one kernel
  EXPECT_GE(hi["throughput_ratio"].get<double>(), 0.95);
  // lo fills the gaps that end before hi is back.
  double idle = 100.0 - hi["share"].get<double>();
  EXPECT_GE(Tenant(r, "lo")["share"].get<double>(), 0.5 * idle) << Tenant(r, "lo").dump();
}

TEST(ComputeShare, GuaranteesHoldWithOneKernelInFlight) {
  // Each tenant launches one kernel and waits for it: the arbiter must not take a tenant's turn
  // in the moment between its kernels.
  json r = Bench(
      "--seconds 2.5 --tenant a:guarantee=30,max=100,depth=1 --tenant b:guarantee=70,max=100,"
      "depth=1");
  double a = Tenant(r, "a")["share"].get<double>(), b = Tenant(r, "b")["share"].get<double>();
  SCOPED_TRACE(r.dump());
  EXPECT_NEAR(100.0 * a / (a + b), 30.0, 3.0);
  EXPECT_GE(a + b, 90.0);  // idle only for the tenants' own launch latency
}

TEST(ComputeShare, HighPriorityAfterIdleWaitsForTheQueuedSliceOnly) {
  // hi asks every 50 ms (much longer than its hold of two time slices): lo runs in between and
  // hi preempts it at its next kernel boundary.
  json r = Bench("--seconds 2 --tenant hi:priority=high,gap=50ms --tenant lo:priority=low");
  EXPECT_LE(Tenant(r, "hi")["wait_p99_ms"].get<double>(), 5.0 + 1.0);
  EXPECT_GE(Tenant(r, "lo")["share"].get<double>(), 70.0);
}

// Each launch path is held like a plain launch: a tenant capped at 25% alone stays there.
void ExpectHeld(const std::string& launch) {
  json r = Bench("--seconds 2 --tenant t:max=25,launch=" + launch);
  const json& t = Tenant(r, "t");
  SCOPED_TRACE(t.dump());
  EXPECT_NEAR(t["share"].get<double>(), 25.0, 3.0);
  EXPECT_NEAR(t["share_timeline"].get<double>(), 25.0, 3.0);
}

TEST(ComputeShare, GraphLaunchesAreHeld) { ExpectHeld("graph"); }
TEST(ComputeShare, CooperativeLaunchesAreHeld) { ExpectHeld("coop"); }
TEST(ComputeShare, ExLaunchesAreHeld) { ExpectHeld("ex"); }
TEST(ComputeShare, PerThreadStreamLaunchesAreHeld) { ExpectHeld("ptsz"); }

TEST(ComputeShare, SpareTimeIsSharedByWeight) {
  ExpectTargets(Bench("--seconds 2.5 --tenant a:elastic --tenant b:elastic,weight=3"), 3.0);
}

TEST(ComputeShare, LaunchThenSyncTenantsShareByWeight) {
  // Each launches 4 kernels of 1 ms, waits for them (cuStreamSynchronize), spends 1 ms on the
  // host, and again: the weights split the GPU 1:3 while it stays busy. (Measured on a 2-core
  // host, idle and with both cores busy: a/(a+b) 25.0-25.3%, a+b 95-98%; without the arbiter's
  // claims for such tenants the split was 50% and a+b 89%.)
  // The split expected is the bench's work-conserving target: 1:3 while both ask, and a takes
  // what b leaves in its host gaps (b's demand is measured below 75%, so a's target is above 25).
  json r = Bench(
      "--seconds 3 --tenant a:elastic,sync=4,gap=1ms --tenant b:elastic,weight=3,sync=4,gap=1ms");
  double a = Tenant(r, "a")["share"].get<double>(), b = Tenant(r, "b")["share"].get<double>();
  double ta = Tenant(r, "a")["target"].get<double>(), tb = Tenant(r, "b")["target"].get<double>();
  SCOPED_TRACE(r.dump());
  EXPECT_NEAR(ta / (ta + tb), 0.25, 0.05);
  EXPECT_NEAR(100.0 * a / (a + b), 100.0 * ta / (ta + tb), 4.0);
  EXPECT_GE(a + b, 85.0);
}

TEST(ComputeShare, BadTenantsAreRefusedWithTheirName) {
  testing::CommandResult r = testing::RunCommand(Vgpu() + " bench share --sim --tenant a:max=130");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--tenant a: --cores: \"130\""), std::string::npos) << r.err;
  r = testing::RunCommand(Vgpu() + " bench share --sim --tenant a:speed=3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown key"), std::string::npos) << r.err;
  r = testing::RunCommand(Vgpu() + " bench share --sim --tenant b:launch=warp");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("launch: \"warp\""), std::string::npos) << r.err;
}

// vgpu run's compute flags reach the gate: a tenant started by `vgpu run --cores 25` gets 25%.
TEST(ComputeShare, VgpuRunCoresLimitsTheCommand) {
  testing::TempDir tmp("vgpu-compute-run");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string dir = tmp.path();
  std::string env = "VGPU_STATE_DIR=" + dir + "/state VGPU_SIMGPU_STATE=" + dir +
                    "/simgpu.state VGPU_SIMGPU_LOG_LEVEL=1 LIBCUDA_LOG_LEVEL=1 ";
  std::string out = dir + "/kernels";
  testing::CommandResult r = testing::RunCommand(
      testing::SanitizerCommandPrefix() + env + VGPU_BIN +
      " run --sim --cores 25 --priority low -- " + VGPU_BIN +
      " bench tenant --start-now --kernel-ns 1000000 --stop-ns 2000000000 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  uint64_t call = 0, start = 0, end = 0, first = 0, last = 0, busy = 0;
  while (in >> call >> start >> end) {
    if (first == 0) first = start;
    // The first half second converges; count the rest.
    if (start >= first + 500000000ULL) busy += end - start;
    last = end;
  }
  ASSERT_GT(last, first + 1500000000ULL);
  double share =
      100.0 * static_cast<double>(busy) / static_cast<double>(last - first - 500000000ULL);
  EXPECT_NEAR(share, 25.0, 3.0);
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

// The tenant's share of GPU time over [from, to) from its kernel records (call start end).
double ShareIn(const std::vector<std::array<uint64_t, 3>>& kernels, uint64_t from, uint64_t to) {
  uint64_t busy = 0;
  for (const auto& k : kernels) {
    uint64_t s = std::max(k[1], from), e = std::min(k[2], to);
    if (e > s) busy += e - s;
  }
  return 100.0 * static_cast<double>(busy) / static_cast<double>(to - from);
}

// Live resize: a tenant started with `vgpu run --cores 30` is resized to 60 while it runs
// (`vgpu resize`, from another process); its share is 30 before, and 60 within a second after.
TEST(ComputeShare, VgpuResizeChangesARunningTenantsShareWithinASecond) {
  testing::TempDir tmp("vgpu-compute-resize");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string dir = tmp.path();
  std::string env = "VGPU_STATE_DIR=" + dir + "/state VGPU_SIMGPU_STATE=" + dir +
                    "/simgpu.state VGPU_SIMGPU_LOG_LEVEL=1 LIBCUDA_LOG_LEVEL=1 ";
  std::string out = dir + "/kernels";
  testing::CommandResult run;
  std::thread tenant([&] {
    run = testing::RunCommand(testing::SanitizerCommandPrefix() + env + VGPU_BIN +
                              " run --sim --name grow --cores 30 --priority low -- " + VGPU_BIN +
                              " bench tenant --start-now --kernel-ns 1000000 --stop-ns 3500000000"
                              " --out " +
                              out);
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const uint64_t resized_at = MonotonicNs();
  testing::CommandResult r = testing::RunCommand(testing::SanitizerCommandPrefix() + env +
                                                 VGPU_BIN + " resize --slice grow --cores 60");
  tenant.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cores 30% -> 60%"), std::string::npos) << r.out;
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::ifstream in(out);
  std::vector<std::array<uint64_t, 3>> kernels;
  uint64_t call = 0, start = 0, end = 0;
  while (in >> call >> start >> end) kernels.push_back({call, start, end});
  ASSERT_FALSE(kernels.empty());
  const uint64_t first = kernels.front()[1], last = kernels.back()[2];
  const uint64_t kS = 1000000000ULL;
  ASSERT_LT(first + kS / 2, resized_at) << "the tenant started too late to measure before";
  ASSERT_GT(last, resized_at + 3 * kS / 2) << "the tenant ended too early";
  const double before = ShareIn(kernels, first + kS / 2, resized_at);
  // Within one second: the share over the second half of the first second after the resize,
  // and over the half second after it.
  const double after = ShareIn(kernels, resized_at + kS / 2, resized_at + kS);
  const double later = ShareIn(kernels, resized_at + kS, resized_at + 3 * kS / 2);
  RecordProperty("share_before", std::to_string(before));
  RecordProperty("share_after", std::to_string(after));
  RecordProperty("share_later", std::to_string(later));
  EXPECT_NEAR(before, 30.0, 3.0);
  EXPECT_NEAR(after, 60.0, 4.0);
  EXPECT_NEAR(later, 60.0, 4.0);
  // When it got there: the first 100 ms window after the resize at 60 +- 6.
  double reached_ms = -1;
  for (uint64_t t = resized_at; t + kS / 10 <= resized_at + kS; t += kS / 20) {
    if (std::abs(ShareIn(kernels, t, t + kS / 10) - 60.0) <= 6.0) {
      reached_ms = static_cast<double>(t + kS / 10 - resized_at) / 1e6;
      break;
    }
  }
  RecordProperty("reached_ms", std::to_string(reached_ms));
  EXPECT_GE(reached_ms, 0.0);
  EXPECT_LE(reached_ms, 1000.0);
}

TEST(ComputeShare, VgpuRunComputeFlagsAreValidated) {
  std::string run = Vgpu() + " run ";
  testing::CommandResult r = testing::RunCommand(run + "--guarantee 50 --cores 40 -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--guarantee: \"50\""), std::string::npos) << r.err;
  r = testing::RunCommand(run + "--weight 0 -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--weight"), std::string::npos) << r.err;
  r = testing::RunCommand(run + "--time-slice 10s -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--time-slice"), std::string::npos) << r.err;
  r = testing::RunCommand(run + "--priority urgent -- true");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("realtime, high, normal, low or idle"), std::string::npos) << r.err;
  // The limits file the command sees.
  r = testing::RunCommand(run +
                          "--cores 60 --guarantee 20 --weight 3 --priority high --time-slice 2ms "
                          "-- sh -c 'cat $VGPU_LIMITS_FILE'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* line : {"cores=60\n", "guarantee=20\n", "mode=elastic\n", "weight=3\n",
                           "priority=high\n", "time_slice=2ms\n", "arbiter_dir="}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " in " << r.out;
  }
}

// A killed tenant never holds the GPU: a high-priority tenant that saturates the GPU is SIGKILLed;
// the low-priority tenant it held gets the whole GPU within a few milliseconds.
TEST(ComputeShare, AKilledTenantReleasesTheGpu) {
  testing::TempDir tmp("vgpu-compute-kill");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string dir = tmp.path();
  std::string v = VGPU_BIN;
  std::string tenant = " bench tenant --start-now --kernel-ns 1000000 --out ";
  std::string script = "export VGPU_STATE_DIR=" + dir + "/state VGPU_SIMGPU_STATE=" + dir +
                       "/simgpu.state VGPU_SIMGPU_LOG_LEVEL=1 LIBCUDA_LOG_LEVEL=1; " + Vgpu() +
                       " run --sim --priority high -- " + v + tenant + dir +
                       "/hi --stop-ns 5000000000 & HI=$!; " + "sleep 0.3; " + Vgpu() +
                       " run --sim --priority low -- " + v + tenant + dir +
                       "/lo --stop-ns 2000000000 & LO=$!; sleep 1; "
                       "python3 -c 'import time; print(time.monotonic_ns())' > " +
                       dir + "/killed; " + "kill -9 $(pgrep -P $HI); wait $LO; wait $HI; exit 0";
  testing::CommandResult r = testing::RunCommand(script);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  uint64_t killed = 0;
  std::ifstream(dir + "/killed") >> killed;
  ASSERT_GT(killed, 0u);
  std::ifstream in(dir + "/lo");
  uint64_t call = 0, start = 0, end = 0, first = 0, last = 0, busy = 0, before = 0;
  while (in >> call >> start >> end) {
    if (start < killed) {
      before += end - start;
      continue;
    }
    if (first == 0) first = start;
    busy += end - start;
    last = end;
  }
  ASSERT_GT(first, 0u) << "the low tenant never ran after the kill";
  EXPECT_LT(before, 20000000u);           // held while the high tenant worked
  EXPECT_LT(first - killed, 200000000u);  // running again within 0.2 s of the kill
  EXPECT_GE(100.0 * static_cast<double>(busy) / static_cast<double>(last - first), 95.0);
}

// vgpu top shows each slice's configured and achieved share while tenants run.
TEST(ComputeShare, TopShowsConfiguredAndAchievedShares) {
  testing::TempDir tmp("vgpu-compute-top");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string dir = tmp.path();
  std::string bench = Vgpu() + " bench share --sim --seconds 3 --state-dir " + dir +
                      " --tenant a:max=30 --tenant b:max=70 > /dev/null 2>&1 &";
  ASSERT_EQ(std::system(bench.c_str()), 0);
  json top;
  for (int i = 0; i < 40; ++i) {
    usleep(100 * 1000);
    testing::CommandResult r =
        testing::RunCommand(Vgpu() + " top --once --json " + "--state-dir " + dir);
    if (r.exit_code != 0) continue;
    json j = json::parse(r.out, nullptr, false);
    if (j.is_discarded() || j["arbiters"].empty() || j["arbiters"][0]["slices"].size() != 2) {
      continue;
    }
    top = j;
    if (i >= 20) break;  // let the shares settle: about 2 s into the run
  }
  ASSERT_FALSE(top.is_null()) << "no arbiter seen";
  for (const json& s : top["arbiters"][0]["slices"]) {
    const json& c = s["compute"];
    SCOPED_TRACE(s.dump());
    EXPECT_EQ(c["mode"], "capped");
    EXPECT_EQ(c["priority"], "normal");
    EXPECT_NEAR(c["achieved_pct"].get<double>(), c["max"].get<double>(), 5.0);
  }
  // The slices themselves carry their compute view per device.
  int with_compute = 0;
  for (const json& s : top["slices"]) {
    if (!s["devices"].empty() && s["devices"][0]["compute"].is_object()) ++with_compute;
  }
  EXPECT_EQ(with_compute, 2);
  sleep(3);  // the bench ends before its state directory goes
}

}  // namespace
}  // namespace vgpu
