// The tuning rules online: NodeActions carrying out the shipped rules (deploy/analyze/rules.yaml)
// on real slices (regions created by SliceManager), over the scripted scenarios of
// analyze/scenarios.h replayed on a simulated clock; and RuleEngine sampling a real region whose
// memory leaks 1 GiB/h.
#include "node/rules/rule_engine.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "analyze/scenarios.h"
#include "node/cluster/fake_cluster.h"
#include "shm/arbiter.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"
#include "shm/region_resize.h"
#include "support/temp_dir.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using analyze::Action;
using analyze::ActionType;

constexpr uint64_t kGiB = 1ULL << 30;

class FakeQuarantine final : public faults::QuarantineActions {
 public:
  Status Warn(const std::string&, const std::string&) override { return Status::Ok(); }
  Status LimitShare(const std::string&, int) override { return Status::Ok(); }
  Status Pause(const std::string& slice, bool paused) override {
    calls.push_back(slice + (paused ? " pause" : " release"));
    return Status::Ok();
  }
  Status Terminate(const std::string&, const std::string&) override { return Status::Ok(); }
  std::vector<std::string> calls;
};

class RuleEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    root_ = tmp_.path();
    layout_.root = (root_ / "slices").string();
    layout_.host_libvgpu = (root_ / "libvgpu.so").string();
    layout_.arbiter_dir = (root_ / "arbiter").string();
    slices_ = std::make_unique<SliceManager>(layout_);
    ASSERT_TRUE(slices_->Init().ok());
    for (const char* n : {"web", "batch", "trainer", "notebook"}) {
      ContainerSlice s;
      s.pod_ns = "ns";
      s.pod_name = n;
      s.pod_uid = std::string("uid-") + n;
      s.container = "main";
      s.compute.level = std::string(n) == "batch" ? shm::kPriorityLow : shm::kPriorityNormal;
      s.devices = {{"GPU-a", 0, 0, 40 * kGiB, 100}};
      auto r = slices_->Create(s, 1);
      ASSERT_TRUE(r) << r.error().message();
      region_[n] = r->region_path;
      name_[n] = r->name;
    }
    auto rules = analyze::LoadRules(std::string(VGPU_SOURCE_DIR) + "/deploy/analyze/rules.yaml");
    ASSERT_TRUE(rules) << rules.error().message();
    rules_ = *rules;
  }

  NodeActionHooks Hooks() {
    NodeActionHooks h;
    h.slices = slices_.get();
    h.cluster = cluster_.get();
    h.node_name = "n1";
    h.quarantine = &quarantine_;
    h.cordon_gpu = [this](int gpu, bool on, const std::string&) {
      cordons_.push_back("gpu" + std::to_string(gpu) + (on ? " on" : " off"));
      return Status::Ok();
    };
    return h;
  }
  // The scenario's series with its slice names ("gpu0/web") as the daemon names them.
  analyze::SignalStore Store(const analyze::Scenario& s) {
    std::string csv = s.csv;
    for (const auto& [short_name, full] : name_) {
      std::string from = "gpu0/" + short_name + ",", to = "gpu0/" + full + ",";
      for (size_t p = csv.find(from); p != std::string::npos; p = csv.find(from, p + to.size())) {
        csv.replace(p, from.size(), to);
      }
    }
    auto store = analyze::ParseSignalCsv(csv, s.name + ".csv");
    EXPECT_TRUE(store) << store.error().message();
    return store ? *store : analyze::SignalStore{};
  }
  uint32_t Share(const std::string& n) {
    shm::Mapping m;
    EXPECT_EQ(shm::Mapping::OpenExisting(region_[n].c_str(), false, &m), shm::RegionError::kOk);
    return shm::SmLimitInForce(m.region(), 0);
  }
  int Priority(const std::string& n) {
    shm::Mapping m;
    EXPECT_EQ(shm::Mapping::OpenExisting(region_[n].c_str(), false, &m), shm::RegionError::kOk);
    return shm::PriorityInForce(m.region());
  }
  // Maps the trainer's region writable and claims a slot in it, as a process of the slice does.
  void JoinTrainer(const shm::ProcIdentity& self, shm::Mapping* m, int* slot) {
    ASSERT_EQ(shm::Mapping::OpenExisting(region_["trainer"].c_str(), true, m),
              shm::RegionError::kOk);
    ASSERT_EQ(shm::ClaimSlot(m->region(), self, slot), shm::RegionError::kOk);
  }
  int64_t ForNs(const std::string& rule) const {
    for (const analyze::Rule& r : rules_.rules) {
      if (r.name == rule) return r.for_ns;
    }
    return -1;
  }

  vgpu::testing::TempDir tmp_{"vgpu-rules-test"};
  fs::path root_;
  SliceLayout layout_;
  std::unique_ptr<SliceManager> slices_;
  std::map<std::string, std::string> region_, name_;
  analyze::RuleSet rules_;
  std::unique_ptr<FakeCluster> cluster_ = std::make_unique<FakeCluster>();
  FakeQuarantine quarantine_;
  std::vector<std::string> cordons_;
};

bool HasEvent(const std::vector<std::string>& events, const std::string& part) {
  for (const std::string& e : events) {
    if (e.find(part) != std::string::npos) return true;
  }
  return false;
}

TEST_F(RuleEngineTest, EachScenarioFiresItsRuleOnceWithinTwoIntervalsAndActsOnTheNode) {
  const int64_t onset = static_cast<int64_t>(analyze::kOnsetS * 1e9);
  for (const std::string& name : analyze::ScenarioNames()) {
    SCOPED_TRACE(name);
    auto s = analyze::MakeScenario(name);
    ASSERT_TRUE(s);
    cluster_ = std::make_unique<FakeCluster>();
    NodeActions actions(Hooks(), false);
    analyze::DryRun(rules_, Store(*s), &actions);
    std::vector<NodeActionRecord> h = actions.History();
    if (s->intended_rule.empty()) {
      EXPECT_TRUE(h.empty()) << h[0].action.rule;
      EXPECT_TRUE(cluster_->Events().empty());
      continue;
    }
    ASSERT_EQ(h.size(), 1u);  // one state change
    EXPECT_TRUE(h[0].fired);
    EXPECT_EQ(h[0].action.rule, s->intended_rule);
    EXPECT_EQ(h[0].outcome, "applied") << h[0].what;
    EXPECT_GE(h[0].action.at_ns, onset);
    EXPECT_LE(h[0].action.at_ns, onset + ForNs(s->intended_rule) + 2 * rules_.interval_ns);
  }
}

TEST_F(RuleEngineTest, TheActionsChangeTheSlicesAndTheGpu) {
  // copy hog: the best-effort batch slice's share goes from 100 to 90 in its region; web keeps
  // its own.
  {
    NodeActions actions(Hooks(), false);
    analyze::DryRun(rules_, Store(*analyze::MakeScenario("copy_hog")), &actions);
    EXPECT_EQ(Share("batch"), 90u);
    EXPECT_EQ(Share("web"), 0u);
    EXPECT_TRUE(HasEvent(cluster_->Events(), "VgpuShareChanged")) << cluster_->Events().size();
  }
  {
    NodeActions actions(Hooks(), false);
    analyze::DryRun(rules_, Store(*analyze::MakeScenario("leak")), &actions);
    EXPECT_TRUE(HasEvent(cluster_->Events(), "VgpuRuleAlert: alert: rule memory-leak"));
  }
  {
    NodeActions actions(Hooks(), false);
    analyze::DryRun(rules_, Store(*analyze::MakeScenario("xid_burst")), &actions);
    EXPECT_EQ(cordons_, std::vector<std::string>{"gpu0 on"});
    EXPECT_TRUE(HasEvent(cluster_->Events(), "VgpuGpuCordoned"));
  }
  {
    NodeActions actions(Hooks(), false);
    analyze::DryRun(rules_, Store(*analyze::MakeScenario("idle")), &actions);
    EXPECT_TRUE(HasEvent(cluster_->Events(), "rule idle-slice"));
  }
}

TEST_F(RuleEngineTest, DryRunChangesNothingAndSaysWhatItWouldHaveDone) {
  NodeActions actions(Hooks(), true);
  analyze::DryRun(rules_, Store(*analyze::MakeScenario("copy_hog")), &actions);
  ASSERT_EQ(actions.History().size(), 1u);
  EXPECT_EQ(actions.History()[0].outcome, "dry_run");
  EXPECT_NE(actions.History()[0].what.find("100% -> 90%"), std::string::npos)
      << actions.History()[0].what;
  EXPECT_EQ(Share("batch"), 0u);
  EXPECT_TRUE(cluster_->Events().empty());
  MetricsBuilder m;
  actions.AddMetrics(m);
  EXPECT_NE(m.Render().find("vgpu_rule_actions_total{rule=\"copy-hog\",action=\"lower_share\","
                            "outcome=\"dry_run\"} 1"),
            std::string::npos)
      << m.Render();
}

TEST_F(RuleEngineTest, ResolvingUndoesShareAndPriorityAndReleasesAQuarantine) {
  NodeActions actions(Hooks(), false);
  const std::string batch = "gpu0/" + name_["batch"];
  Action lower{ActionType::kRaiseShare, "r1", batch, 30, "", 0};
  actions.Fire(lower);
  EXPECT_EQ(Share("batch"), 0u);  // 100 + 30 stays at 100 (no limit)
  lower.type = ActionType::kLowerShare;
  lower.rule = "r2";
  actions.Fire(lower);
  EXPECT_EQ(Share("batch"), 70u);
  actions.Resolve(lower);
  EXPECT_EQ(Share("batch"), 0u);  // back to 100: no limit

  Action prio{ActionType::kRaisePriority, "p", batch, 0, "", 0};
  actions.Fire(prio);
  EXPECT_EQ(Priority("batch"), shm::kPriorityNormal);
  actions.Resolve(prio);
  EXPECT_EQ(Priority("batch"), shm::kPriorityLow);

  Action q{ActionType::kQuarantineSlice, "q", batch, 0, "", 0};
  actions.Fire(q);
  actions.Renew();
  actions.Resolve(q);
  actions.Renew();
  const std::string n = name_["batch"];
  EXPECT_EQ(quarantine_.calls,
            (std::vector<std::string>{n + " pause", n + " pause", n + " release"}));

  Action gone{ActionType::kLowerShare, "x", "gpu0/nosuch", 10, "", 0};
  actions.Fire(gone);
  EXPECT_EQ(actions.History().back().outcome, "failed");
  EXPECT_NE(actions.History().back().what.find("no slice nosuch"), std::string::npos);
}

// Online: the engine samples the trainer's real region every 30 s of a simulated clock while its
// memory grows by 1 GiB/h from minute 10; the memory-leak rule fires once, within two intervals
// of its `for`, and nothing fires before.
TEST_F(RuleEngineTest, TheEngineSeesALeakInARealRegion) {
  SimulatedClock clock(0);
  RuleEngine engine(rules_, &clock, Hooks(), false, 1);
  shm::Mapping m;
  const shm::ProcIdentity self = shm::CurrentProcIdentity();
  int slot = -1;
  ASSERT_NO_FATAL_FAILURE(JoinTrainer(self, &m, &slot));
  ASSERT_EQ(shm::Charge(m.region(), slot, 0, 4 * kGiB, shm::kNoLimit, self), shm::RegionError::kOk);
  RuleInputs in;
  in.slices = slices_->List();
  const int64_t interval = rules_.interval_ns;
  const int64_t onset = static_cast<int64_t>(analyze::kOnsetS * 1e9);
  int64_t fired_at = -1;
  for (int64_t t = 0; t <= 30LL * 60 * 1000000000; t += interval) {
    clock.Advance(t - clock.NowNanos());
    if (t > onset) {
      ASSERT_EQ(shm::Charge(m.region(), slot, 0, kGiB * (interval / 1000000000) / 3600,
                            shm::kNoLimit, self),
                shm::RegionError::kOk);
    }
    engine.Round(in);
    if (fired_at < 0 && !engine.actions().History().empty()) fired_at = t;
  }
  std::vector<NodeActionRecord> h = engine.actions().History();
  ASSERT_EQ(h.size(), 1u) << h.back().action.rule;
  EXPECT_EQ(h[0].action.rule, "memory-leak");
  EXPECT_GT(fired_at, onset);
  EXPECT_LE(fired_at, onset + ForNs("memory-leak") + 2 * interval);
  // What a round samples: 3 refused allocations in the next 30 s are 0.1 per second.
  m.region()->header.control.oom_refusals += 3;
  clock.Advance(interval);
  std::set<std::string> signals;
  for (auto& [target, signal, v] : engine.Sample(in)) {
    if (target != "gpu0/" + name_["trainer"]) continue;
    signals.insert(signal);
    if (signal == "oom_refusals_per_s") {
      EXPECT_DOUBLE_EQ(v, 0.1);
    } else if (signal == "best_effort") {
      EXPECT_EQ(v, 0);
    } else if (signal == "memory_limit_bytes") {
      EXPECT_EQ(v, 40.0 * kGiB);
    }
  }
  EXPECT_EQ(signals,
            (std::set<std::string>{"best_effort", "memory_limit_bytes", "memory_used_bytes",
                                   "oom_refusals_per_s", "share_percent"}));
  shm::ReleaseSlot(m.region(), slot, self);
}

// Copy traffic comes from the slice's exact counters, as a counting libvgpu.so writes them (a
// slot's own counters plus what freed slots folded in): 3 GB in, 1 GB out in 30 s.
TEST_F(RuleEngineTest, CopyTrafficIsSampledFromTheSliceCounters) {
  SimulatedClock clock(0);
  RuleEngine engine(rules_, &clock, Hooks(), false, 1);
  shm::Mapping m;
  const shm::ProcIdentity self = shm::CurrentProcIdentity();
  int slot = -1;
  ASSERT_NO_FATAL_FAILURE(JoinTrainer(self, &m, &slot));
  RuleInputs in;
  in.slices = slices_->List();
  const std::string target = "gpu0/" + name_["trainer"];
  auto copy_signals = [&] {
    std::map<std::string, double> got;
    for (auto& [t, signal, v] : engine.Sample(in)) {
      if (t == target && signal.find("_bytes_per_s") != std::string::npos) got[signal] = v;
    }
    return got;
  };
  EXPECT_TRUE(copy_signals().empty()) << "no counting libvgpu.so has joined";
  m.region()->header.telemetry.flags = shm::kTelemetryCounting;
  EXPECT_TRUE(copy_signals().empty()) << "a rate needs two rounds";
  shm::ProcCounters& mine = m.region()->slots[slot].counters;
  mine.copy_bytes[shm::kCopyKindHostToDevice] += 2'000'000'000;
  m.region()->header.telemetry.folded.copy_bytes[shm::kCopyKindHostToDevice] += 1'000'000'000;
  mine.copy_bytes[shm::kCopyKindDeviceToHost] += 1'000'000'000;
  mine.copy_bytes[shm::kCopyKindDeviceToDevice] += 7'000'000'000;  // not host traffic
  clock.Advance(30'000'000'000);
  std::map<std::string, double> got = copy_signals();
  EXPECT_DOUBLE_EQ(got["h2d_bytes_per_s"], 1e8);
  EXPECT_DOUBLE_EQ(got["d2h_bytes_per_s"], 1e8 / 3);
  EXPECT_DOUBLE_EQ(got["copy_bytes_per_s"], 1e8 + 1e8 / 3);
  EXPECT_EQ(got.size(), 3u);
  shm::ReleaseSlot(m.region(), slot, self);
}

// The GPU-level signals come from the daemon's latest device sample of each GPU: NVML
// utilization, GPM DRAM bandwidth and NVLink traffic (only where the GPU has GPM and the metric)
// and the NVLink replay counters (a rate); a GPU without them has no such samples, so a rule over
// them does not hold there.
TEST_F(RuleEngineTest, GpuSignalsComeFromTheDeviceSamplesAndAreAbsentWithoutThem) {
  SimulatedClock clock(0);
  RuleEngine engine(rules_, &clock, Hooks(), false, 3);
  RuleInputs in;
  in.slices = slices_->List();  // four slices on GPU 0
  device::DeviceSample hopper;  // GPU 0: utilization, GPM, two NVLinks
  hopper.sm_utilization = 0.42;
  hopper.gpm = device::GpmMetrics{};
  hopper.gpm->dram_activity = 0.9;
  hopper.gpm->nvlink_transmit_bytes_per_second = 3e9;
  hopper.nvlink_links = {{0, 10, 0, 0}, {1, 5, 0, 0}};
  device::DeviceSample older;  // GPU 1: utilization only (no GPM, no NVLink)
  older.sm_utilization = 0.1;
  in.gpu_samples = {{0, hopper}, {1, older}};  // GPU 2: no sample (it failed)
  auto gpu_signals = [&] {
    std::map<std::string, double> got;
    for (auto& [t, signal, v] : engine.Sample(in)) {
      if (t.find('/') == std::string::npos && signal != "slices" && signal != "xid_errors") {
        got[t + " " + signal] = v;
      }
    }
    return got;
  };
  EXPECT_EQ(gpu_signals(), (std::map<std::string, double>{{"gpu0 dram_bw_util", 90},
                                                          {"gpu0 gpu_util", 42},
                                                          {"gpu0 nvlink_tx_bytes_per_s", 3e9},
                                                          {"gpu1 gpu_util", 10}}))
      << "no replay rate before a second round";
  clock.Advance(10'000'000'000);
  in.gpu_samples[0].nvlink_links = {{0, 22, 0, 0}, {1, 13, 0, 0}};  // 20 more in 10 s
  std::map<std::string, double> got = gpu_signals();
  EXPECT_DOUBLE_EQ(got["gpu0 nvlink_replays_per_s"], 2.0);
  EXPECT_EQ(got.size(), 5u);
  // The shipped rules over them: DRAM-bound co-tenants (90 % > 85 % with four slices, 10 min)
  // and NVLink replays (2/s > 0.1/s, 5 min) fire on GPU 0 only; GPU 1 has no GPM and no links.
  uint64_t replays = 35;
  for (int64_t t = 0; t <= 11LL * 60 * 1'000'000'000; t += rules_.interval_ns) {
    clock.Advance(rules_.interval_ns);
    replays += 60;
    in.gpu_samples[0].nvlink_links = {{0, replays, 0, 0}};
    engine.Round(in);
  }
  std::set<std::string> fired;
  for (const NodeActionRecord& r : engine.actions().History()) {
    fired.insert(r.action.rule + " " + r.action.target + " " + r.outcome);
  }
  EXPECT_EQ(fired, (std::set<std::string>{"memory-bound-cotenants gpu0 applied",
                                          "nvlink-replays gpu0 applied"}));
}

// A slice in no arbiter (one alone on its GPU) gets launches_per_s and util from its exact
// counters: 300 launches and 15 s of GPU time in 30 s are 10 per second and 50 %; it has no
// gate_wait_ratio.
TEST_F(RuleEngineTest, ASliceInNoArbiterGetsLaunchesAndUtilFromItsCounters) {
  SimulatedClock clock(0);
  RuleEngine engine(rules_, &clock, Hooks(), false, 1);
  shm::Mapping m;
  const shm::ProcIdentity self = shm::CurrentProcIdentity();
  int slot = -1;
  ASSERT_NO_FATAL_FAILURE(JoinTrainer(self, &m, &slot));
  m.region()->header.telemetry.flags = shm::kTelemetryCounting;
  RuleInputs in;
  in.slices = slices_->List();
  const std::string target = "gpu0/" + name_["trainer"];
  auto compute_signals = [&] {
    std::map<std::string, double> got;
    for (auto& [t, signal, v] : engine.Sample(in)) {
      if (t == target &&
          (signal == "launches_per_s" || signal == "util" || signal == "gate_wait_ratio")) {
        got[signal] = v;
      }
    }
    return got;
  };
  EXPECT_TRUE(compute_signals().empty()) << "a rate needs two rounds";
  shm::ProcCounters& mine = m.region()->slots[slot].counters;
  mine.launches += 300;
  mine.busy_ns += 15'000'000'000;
  clock.Advance(30'000'000'000);
  EXPECT_EQ(compute_signals(),
            (std::map<std::string, double>{{"launches_per_s", 10}, {"util", 50}}));
  shm::ReleaseSlot(m.region(), slot, self);
}

}  // namespace
}  // namespace vgpu::node
