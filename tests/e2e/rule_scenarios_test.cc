// The node daemon's tuning rules against real processes (docs/analyze.md, "Online: the node
// daemon"): `vgpu node --sim --rules FILE` on five simulated GPUs, one scenario on each, all in
// one daemon run. Every tenant is a pod admitted through the kubelet emulator (Allocate) and run
// as a process with the container's environment (container_runtime.h): libvgpu.so preloaded, the
// simulated GPU as its driver, intercept_worker's `loop` as the workload.
//   gpu0  a best-effort copy hog (a loader thread copying 8 MiB each way every 10 ms, and 16 ms
//         kernels, two at a time, back to back)
//         beside a best-effort inference tenant (1 ms kernels at random gaps): the tenant's
//         launches wait at the compute gate behind the hog's kernels -> copy-hog (lower_share).
//         Both are best-effort, so that they take turns as equals: a tenant that outranks the
//         hog takes the turn when it asks (the arbiter's claims, docs/compute.md) and waits at
//         the gate only 0.5-2.4% of the time, in bursts, which no `for:` holds through
//   gpu1  a process that allocates 4 MiB every 10 ms and never frees -> memory-leak (alert)
//   gpu2  a process that holds 256 MiB, launches for a while, then stops -> idle-slice (alert)
//   gpu3  a burst of XIDs injected on the simulated GPU (/sim/health) -> xid-burst (cordon)
//   gpu4  an inference tenant alone: nothing fires
// A scenario's onset: when its tenants' first iteration is done (their "ready" line), when the
// idle tenant stops launching, the first XID. The gate wait beside the hog comes from the hog's
// kernels, not its copies: copies do not pass the compute gate (docs/compute.md), so a hog that
// only copies leaves its neighbour's gate wait alone (on a real GPU it slows the neighbour
// through PCIe and memory bandwidth, which no gate sees).
// The rule file is deploy/analyze/rules.yaml's four rules with the same conditions, on a 200 ms
// interval with `for:` of a few intervals and thresholds scaled to what the processes do (with
// wide margins: a loaded machine only makes the tenants slower). The test watches /metrics
// (vgpu_rule_firing, vgpu_rule_actions_total) every 50 ms and checks that each scenario's rule
// fires for its target within its onset + `for` + 2 intervals, to the resolution of the test's
// scrapes (every 50 ms) and with 50 ms for the round's thread to run late on a loaded machine,
// that it changes state once, that nothing else fires anywhere, and that each action had its
// effect: the hog's share 100 -> 90 in its region, GPU 3's units unhealthy to kubelet, the alert
// Events in the daemon's log.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "child_process.h"
#include "container_runtime.h"
#include "e2e_util.h"
#include "kubelet_emulator.h"
#include "node/plugin/assignment.h"
#include "sanitizer_env.h"
#include "shm/region_file.h"
#include "shm/region_resize.h"
#include "support/background_process.h"

namespace vgpu::e2e {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::ChildProcess;
using vgpu::testing::FreePort;
using vgpu::testing::KubeletEmulator;

constexpr uint64_t kGiB = 1ULL << 30;
constexpr int64_t kIntervalNs = 200'000'000;
constexpr int64_t kPollNs = 50'000'000;  // between two scrapes of the test
// The rules are evaluated at their rounds' scheduled times; the round's thread may run this much
// later on a loaded machine before its firing shows in /metrics.
constexpr double kLateS = 0.05;

std::string Uuid(int gpu) {
  return "GPU-5cea0000-1111-4222-8333-00000000000" + std::to_string(gpu);
}

// The scaled rule file. Rates: the hog copies about 1.4 GB/s (threshold 0.2 GB/s), the leak
// grows 150-400 MiB/s (threshold 10 MB/s, 3.6e10 bytes/h); the inference tenant beside the hog
// waits at the gate about 0.1 of the time, rounds of 200 ms ranging 0.02-0.4 (threshold 0.02; a
// tenant alone on its GPU joins no arbiter and has no gate wait at all). memory-leak's
// `for` (1 s) is longer than its rate window (600 ms), so the step of a process's first
// allocation, which shows in the rate for one window, does not fire it.
constexpr const char* kRules = R"(evaluation_interval: 200ms
rules:
  - name: copy-hog
    scope: slice
    when:
      - {signal: best_effort, above: 0.5}
      - {signal: copy_bytes_per_s, above: 2.0e8, clear: 1.0e8}
      - {signal: gate_wait_ratio, of: neighbour, above: 0.02, clear: 0.01}
    for: 600ms
    clear_for: 3m
    action: lower_share
    amount: 10
  - name: memory-leak
    when:
      - {signal: memory_used_bytes, over: 600ms, above: 3.6e10, clear: 1.35e10}
    for: 1s
    action: alert
    detail: memory in use grows steadily (a leak?)
  - name: xid-burst
    scope: gpu
    when:
      - {signal: xid_errors, above: 0.5}
    for: 400ms
    clear_for: 10m
    action: quarantine_gpu
  - name: idle-slice
    when:
      - {signal: launches_per_s, below: 0.1, clear: 1}
      - {signal: util, below: 1, clear: 5}
      - {signal: memory_used_bytes, above: 1.0e8}
    for: 600ms
    action: alert
    detail: idle slice holding GPU memory
)";

struct Tenant {
  std::string pod;
  int gpu;
  uint64_t memory;
  int priority;         // nvidia.com/priority: 0 high, 1 normal
  std::string compute;  // vgpu.io/compute
  // intercept_worker loop HOLD KERNELS KERNEL_US GAP_US COPY_BYTES LEAK_BYTES ITERATIONS
  std::vector<std::string> loop;
};

const Tenant kTenants[] = {
    {"hog", 0, 2 * kGiB, 1, "priority=low", {"0", "2", "16000", "0", "8388608", "0", "0"}},
    {"infer", 0, 1 * kGiB, 0, "priority=low", {"0", "1", "1000", "~3000", "0", "0", "0"}},
    {"leak", 1, 8 * kGiB, 1, "", {"0", "1", "200", "10000", "0", "4194304", "0"}},
    // Light work (50 us kernels every 10 ms: util 0.5 %) for about a second, then none.
    {"idle", 2, 1 * kGiB, 1, "", {"268435456", "1", "50", "10000", "0", "0", "100"}},
    {"quiet", 4, 1 * kGiB, 0, "", {"0", "1", "1000", "~3000", "0", "0", "0"}},
};

// One vgpu_rule_firing series as the test saw it.
struct Seen {
  int64_t first_firing_ns = -1;  // the end of the first scrape that showed it firing
  int64_t before_ns = -1;        // the start of the scrape before that one
  int changes = 0;
  double last = -1;
};

class RuleScenariosTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = "/tmp/vgpu-e2e-rules-" + std::to_string(getpid());
    fs::remove_all(root_);
    fs::create_directories(root_);
    std::ofstream conf(root_ + "/devices.conf");
    for (int g = 0; g < 5; ++g) conf << "model=h100 memory=16GiB uuid=" << Uuid(g) << "\n";
    conf.close();
    json items = json::array();
    int second = 0;
    for (const Tenant& t : kTenants) {
      node::PodAssignment a;
      a.node = kTestNode;
      node::ContainerAssignment c;
      c.name = "main";
      c.priority = t.priority;
      c.devices.push_back({Uuid(t.gpu), t.gpu, t.memory, 100});
      a.containers.push_back(c);
      json annotations = {{node::kAssignmentAnnotation, node::FormatAssignment(a)}};
      if (!t.compute.empty()) annotations["vgpu.io/compute"] = t.compute;
      items.push_back(PendingPod(t.pod, ++second, annotations));
    }
    std::ofstream(root_ + "/pods.json") << json{{"items", items}}.dump();
    std::ofstream(root_ + "/rules.yaml") << kRules;
    kubelet_ = std::make_unique<KubeletEmulator>(root_ + "/kubelet");
    ASSERT_TRUE(kubelet_->Start());
  }

  void TearDown() override {
    for (auto& [name, child] : tenants_) child->CloseStdin();
    for (auto& [name, child] : tenants_) child->Wait(20'000);
    tenants_.clear();
    StopSimNode(daemon_.get());
    daemon_.reset();
    kubelet_.reset();
    if (!HasFailure()) fs::remove_all(root_);
  }

  std::string Log() const { return "daemon log:\n" + ReadFile(root_ + "/daemon.log"); }

  std::string Metrics() const {
    httplib::Client client("127.0.0.1", port_);
    client.set_read_timeout(10, 0);
    auto res = client.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }

  bool InjectXid() const {
    httplib::Client client("127.0.0.1", port_);
    auto res =
        client.Post("/sim/health", "gpu=3&event=xid&code=13", "application/x-www-form-urlencoded");
    return res && res->status == 200;
  }

  // Every vgpu_rule_firing{rule,target} series of a scrape.
  static std::map<std::pair<std::string, std::string>, double> Firing(const std::string& text) {
    static const std::regex kLine(
        R"re(^vgpu_rule_firing\{rule="([^"]+)",target="([^"]+)"\} (\S+))re");
    std::map<std::pair<std::string, std::string>, double> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      std::smatch m;
      if (std::regex_search(line, m, kLine)) out[{m[1], m[2]}] = std::stod(m[3]);
    }
    return out;
  }

  std::string root_;
  std::unique_ptr<KubeletEmulator> kubelet_;
  std::unique_ptr<BackgroundProcess> daemon_;
  std::map<std::string, std::unique_ptr<ChildProcess>> tenants_;
  int port_ = 0;
};

// The compute share in force in the container's region on its GPU (percent; 0: none).
uint32_t ShareOf(const ContainerSpec& c) {
  shm::Mapping m;
  const std::string region = c.envs.count("CUDA_DEVICE_MEMORY_SHARED_CACHE")
                                 ? c.envs.at("CUDA_DEVICE_MEMORY_SHARED_CACHE")
                                 : "";
  if (shm::Mapping::OpenExisting(region.c_str(), false, &m) != shm::RegionError::kOk) return 999;
  const uint32_t sm = shm::SmLimitInForce(m.region(), 0);
  return sm == 0 ? 100 : sm;
}

// The value of the series `name` whose labels contain pod="<pod>", or -1.
double PodSeries(const std::string& metrics, const std::string& name, const std::string& pod) {
  std::istringstream in(metrics);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + "{", 0) == 0 && line.find("pod=\"" + pod + "\"") != std::string::npos) {
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return -1;
}

// "ready PID NS" / "stopped NS": the CLOCK_MONOTONIC time the line names, or -1.
int64_t TimeOf(const std::string& line) {
  const size_t sp = line.rfind(' ');
  return sp == std::string::npos ? -1 : std::stoll(line.substr(sp + 1));
}

TEST_F(RuleScenariosTest, EachScenarioFiresItsRuleOnceInTimeAndTheQuietGpuNothing) {
  const uint64_t t_begin = MonotonicNs();
  port_ = FreePort();
  daemon_ = StartSimNode(
      {VGPU_BIN,
       LIBVGPU_PATH,
       root_,
       kubelet_->pod_resources_socket(),
       "127.0.0.1:" + std::to_string(port_),
       4,
       {"--sample-interval", "200ms", "--rules", root_ + "/rules.yaml", "--log-level", "3"}});
  ASSERT_TRUE(kubelet_->WaitForRegistrations(1, 30'000)) << Log();
  ASSERT_TRUE(kubelet_->WaitForDevices([](const auto& d) { return d.size() == 20; }, 10'000))
      << Log();

  // kubelet admits the pods in creation order.
  std::vector<std::string> available;
  for (const auto& d : kubelet_->devices()) available.push_back(d.id());
  std::map<std::string, ContainerSpec> containers;
  for (const Tenant& t : kTenants) {
    std::vector<std::string> units;
    ASSERT_TRUE(kubelet_->GetPreferredAllocation(available, {}, 1, &units).ok()) << Log();
    ASSERT_EQ(units.size(), 1u);
    ASSERT_EQ(units[0].rfind(Uuid(t.gpu) + "-", 0), 0u) << t.pod << " got " << units[0];
    std::erase(available, units[0]);
    v1beta1::ContainerAllocateResponse r;
    grpc::Status s = kubelet_->Allocate("default", t.pod, "main", units, &r);
    ASSERT_TRUE(s.ok()) << s.error_message() << Log();
    containers[t.pod] = ContainerSpec::FromAllocation(r);
  }

  // The engine samples the new slices twice (a baseline, and a previous value for every rate)
  // before the tenants start: each scenario's onset is then when its behaviour begins.
  auto rounds = [&] {
    const std::string text = Metrics();
    const size_t at = text.find("\nvgpu_rule_evaluations_total ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(text.find(' ', at + 1) + 1));
  };
  const double allocated_at = rounds();
  ASSERT_GE(allocated_at, 0) << Metrics();
  ASSERT_TRUE(WaitFor([&] { return rounds() >= allocated_at + 2; }, 10'000)) << Log();

  for (const Tenant& t : kTenants) {
    std::vector<std::string> args = {WORKER_PATH, "loop"};
    args.insert(args.end(), t.loop.begin(), t.loop.end());
    tenants_[t.pod] = std::make_unique<ChildProcess>(
        args, containers[t.pod].Environment(SimGpuRuntimeEnv(SIMGPU_DIR, root_),
                                            testing::kSanitizerRuntime));
  }
  ASSERT_EQ(ShareOf(containers["hog"]), 100u);
  const uint32_t infer_share = ShareOf(containers["infer"]);
  std::map<std::string, int64_t> ready;
  for (const Tenant& t : kTenants) {
    const std::string line = tenants_[t.pod]->ReadLine(60'000);
    ASSERT_EQ(line.rfind("ready ", 0), 0u) << t.pod << ": " << line;
    ready[t.pod] = TimeOf(line);
  }
  // The XID burst: one unattributed XID 13 every 50 ms for 1.5 s.
  const int64_t xid_onset = static_cast<int64_t>(MonotonicNs());
  std::atomic<int> xids{0};
  std::thread burst([&] {
    for (int i = 0; i < 30; ++i) {
      if (InjectXid()) ++xids;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  // The idle tenant says when it stops launching (read beside the watch below).
  std::string idle_stop;
  std::thread idle_reader([&] { idle_stop = tenants_["idle"]->ReadLine(30'000); });

  // Which rule each scenario fires, its target's slice, its onset and `for`.
  struct Expect {
    std::string rule, target_prefix;
    int64_t onset_ns, for_ns;
  };
  std::vector<Expect> expected = {
      {"copy-hog", "gpu0/", std::max(ready["hog"], ready["infer"]), 600'000'000},
      {"memory-leak", "gpu1/", ready["leak"], 1'000'000'000},
      {"idle-slice", "gpu2/", -1, 600'000'000},
      {"xid-burst", "gpu3", xid_onset, 400'000'000},
  };

  // Watch /metrics until every scenario fired (and one more second, for a second change), at
  // most 20 s.
  std::map<std::pair<std::string, std::string>, Seen> seen;
  std::string metrics = Metrics();
  const int64_t watch_from = static_cast<int64_t>(MonotonicNs());
  std::map<std::string, double> wait_from;  // the arbiter's gate wait of the inference tenant
  for (const char* pod : {"infer"}) {
    wait_from[pod] = PodSeries(metrics, "vgpu_slice_compute_wait_seconds_total", pod);
  }
  int64_t all_fired_ns = -1;
  const int64_t give_up = static_cast<int64_t>(MonotonicNs()) + 20'000'000'000LL;
  int64_t previous_start = watch_from;
  for (;;) {
    const int64_t start = static_cast<int64_t>(MonotonicNs());
    metrics = Metrics();
    const int64_t now = static_cast<int64_t>(MonotonicNs());
    for (const auto& [key, v] : Firing(metrics)) {
      Seen& s = seen[key];
      if (v != s.last) ++s.changes;
      if (v == 1 && s.first_firing_ns < 0) {
        s.first_firing_ns = now;
        s.before_ns = previous_start;
      }
      s.last = v;
    }
    previous_start = start;
    int fired = 0;
    for (const Expect& e : expected) {
      for (const auto& [key, s] : seen) {
        if (key.first == e.rule && key.second.rfind(e.target_prefix, 0) == 0 &&
            s.first_firing_ns >= 0) {
          ++fired;
          break;
        }
      }
    }
    if (fired == static_cast<int>(expected.size()) && all_fired_ns < 0) all_fired_ns = now;
    if ((all_fired_ns >= 0 && now - all_fired_ns > 1'000'000'000) || now > give_up) break;
    std::this_thread::sleep_for(std::chrono::nanoseconds(kPollNs));
  }
  burst.join();
  idle_reader.join();
  for (const char* pod : {"infer"}) {
    const double ratio =
        (PodSeries(metrics, "vgpu_slice_compute_wait_seconds_total", pod) - wait_from[pod]) /
        (static_cast<double>(static_cast<int64_t>(MonotonicNs()) - watch_from) / 1e9);
    std::printf("e2e rules: %s's launches waited at the gate %.4f of the time\n", pod, ratio);
  }
  EXPECT_EQ(xids.load(), 30) << Log();
  ASSERT_EQ(idle_stop.rfind("stopped ", 0), 0u) << idle_stop;
  expected[2].onset_ns = TimeOf(idle_stop);

  // Each scenario: its rule fired for its target, once, in time; nothing else fired anywhere
  // (the quiet GPU's tenant, the inference tenant beside the hog, the other scenarios' slices).
  std::set<std::pair<std::string, std::string>> intended;
  for (const Expect& e : expected) {
    SCOPED_TRACE(e.rule);
    const Seen* found = nullptr;
    std::string target;
    for (const auto& [key, s] : seen) {
      if (key.first == e.rule && key.second.rfind(e.target_prefix, 0) == 0) {
        found = &s;
        target = key.second;
      }
    }
    if (found == nullptr) {
      ADD_FAILURE() << "did not fire\n" << metrics << Log();
      continue;
    }
    intended.insert({e.rule, target});
    // It fired between the start of the last scrape that did not show it and the end of the
    // first that did: the test resolves a firing time to its scrape period (50 ms + a scrape).
    const double after_s = static_cast<double>(found->before_ns - e.onset_ns) / 1e9;
    const double by_s = static_cast<double>(found->first_firing_ns - e.onset_ns) / 1e9;
    const double bound_s = static_cast<double>(e.for_ns + 2 * kIntervalNs) / 1e9;
    std::printf(
        "e2e rules: %-11s %-22s fired %.2f-%.2f s after its onset (for %.1f s; bound %.2f s)\n",
        e.rule.c_str(), target.c_str(), after_s, by_s, static_cast<double>(e.for_ns) / 1e9,
        bound_s);
    EXPECT_GE(by_s, static_cast<double>(e.for_ns) / 1e9) << "fired before its `for`";
    EXPECT_LE(after_s, bound_s + kLateS);
    EXPECT_EQ(found->changes, 1) << "it changed state more than once";
    EXPECT_EQ(found->last, 1);
  }
  for (const auto& [key, s] : seen) {
    EXPECT_TRUE(intended.count(key)) << key.first << " fired for " << key.second;
  }
  for (const auto& [rule, action] :
       std::map<std::string, std::string>{{"copy-hog", "lower_share"},
                                          {"memory-leak", "alert"},
                                          {"idle-slice", "alert"},
                                          {"xid-burst", "quarantine_gpu"}}) {
    EXPECT_NE(metrics.find("vgpu_rule_actions_total{rule=\"" + rule + "\",action=\"" + action +
                           "\",outcome=\"applied\"} 1\n"),
              std::string::npos)
        << rule << "\n"
        << metrics;
  }
  EXPECT_EQ(metrics.find("outcome=\"failed\""), std::string::npos) << metrics;

  // The effects. The hog's share, in its region, 100 -> 90; the inference tenant's untouched.
  EXPECT_EQ(ShareOf(containers["hog"]), 90u);
  EXPECT_EQ(ShareOf(containers["infer"]), infer_share);
  // GPU 3 cordoned: kubelet sees its units unhealthy, every other GPU's healthy.
  ASSERT_TRUE(kubelet_->WaitForDevices(
      [](const auto& devices) {
        for (const auto& d : devices) {
          const bool gpu3 = d.id().rfind(Uuid(3) + "-", 0) == 0;
          if (d.health() != (gpu3 ? "Unhealthy" : "Healthy")) return false;
        }
        return true;
      },
      5000))
      << Log();
  // The alerts: Warning Events on the node naming the leaking and the idle slice.
  const std::string log = ReadFile(root_ + "/daemon.log");
  for (const char* pod : {"leak", "idle"}) {
    const std::regex event(std::string("event Warning VgpuRuleAlert: .*gpu[12]/[^ ]*") + pod);
    EXPECT_TRUE(std::regex_search(log, event)) << pod << "\n" << log;
  }

  for (auto& [name, child] : tenants_) child->CloseStdin();
  for (auto& [name, child] : tenants_) {
    EXPECT_EQ(child->Wait(20'000), 0) << name;
  }
  tenants_.clear();
  std::printf("e2e rules: whole test %.1f s\n", static_cast<double>(MonotonicNs() - t_begin) / 1e9);
}

}  // namespace
}  // namespace vgpu::e2e
