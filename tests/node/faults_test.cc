// Faults on the node daemon, driven by a kubelet emulator (real gRPC) over a scriptable GPU
// backend: a fatal XID quarantines its GPU (kubelet sees it Unhealthy within 6 s) and the GPU
// comes back after reset and probation without a restart; application-class XIDs never take the
// GPU and count only against the tenant whose process they name; tenants on other GPUs see
// nothing; a tenant driven by scripted signals (the counters libvgpu.so keeps in its region)
// goes through warn, limit, pause and terminate at its thresholds and back after quiet periods.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "common/clock.h"
#include "device/fake_backend.h"
#include "kubelet_emulator.h"
#include "node/cluster/fake_cluster.h"
#include "node/cluster/test_pods.h"
#include "node/daemon.h"
#include "node/rules/online_analysis.h"
#include "node/slice_control.h"
#include "shm/proc_identity.h"
#include "shm/region.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "support/wait_for.h"
#include "test_daemon.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using faults::TenantLevel;
using vgpu::testing::KubeletEmulator;

constexpr int kGpus = 3;
constexpr int kUnits = 4;

class FaultsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-ft-" + std::to_string(getpid());
    fs::remove_all(root_);
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
    auto backend = std::make_unique<device::FakeBackend>();
    backend->AddDefaultDevices(kGpus);
    fake_ = backend.get();
    for (int i = 0; i < kGpus; ++i) uuids_.push_back(fake_->Discover()->at(i).uuid);
    DaemonOptions o = testing::TestDaemonOptions(root_, "gpu-node-1", kUnits);
    o.health.gpu.probation_quiet_s = 1;
    o.health.gpu.reset_retry_s = 1;
    o.health.kernel_deadline_ms = 1000;
    o.sample_interval_ms = 100;
    o.tenant_levels.quiet_s = 1;
    o.rules_file = rules_file_;
    o.analyze = analyze_;
    o.analysis_clock = &analysis_clock_;
    daemon_ = std::make_unique<Daemon>(o, std::move(backend), &cluster_);
    ASSERT_TRUE(daemon_->Start().ok());
    ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 10'000));
    ASSERT_TRUE(
        kubelet_->WaitForDevices([](const auto& d) { return d.size() == kGpus * kUnits; }, 5000));
  }

  void TearDown() override {
    for (pid_t p : children_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    daemon_.reset();
    kubelet_.reset();
    fs::remove_all(root_);
  }

  // Health kubelet sees for GPU `gpu` in `devices`: every unit `want`.
  bool GpuIs(const std::vector<v1beta1::Device>& devices, int gpu, const std::string& want) const {
    int n = 0;
    for (const auto& d : devices) {
      if (d.id().rfind(uuids_[gpu] + "-", 0) == 0) {
        if (d.health() != want) return false;
        ++n;
      }
    }
    return n == kUnits;
  }

  // A pod with one container on GPU `gpu`; returns its slice, with a live process (a child
  // that sleeps) in its region's slots as libvgpu.so would put it there.
  SliceRecord Tenant(const std::string& name, int gpu, pid_t* child, uint64_t memory_mib = 1024) {
    cluster_.UpsertPod(testing::PodWith(name, "gpu-node-1", {{uuids_[gpu], memory_mib, 50}}, 1));
    std::vector<std::string> available;
    for (const auto& d : kubelet_->devices()) {
      if (d.id().rfind(uuids_[gpu] + "-", 0) == 0 && !used_.count(d.id())) {
        available.push_back(d.id());
      }
    }
    std::vector<std::string> units;
    EXPECT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok());
    v1beta1::ContainerAllocateResponse r;
    EXPECT_TRUE(kubelet_->Allocate(units, &r).ok());
    for (const auto& u : units) used_.insert(u);
    SliceRecord found;
    for (const SliceRecord& s : daemon_->slices()->List()) {
      if (s.spec.pod_name == name) found = s;
    }
    EXPECT_FALSE(found.name.empty());
    pid_t pid = fork();
    if (pid == 0) {
      for (;;) pause();
    }
    children_.push_back(pid);
    *child = pid;
    shm::Mapping m;
    EXPECT_EQ(shm::Mapping::OpenExisting(found.region_path.c_str(), true, &m),
              shm::RegionError::kOk);
    shm::ProcIdentity id;
    id.pid = pid;
    for (int i = 0; i < 100 && id.start_time == 0; ++i) id.start_time = shm::ReadStartTime(pid);
    struct stat st;
    stat("/proc/self/ns/pid", &st);
    id.pid_ns = st.st_ino;
    int slot = -1;
    EXPECT_EQ(shm::ClaimSlot(m.region(), id, &slot), shm::RegionError::kOk);
    return found;
  }

  // What libvgpu.so does when a launch fails: count it in the region.
  static void FailLaunches(const SliceRecord& s, int n) {
    shm::Mapping m;
    ASSERT_EQ(shm::Mapping::OpenExisting(s.region_path.c_str(), true, &m), shm::RegionError::kOk);
    for (int i = 0; i < n; ++i) {
      std::atomic_ref<uint64_t>(m.region()->header.control.launch_failures).fetch_add(1);
    }
  }

  faults::GpuState StateOf(int gpu) const {
    for (const auto& h : daemon_->state()->health().Snapshot()) {
      if (h.uuid == uuids_[gpu] && h.instance.empty()) return h.state;
    }
    return faults::GpuState::kHealthy;
  }

  int StrikesOf(const std::string& slice) const {
    for (const auto& t : daemon_->Tenants()) {
      if (t.slice == slice) return t.strikes;
    }
    return 0;
  }

  TenantLevel LevelOf(const std::string& slice) const {
    for (const auto& t : daemon_->Tenants()) {
      if (t.slice == slice) return t.level;
    }
    return TenantLevel::kNormal;
  }

  // Whether an Event with `reason` was posted (waiting up to 2 s: kubelet may hear of a change
  // before the Event about it is posted).
  bool HasEvent(const std::string& reason) const {
    return vgpu::testing::WaitFor(
        [&] {
          auto events = cluster_.Events();
          return std::any_of(events.begin(), events.end(), [&](const std::string& e) {
            return e.find(" " + reason + ":") != std::string::npos;
          });
        },
        std::chrono::milliseconds(2000), std::chrono::milliseconds(20));
  }

  std::string root_;
  bool analyze_ = false;  // --analyze, on analysis_clock_ (60 s steps)
  SimulatedClock analysis_clock_{0};
  std::unique_ptr<KubeletEmulator> kubelet_;
  device::FakeBackend* fake_ = nullptr;
  std::vector<std::string> uuids_;
  FakeCluster cluster_;
  std::unique_ptr<Daemon> daemon_;
  std::string rules_file_;  // --rules (empty: none)
  std::set<std::string> used_;
  std::vector<pid_t> children_;
};

TEST_F(FaultsTest, AFatalXidQuarantinesItsGpuWhichComesBackWithoutARestart) {
  pid_t pa = 0, pb = 0;
  SliceRecord a = Tenant("a", 0, &pa);
  SliceRecord b = Tenant("b", 1, &pb);
  const int registrations = kubelet_->registrations();
  // The tenant's process holds GPU 0.
  device::DeviceSample busy;
  busy.processes.push_back({static_cast<uint32_t>(pa), 1 << 20, std::nullopt});
  fake_->SetSample(0, busy);
  daemon_->SampleNow();
  auto start = std::chrono::steady_clock::now();
  fake_->InjectXid(0, 109);  // CTXSW_TIMEOUT: reset; NVIDIA's plugin ignores it
  ASSERT_TRUE(
      kubelet_->WaitForDevices([&](const auto& d) { return GpuIs(d, 0, "Unhealthy"); }, 6000));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 6.0);
  EXPECT_TRUE(GpuIs(kubelet_->devices(), 1, "Healthy"));
  EXPECT_TRUE(GpuIs(kubelet_->devices(), 2, "Healthy"));
  // Reset pending: the tenant's process holds the GPU, so no reset yet.
  daemon_->SampleNow();
  EXPECT_EQ(fake_->resets(), 0);
  EXPECT_FALSE(GpuIs(kubelet_->devices(), 0, "Healthy"));
  fake_->SetSample(0, device::DeviceSample{});  // the process is gone
  // Reset, probe, a quiet second of probation: healthy again, same registration.
  ASSERT_TRUE(
      kubelet_->WaitForDevices([&](const auto& d) { return GpuIs(d, 0, "Healthy"); }, 10'000));
  EXPECT_EQ(fake_->resets(), 1);
  EXPECT_EQ(kubelet_->registrations(), registrations);
  EXPECT_TRUE(HasEvent("GpuQuarantined"));
  EXPECT_TRUE(HasEvent("GpuProbation"));
  EXPECT_TRUE(HasEvent("GpuHealthy"));
  // Tenants saw nothing.
  EXPECT_EQ(LevelOf(a.name), TenantLevel::kNormal);
  EXPECT_EQ(LevelOf(b.name), TenantLevel::kNormal);
  std::printf("fatal XID 109 -> kubelet sees the GPU Unhealthy after %.2f s\n", seconds);
}

TEST_F(FaultsTest, ApplicationXidsCountOnlyAgainstTheTenantTheyName) {
  pid_t pa = 0, pb = 0;
  SliceRecord a = Tenant("a", 0, &pa);
  SliceRecord b = Tenant("b", 1, &pb);
  for (uint64_t xid : {13, 31, 43, 45, 68, 69, 94}) {
    device::HealthEvent e;
    e.uuid = uuids_[0];
    e.kind = device::HealthEvent::Kind::kXid;
    e.code = xid;
    e.pid = static_cast<uint32_t>(pa);
    fake_->InjectEvent(e);
  }
  // Seven XIDs x weight 2 = 14 strikes: all levels up to terminate, for tenant a alone.
  vgpu::testing::WaitFor([&] { return LevelOf(a.name) == TenantLevel::kTerminate; },
                         std::chrono::milliseconds(2500), std::chrono::milliseconds(50));
  EXPECT_EQ(LevelOf(a.name), TenantLevel::kTerminate);
  EXPECT_EQ(LevelOf(b.name), TenantLevel::kNormal);
  for (int g = 0; g < kGpus; ++g) EXPECT_TRUE(GpuIs(kubelet_->devices(), g, "Healthy")) << g;
  for (const auto& h : daemon_->state()->health().Snapshot()) {
    EXPECT_EQ(h.unhealthy_transitions, 0) << h.uuid;
  }
  // The daemon ended a's process, not b's.
  int status = 0;
  pid_t done = 0;
  vgpu::testing::WaitFor(
      [&] {
        done = waitpid(pa, &status, WNOHANG);
        return done != 0;
      },
      std::chrono::milliseconds(2000), std::chrono::milliseconds(20));
  ASSERT_EQ(done, pa);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(waitpid(pb, &status, WNOHANG), 0);  // still running
}

TEST_F(FaultsTest, AKernelPastTheDeadlineMakesItsGpuSuspectAndChargesOnlyItsTenant) {
  pid_t pa = 0, pb = 0;
  SliceRecord a = Tenant("a", 0, &pa);
  SliceRecord b = Tenant("b", 1, &pb);
  device::DeviceSample s;
  s.processes.push_back({static_cast<uint32_t>(pa), 1 << 20, std::nullopt});
  // Under the deadline (1 s): nothing.
  s.running_kernel = device::DeviceSample::RunningKernel{static_cast<uint32_t>(pa), 900'000'000};
  fake_->SetSample(0, s);
  daemon_->SampleNow();
  EXPECT_EQ(StateOf(0), faults::GpuState::kHealthy);
  EXPECT_EQ(StrikesOf(a.name), 0);
  // Past it: the GPU is suspect (still schedulable) and the kernel's tenant has one signal
  // (weight 2: warn), however many rounds it keeps running.
  s.running_kernel->running_ns = 1'500'000'000;
  fake_->SetSample(0, s);
  daemon_->SampleNow();
  EXPECT_EQ(StateOf(0), faults::GpuState::kSuspect);
  EXPECT_EQ(StrikesOf(a.name), 2);
  EXPECT_EQ(LevelOf(a.name), TenantLevel::kWarn);
  s.running_kernel->running_ns = 2'500'000'000;
  fake_->SetSample(0, s);
  daemon_->SampleNow();
  daemon_->SampleNow();
  EXPECT_EQ(StrikesOf(a.name), 2);
  EXPECT_TRUE(HasEvent("GpuSuspect"));
  // It ends; a second kernel runs past the deadline: a second signal (limit at 4 strikes).
  s.running_kernel.reset();
  fake_->SetSample(0, s);
  daemon_->SampleNow();
  s.running_kernel = device::DeviceSample::RunningKernel{static_cast<uint32_t>(pa), 1'100'000'000};
  fake_->SetSample(0, s);
  daemon_->SampleNow();
  EXPECT_EQ(StrikesOf(a.name), 4);
  EXPECT_EQ(LevelOf(a.name), TenantLevel::kLimit);
  // The other GPU and its tenant saw nothing; kubelet still places work on every GPU.
  EXPECT_EQ(StateOf(1), faults::GpuState::kHealthy);
  EXPECT_EQ(LevelOf(b.name), TenantLevel::kNormal);
  for (int g = 0; g < kGpus; ++g) EXPECT_TRUE(GpuIs(kubelet_->devices(), g, "Healthy")) << g;
  const std::string metrics = daemon_->Metrics();
  EXPECT_NE(metrics.find("signal=\"stuck-kernel\""), std::string::npos);
}

TEST_F(FaultsTest, AFailingProbeSendsTheGpuBackToQuarantine) {
  fake_->FailProbes(0, "the probe's kernel did not complete within 5000 ms");
  fake_->InjectXid(0, 109);  // reset class; no process holds the GPU: reset, then the probe
  ASSERT_TRUE(
      kubelet_->WaitForDevices([&](const auto& d) { return GpuIs(d, 0, "Unhealthy"); }, 6000));
  vgpu::testing::WaitFor([&] { return fake_->probes() != 0; }, std::chrono::milliseconds(2000),
                         std::chrono::milliseconds(20));
  ASSERT_GE(fake_->probes(), 1);
  EXPECT_EQ(fake_->resets(), 1);
  // Back in quarantine (reset pending, the next reset a second later), never healthy between.
  std::string reason;
  for (const auto& h : daemon_->state()->health().Snapshot()) {
    if (h.uuid == uuids_[0]) reason = h.reason;
  }
  EXPECT_NE(reason.find("probe failed: the probe's kernel did not complete"), std::string::npos)
      << reason;
  EXPECT_FALSE(GpuIs(kubelet_->devices(), 0, "Healthy"));
  EXPECT_NE(StateOf(0), faults::GpuState::kHealthy);
  // The GPU is repaired: the retried reset's probe passes, and after probation it is healthy.
  fake_->FailProbes(0, "");
  ASSERT_TRUE(
      kubelet_->WaitForDevices([&](const auto& d) { return GpuIs(d, 0, "Healthy"); }, 10'000));
  EXPECT_EQ(fake_->resets(), 2);
  EXPECT_GE(fake_->probes(), 2);
  EXPECT_TRUE(GpuIs(kubelet_->devices(), 1, "Healthy"));
}

TEST_F(FaultsTest, ScriptedSignalsWalkATenantThroughTheLevelsAndBack) {
  pid_t pa = 0, pb = 0;
  SliceRecord a = Tenant("a", 0, &pa);
  SliceRecord b = Tenant("b", 1, &pb);
  daemon_->SampleNow();  // the counters' baseline
  // Thresholds (defaults): warn 1, limit 3, pause 6, terminate 10 strikes; 1 per failed launch.
  const struct {
    int failures;  // total so far
    TenantLevel level;
  } steps[] = {{1, TenantLevel::kWarn}, {3, TenantLevel::kLimit}, {6, TenantLevel::kPause}};
  int given = 0;
  for (const auto& step : steps) {
    FailLaunches(a, step.failures - 1 - given);
    given = step.failures - 1;
    daemon_->SampleNow();
    EXPECT_EQ(LevelOf(a.name), static_cast<TenantLevel>(static_cast<int>(step.level) - 1))
        << "one strike short of " << faults::TenantLevelName(step.level);
    FailLaunches(a, 1);
    ++given;
    daemon_->SampleNow();
    EXPECT_EQ(LevelOf(a.name), step.level) << step.failures;
  }
  auto view = ReadSliceControl(a.region_path);
  ASSERT_TRUE(view.has_value());
  EXPECT_GT(view->pause_until_ns, static_cast<uint64_t>(MonotonicClock::Instance().NowNanos()));
  EXPECT_EQ(view->share_cap_pct, 25u);
  EXPECT_EQ(view->level, 3u);
  EXPECT_TRUE(HasEvent("TenantWarned"));
  EXPECT_TRUE(HasEvent("TenantLimited"));
  // b is untouched.
  auto vb = ReadSliceControl(b.region_path);
  ASSERT_TRUE(vb.has_value());
  EXPECT_EQ(vb->pause_until_ns, 0u);
  EXPECT_EQ(LevelOf(b.name), TenantLevel::kNormal);
  // Back, one level per quiet second: pause -> limit -> warn -> normal.
  for (int i = 0; i < 100 && LevelOf(a.name) != TenantLevel::kNormal; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    daemon_->SampleNow();
  }
  EXPECT_EQ(LevelOf(a.name), TenantLevel::kNormal);
  view = ReadSliceControl(a.region_path);
  EXPECT_EQ(view->pause_until_ns, 0u);
  EXPECT_EQ(view->share_cap_pct, 0u);
  // And up to terminate: its process ends.
  FailLaunches(a, 10);
  daemon_->SampleNow();
  EXPECT_EQ(LevelOf(a.name), TenantLevel::kTerminate);
  int status = 0;
  EXPECT_EQ(waitpid(pa, &status, 0), pa);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_TRUE(HasEvent("TenantTerminated"));
  EXPECT_EQ(waitpid(pb, &status, WNOHANG), 0);
  // /metrics shows the levels.
  std::string metrics = daemon_->Metrics();
  EXPECT_NE(metrics.find("vgpu_tenant_quarantine_level{node=\"gpu-node-1\",slice=\"" + a.name),
            std::string::npos);
  EXPECT_NE(metrics.find("vgpu_gpu_health_state{"), std::string::npos);
}

// The daemon with --rules: a rule over the GPUs' XID counts, evaluated every 100 ms, cordons the
// GPU that reported one (kubelet sees its units unhealthy) and says so in /metrics.
class RulesFaultsTest : public FaultsTest {
 protected:
  void SetUp() override {
    rules_file_ = "/tmp/vgpu-ft-rules-" + std::to_string(getpid()) + ".yaml";
    std::ofstream(rules_file_) << "evaluation_interval: 100ms\nrules:\n  - name: xid-burst\n"
                                  "    scope: gpu\n    when:\n"
                                  "      - {signal: xid_errors, above: 0.5}\n"
                                  "    clear_for: 10m\n    action: quarantine_gpu\n";
    FaultsTest::SetUp();
  }
  void TearDown() override {
    FaultsTest::TearDown();
    std::remove(rules_file_.c_str());
  }
};

TEST_F(RulesFaultsTest, AnXidRuleCordonsTheGpuThatReportedIt) {
  daemon_->RulesNow();
  fake_->InjectXid(1, 13);  // an application XID of no process: counted, not fatal
  ASSERT_TRUE(
      kubelet_->WaitForDevices([&](const auto& d) { return GpuIs(d, 1, "Unhealthy"); }, 5000));
  EXPECT_TRUE(GpuIs(kubelet_->devices(), 0, "Healthy"));
  EXPECT_TRUE(GpuIs(kubelet_->devices(), 2, "Healthy"));
  EXPECT_TRUE(daemon_->state()->Cordoned(uuids_[1]));
  EXPECT_TRUE(HasEvent("VgpuGpuCordoned"));
  const std::string metrics = daemon_->Metrics();
  EXPECT_NE(metrics.find("vgpu_rule_firing{rule=\"xid-burst\",target=\"gpu1\"} 1"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("vgpu_rule_actions_total{rule=\"xid-burst\",action=\"quarantine_gpu\","
                         "outcome=\"applied\"} 1"),
            std::string::npos);
}

class AnalyzeFaultsTest : public FaultsTest {
 protected:
  void SetUp() override {
    analyze_ = true;
    FaultsTest::SetUp();
  }
};

// `vgpu node --analyze` (no rule file: a rule engine without rules feeds the analyses): a tenant
// whose memory leaks 1 GiB/h from slot 120 of the 60 s grid is reported once, with a Warning
// Event, on /metrics with the leak's start; GPU 0's utilization (the device's own, 50%) is
// forecast; the slice gets a right-size recommendation.
TEST_F(AnalyzeFaultsTest, ALeakIsReportedOnceWithAnEventAndTheMetricsShowTheAnalyses) {
  pid_t child = 0;
  SliceRecord leaky = Tenant("leaky", 0, &child, 16 * 1024);
  device::DeviceSample busy;
  busy.sm_utilization = 0.5;
  fake_->SetSample(0, busy);
  daemon_->SampleNow();
  shm::Mapping m;
  ASSERT_EQ(shm::Mapping::OpenExisting(leaky.region_path.c_str(), true, &m), shm::RegionError::kOk);
  const shm::ProcIdentity self = shm::CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(shm::ClaimSlot(m.region(), self, &slot), shm::RegionError::kOk);
  const uint64_t kGiB = 1ULL << 30;
  ASSERT_EQ(shm::Charge(m.region(), slot, 0, 4 * kGiB, shm::kNoLimit, self), shm::RegionError::kOk);
  const int64_t step = 60'000'000'000;
  const int lag = static_cast<int>(
      LagSlots(analyze::AnomalyKind::kLeak, analyze::MemoryOptions(60)));  // 180 slots
  int reported_at = -1;
  for (int k = 0; k <= 120 + lag + 40; ++k) {
    analysis_clock_.AdvanceTo(k * step);
    if (k >= 120) {
      ASSERT_EQ(shm::Charge(m.region(), slot, 0, kGiB / 60, shm::kNoLimit, self),
                shm::RegionError::kOk);
    }
    daemon_->RulesNow();
    if (reported_at < 0 && daemon_->Metrics().find("kind=\"leak\"") != std::string::npos) {
      reported_at = k;
    }
  }
  // Dated at slot 119 (the last sample before the first rise); still rising, it is reported the
  // lag of a leak after its start and at most one detection period (30 slots) later.
  EXPECT_GE(reported_at, 119 + lag);
  EXPECT_LE(reported_at, 119 + lag + 30 + 2);
  const std::string metrics = daemon_->Metrics();
  const std::string target = "gpu0/" + leaky.name;
  EXPECT_NE(metrics.find("vgpu_anomalies_total{node=\"gpu-node-1\",target=\"" + target +
                         "\",kind=\"leak\"} 1\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("vgpu_anomaly_last_start_timestamp_seconds{node=\"gpu-node-1\",target=\"" +
                         target + "\",kind=\"leak\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("vgpu_forecast_utilization{node=\"gpu-node-1\",gpu=\"0\","
                         "horizon_seconds=\"300\"} 50\n"),
            std::string::npos)
      << metrics;
  EXPECT_NE(metrics.find("vgpu_rightsize_memory_bytes{node=\"gpu-node-1\",gpu=\"0\",slice=\"" +
                         leaky.name + "\"}"),
            std::string::npos);
  EXPECT_NE(metrics.find("vgpu_rightsize_exceed_risk_ratio{"), std::string::npos);
  EXPECT_EQ(metrics.find("kind=\"level_shift\""), std::string::npos) << "a flat 50% has no shift";
  int events = 0;
  for (const std::string& e : cluster_.Events()) {
    if (e.find(" VgpuAnomaly:") != std::string::npos &&
        e.find("leak in the memory of " + target + ",") != std::string::npos) {
      ++events;
    }
  }
  EXPECT_EQ(events, 1);
}

// Memory oversubscription's risk control: while GPU 0's host link receives past the thrash
// threshold (default 2 GB/s for 3 rounds) the tenant that spills there is throttled (limit) and
// then paused; the high-priority tenant beside it, which never spills, is never touched; once the
// traffic stops the spilling tenant comes back.
TEST_F(FaultsTest, ASpillingTenantThatThrashesIsThrottledThenPausedNeverTheHighPriorityOne) {
  pid_t pl = 0, ph = 0;
  SliceRecord low = Tenant("low", 0, &pl);
  SliceRecord high = Tenant("high", 0, &ph);
  auto spill = [](const SliceRecord& r, uint32_t protected_slice, uint64_t spilled) {
    shm::Mapping m;
    ASSERT_EQ(shm::Mapping::OpenExisting(r.region_path.c_str(), true, &m), shm::RegionError::kOk);
    shm::SpillState& st = m.region()->header.spill;  // as libvgpu.so writes it
    st.mode = kRegionModeSpill;
    st.protected_slice = protected_slice;
    st.spilled_bytes = spilled;
  };
  spill(low, 0, 3ULL << 30);
  spill(high, 1, 0);
  device::DeviceSample busy;
  busy.pcie_receive_bytes_per_second = 20e9;
  fake_->SetSample(0, busy);
  bool limited = false;
  for (int i = 0; i < 100 && LevelOf(low.name) != TenantLevel::kPause; ++i) {
    daemon_->SampleNow();
    if (LevelOf(low.name) == TenantLevel::kLimit) limited = true;
  }
  EXPECT_TRUE(limited) << "throttled before it is paused";
  EXPECT_EQ(LevelOf(low.name), TenantLevel::kPause);
  auto view = ReadSliceControl(low.region_path);
  ASSERT_TRUE(view.has_value());
  EXPECT_GT(view->pause_until_ns, static_cast<uint64_t>(MonotonicClock::Instance().NowNanos()));
  EXPECT_EQ(view->share_cap_pct, 25u);
  EXPECT_EQ(LevelOf(high.name), TenantLevel::kNormal);
  auto vh = ReadSliceControl(high.region_path);
  ASSERT_TRUE(vh.has_value());
  EXPECT_EQ(vh->pause_until_ns, 0u);
  EXPECT_EQ(vh->share_cap_pct, 0u);
  bool named = false;
  for (const auto& t : daemon_->Tenants()) {
    if (t.slice == low.name) named = t.signals.count("thrash") > 0;
  }
  EXPECT_TRUE(named);
  // The traffic stops: back to normal, one level per quiet second.
  fake_->SetSample(0, device::DeviceSample{});
  for (int i = 0; i < 200 && LevelOf(low.name) != TenantLevel::kNormal; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    daemon_->SampleNow();
  }
  EXPECT_EQ(LevelOf(low.name), TenantLevel::kNormal);
  EXPECT_EQ(ReadSliceControl(low.region_path)->pause_until_ns, 0u);
}

}  // namespace
}  // namespace vgpu::node
