// The extender's production path against the simulator: a bundled trace's snapshot experiment
// (the pod sequence and node order `vgpu sim` uses for one seed, up to 100% arrived) replayed
// through a real `vgpu scheduler` process as kube-scheduler drives it (tests/k8s/trace_replay.h:
// NodeResourcesFit, the extender's filter, prioritize when more than one node is left, the
// highest total with kube-scheduler's random tie-break, kube-scheduler's assume, the extender's
// bind), against the tests' API server, with pods in HAMi's resource names (CPU-only pods too).
// Prints the unallocated GPU % at the level for: `vgpu sim` (same policy, seed, pods, nodes),
// the engine in-process with the extender's tie-break order (what the extender should decide,
// pod by pod), and the replay; and how many of the replay's decisions equal that engine's.
//
//   build/bin/bench_extender_replay [--nodes CSV] [--pods CSV] [--policy default] [--seed 42]
//       [--inflate 1.3] [--filter-mode narrow|all] [--narrow-tolerance N] [--kube-scores]
//       [--weight W] [--level 100] [--vgpu PATH] [--json]
// Exit 0 when the run completed (the figures are the result), 2 on bad input, 1 on failure.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>

#include "common/log.h"
#include "kubeconfig.h"
#include "sim/snapshot.h"
#include "sim/trace.h"
#include "support/background_process.h"
#include "trace_replay.h"

namespace vgpu::k8s::testing {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

struct Flags {
  std::string nodes = "data/alibaba-gpu-v2023/openb_node_list_gpu_node.csv";
  std::string pods = "data/alibaba-gpu-v2023/openb_pod_list_default.csv";
  std::string policy = "default";
  uint64_t seed = 42;
  double inflate = 1.3;
  std::string filter_mode = "narrow";
  int tolerance = 0;
  bool kube_scores = false;
  int weight = 1;
  int level = 100;
  std::string vgpu;
  bool json = false;
};

int Usage(const std::string& why) {
  std::fprintf(stderr,
               "bench_extender_replay: %s\nusage: bench_extender_replay [--nodes CSV] [--pods CSV] "
               "[--policy P] [--seed N] [--inflate X] [--filter-mode narrow|all] "
               "[--narrow-tolerance 0..10] [--kube-scores] [--weight W] [--level L] [--vgpu PATH] "
               "[--json]\n",
               why.c_str());
  return 2;
}

std::string SelfDir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  return ec ? "." : self.parent_path().string();
}

double Mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

int Run(const Flags& f) {
  sched::ModelRegistry models;
  auto nodes = sim::LoadNodeList(f.nodes, &models);
  if (!nodes) return Usage(nodes.error().message());
  auto pods = sim::LoadPodList(f.pods, models);
  if (!pods) return Usage(pods.error().message());
  std::vector<std::pair<std::string, sched::PodRequest>> list;
  for (auto& p : *pods) {
    if (p.request.num_gpus > 0 && p.request.gpu_milli % 10 != 0) {
      return Usage(f.pods + ": pod " + p.name + " has a GPU share of " +
                   std::to_string(p.request.gpu_milli) +
                   " milli, which gpucores (whole percent) cannot express");
    }
    list.emplace_back(p.name, p.request);
  }
  const sim::SnapshotInput input = sim::MakeSnapshotInput(*nodes, list, &models, "replay");
  sched::PolicyArgs args;
  args.models = &models;
  args.target_workload = input.target_workload;

  // `vgpu sim`'s figure for this policy and seed.
  auto sim_run = sim::RunSnapshot(input, f.policy, args, f.seed, f.inflate);
  if (!sim_run) return Usage("--policy: " + sim_run.error().message());
  double sim_value = -1;
  for (const sim::LevelValue& l : sim_run->levels) {
    if (l.arrived_pct == f.level) sim_value = std::nearbyint((100 - l.allocated_pct) * 100) / 100;
  }

  ReplaySetup setup;
  setup.nodes = input.nodes;
  setup.models = &models;
  Rng rng(f.seed);
  setup.plan = sim::PlanArrivals(input, f.inflate, rng);
  auto reference = RunReference(setup, f.policy, args, 42, f.level);
  if (!reference) return Usage(reference.error().message());

  const fs::path dir =
      fs::temp_directory_path() / ("vgpu_extender_replay_" + std::to_string(getpid()));
  fs::create_directories(dir);
  FakeApiServer api;
  LoadReplayNodes(setup, &api);
  const int port = vgpu::testing::FreePort();
  const std::string vgpu = f.vgpu.empty() ? SelfDir() + "/vgpu" : f.vgpu;
  vgpu::testing::BackgroundProcess scheduler(
      {vgpu, "scheduler", "--kubeconfig", WriteKubeconfig(api, dir.string()), "--listen",
       "127.0.0.1:" + std::to_string(port), "--metrics-listen", "", "--policy", f.policy,
       "--filter-mode", f.filter_mode, "--narrow-tolerance", std::to_string(f.tolerance),
       "--log-level", "2"},
      {}, (dir / "scheduler.log").string());
  bool ready = false;
  for (int i = 0; i < 3000 && !ready && scheduler.Running(); ++i) {
    httplib::Client cli("127.0.0.1", port);
    auto r = cli.Get("/readyz");
    ready = r && r->status == 200;
    if (!ready) std::this_thread::sleep_for(10ms);
  }
  if (!ready) {
    std::fprintf(stderr, "bench_extender_replay: vgpu scheduler did not get ready:\n%s\n",
                 scheduler.Log().c_str());
    return 1;
  }
  ReplayOptions ro;
  ro.kube.default_scores = f.kube_scores;
  ro.kube.extender_weight = f.weight;
  ro.kube.seed = f.seed;
  ro.last_level = f.level;
  auto replay = RunReplay(setup, &api, port, ro);
  const int stopped = scheduler.Stop(SIGTERM, 10s);
  if (!replay) {
    std::fprintf(stderr, "bench_extender_replay: %s\n%s\n", replay.error().message().c_str(),
                 scheduler.Log().c_str());
    return 1;
  }
  size_t same = 0;
  const size_t n = std::min(replay->chosen.size(), reference->chosen.size());
  for (size_t i = 0; i < n; ++i) same += replay->chosen[i] == reference->chosen[i] ? 1 : 0;
  const double delta = replay->unallocated - sim_value;
  if (f.json) {
    std::printf(
        "{\"nodes\": \"%s\", \"pods\": \"%s\", \"policy\": \"%s\", \"seed\": %llu, "
        "\"filter_mode\": \"%s\", \"narrow_tolerance\": %d, \"kube_scores\": %s, \"weight\": %d, "
        "\"level\": %d, \"sim_unallocated\": %.2f, \"engine_unallocated\": %.2f, "
        "\"replay_unallocated\": %.2f, \"delta\": %.2f, \"pods_replayed\": %lld, "
        "\"cpu_only\": %lld, \"placed\": %lld, \"failed\": %lld, \"bind_errors\": %lld, "
        "\"prioritized\": %lld, \"same_as_engine\": %zu, \"seconds\": %.1f, "
        "\"filter_ms_mean\": %.3f, \"bind_ms_mean\": %.3f}\n",
        f.nodes.c_str(), f.pods.c_str(), f.policy.c_str(), static_cast<unsigned long long>(f.seed),
        f.filter_mode.c_str(), f.tolerance, f.kube_scores ? "true" : "false", f.weight, f.level,
        sim_value, reference->unallocated, replay->unallocated, delta,
        static_cast<long long>(replay->pods), static_cast<long long>(replay->cpu_only),
        static_cast<long long>(replay->placed), static_cast<long long>(replay->failed),
        static_cast<long long>(replay->bind_errors), static_cast<long long>(replay->prioritized),
        same, replay->seconds, Mean(replay->filter_ms), Mean(replay->bind_ms));
  } else {
    std::printf("trace %s on %s, policy %s, seed %llu, inflate %.2f, up to %d%% arrived\n",
                f.pods.c_str(), f.nodes.c_str(), f.policy.c_str(),
                static_cast<unsigned long long>(f.seed), f.inflate, f.level);
    std::printf(
        "extender: --filter-mode %s --narrow-tolerance %d; kube-scheduler scores: %s, "
        "extender weight %d\n",
        f.filter_mode.c_str(), f.tolerance,
        f.kube_scores ? "LeastAllocated + BalancedAllocation" : "none", f.weight);
    std::printf(
        "unallocated GPU %% at %d%%: vgpu sim %.2f | engine with the extender's tie "
        "order %.2f | extender replay %.2f (replay - sim %+.2f)\n",
        f.level, sim_value, reference->unallocated, replay->unallocated, delta);
    std::printf(
        "pods %lld (CPU-only %lld): placed %lld, failed %lld, bind errors %lld, "
        "prioritize asked for %lld; decisions equal to the engine's: %zu of %zu\n",
        static_cast<long long>(replay->pods), static_cast<long long>(replay->cpu_only),
        static_cast<long long>(replay->placed), static_cast<long long>(replay->failed),
        static_cast<long long>(replay->bind_errors), static_cast<long long>(replay->prioritized),
        same, n);
    std::printf("%.1f s (filter %.2f ms, bind %.2f ms mean per call, over HTTP)\n", replay->seconds,
                Mean(replay->filter_ms), Mean(replay->bind_ms));
  }
  fs::remove_all(dir);
  return stopped == 0 ? 0 : 1;
}

}  // namespace
}  // namespace vgpu::k8s::testing

int main(int argc, char** argv) {
  using vgpu::k8s::testing::Usage;
  vgpu::k8s::testing::Flags f;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag.rfind("--benchmark_", 0) == 0) continue;  // scripts/bench passes these to every bench
    if (flag == "--kube-scores") {
      f.kube_scores = true;
      continue;
    }
    if (flag == "--json") {
      f.json = true;
      continue;
    }
    if (flag == "--help" || flag == "-h") return Usage("help") == 2 ? 0 : 0;
    if (i + 1 >= argc) return Usage(flag + ": needs a value");
    const std::string value = argv[++i];
    char* end = nullptr;
    if (flag == "--nodes") {
      f.nodes = value;
    } else if (flag == "--pods") {
      f.pods = value;
    } else if (flag == "--policy") {
      f.policy = value;
    } else if (flag == "--seed") {
      f.seed = std::strtoull(value.c_str(), &end, 10);
      if (*end != '\0') return Usage("--seed: not a number: " + value);
    } else if (flag == "--inflate") {
      f.inflate = std::strtod(value.c_str(), &end);
      if (*end != '\0' || f.inflate <= 0 || f.inflate > 10) return Usage("--inflate: " + value);
    } else if (flag == "--filter-mode") {
      if (value != "narrow" && value != "all") return Usage("--filter-mode: narrow or all");
      f.filter_mode = value;
    } else if (flag == "--narrow-tolerance") {
      f.tolerance = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (*end != '\0' || f.tolerance < 0 || f.tolerance > 10) {
        return Usage("--narrow-tolerance: 0..10");
      }
    } else if (flag == "--weight") {
      f.weight = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (*end != '\0' || f.weight < 1 || f.weight > 1000) return Usage("--weight: 1..1000");
    } else if (flag == "--level") {
      f.level = static_cast<int>(std::strtol(value.c_str(), &end, 10));
      if (*end != '\0' || f.level < 1 || f.level > 130) return Usage("--level: 1..130");
    } else if (flag == "--vgpu") {
      f.vgpu = value;
    } else {
      return Usage("unknown flag " + flag);
    }
  }
  vgpu::SetLogLevel(vgpu::LogLevel::kError);
  return vgpu::k8s::testing::Run(f);
}
