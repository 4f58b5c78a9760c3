// Where a filter + prioritize pair's time goes inside `vgpu scheduler`, stage by stage, on the
// benchmark's 1,000-node cache (bench_cluster.h), single-threaded and without HTTP (with and
// without the per-shape verdicts PlacementState remembers), then the same verbs over HTTP on
// loopback from one sequential client (so the HTTP and socket share shows as the difference;
// every pair is a new pod). Deterministic enough to run under valgrind --tool=callgrind.
//
//   build/bin/bench_extender_profile [--iterations N] [--nodes N]
#include <httplib.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "bench_cluster.h"
#include "common/log.h"
#include "harness.h"
#include "k8s/api/json_scan.h"
#include "k8s/extender/name_index.h"
#include "k8s/extender/pod_request_cache.h"

namespace vgpu::k8s::bench {
namespace {

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double ProcessCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Runs fn `n` times; prints and returns the thread CPU time per call in µs.
double Stage(const char* name, int n, const std::function<void(int)>& fn) {
  fn(0);  // warm
  const double t0 = ThreadCpuSeconds();
  for (int i = 0; i < n; ++i) fn(i);
  const double us = (ThreadCpuSeconds() - t0) * 1e6 / n;
  std::printf("  %-44s %8.1f us\n", name, us);
  return us;
}

int Run(int iterations, int nodes) {
  testing::ExtenderHarness h(nullptr, StateOptions{}, {}, /*keep_alive_seconds=*/60);
  PlacementState& state = h.state();
  const std::vector<std::string> names = BuildBenchCluster(state, nodes, nullptr);
  StateOptions no_memo;
  no_memo.memo_shapes = 0;
  auto cold_state = PlacementState::Create(no_memo);
  if (!cold_state) return 1;
  BuildBenchCluster(**cold_state, nodes, nullptr);
  if (!h.Start().ok()) return 1;
  const std::string names_json = NamesJson(names);
  std::vector<Json> pods = BenchPods();
  // Bodies as kube-scheduler sends them: `iterations` distinct pods (each its own UID), so the
  // first filter of each pays the full parse, as every new pod does.
  std::vector<std::string> filter_bodies, prio_bodies;
  std::vector<std::vector<std::string>> feasible;
  std::vector<PodGpuRequest> reqs;
  for (int i = 0; i < iterations + 1; ++i) {
    Json pod = pods[static_cast<size_t>(i) % pods.size()];
    pod["metadata"]["uid"] = "profile-" + std::to_string(i);
    filter_bodies.push_back(ExtenderArgsBody(pod.dump(), names_json));
    auto args = ParseExtenderArgs(filter_bodies.back());
    reqs.push_back(*ParsePodGpuRequest(args->pod, state.options().request));
    feasible.push_back(state.Filter(reqs.back(), names).feasible);
    prio_bodies.push_back(ExtenderArgsBody(pod.dump(), NamesJson(feasible.back())));
  }
  // New pods of new shapes: each with an annotation of its own, so no two share a parse.
  std::vector<std::string> unique_bodies;
  for (int i = 0; i < iterations + 1; ++i) {
    Json pod = pods[static_cast<size_t>(i) % pods.size()];
    pod["metadata"]["uid"] = "unique-" + std::to_string(i);
    pod["metadata"]["annotations"]["bench.vgpu.io/pod"] = std::to_string(i);
    unique_bodies.push_back(ExtenderArgsBody(pod.dump(), names_json));
  }
  // A second set of new pods for the pairs (HTTP and not).
  std::vector<std::string> http_filter, http_prio;
  for (int i = 0; i < 2 * iterations + 2; ++i) {
    Json pod = pods[static_cast<size_t>(i) % pods.size()];
    pod["metadata"]["uid"] = "pair-" + std::to_string(i);
    http_filter.push_back(ExtenderArgsBody(pod.dump(), names_json));
    http_prio.push_back(
        ExtenderArgsBody(pod.dump(), NamesJson(feasible[static_cast<size_t>(i) % pods.size()])));
  }
  const auto at = [](const auto& v, int i) -> const auto& { return v[static_cast<size_t>(i)]; };
  size_t sink = 0;
  std::printf("filter: %zu-byte body, %zu node names; %zu feasible for the first shape\n",
              filter_bodies[0].size(), names.size(), feasible[0].size());
  Stage("split the body (ScanExtenderArgsView)", iterations,
        [&](int i) { sink += ScanExtenderArgsView(at(filter_bodies, i))->node_names.size(); });
  const std::string_view pod_span = ScanExtenderArgsView(filter_bodies[0])->pod;
  Stage("parse the Pod (nlohmann DOM)", iterations,
        [&](int) { sink += Json::parse(pod_span).size(); });
  Stage("a replica's request key (PodRequestKeyOf)", iterations,
        [&](int) { sink += PodRequestKeyOf(pod_span)->text.size(); });
  const Json pod0 = Json::parse(pod_span);
  Stage("ParsePodGpuRequest", iterations,
        [&](int) { sink += ParsePodGpuRequest(pod0, state.options().request)->containers.size(); });
  NameIndex index;
  index.Build(&names);
  Stage("1,000 name lookups (NameIndex)", iterations, [&](int) {
    for (const std::string& n : names) sink += index.Find(n).value_or(0);
  });
  const std::vector<std::string_view> views(names.begin(), names.end());
  NodeVerdicts verdicts;
  Stage("FilterVerdicts, nothing remembered", iterations, [&](int i) {
    (*cold_state)->FilterVerdicts({}, at(reqs, i), views, &verdicts);
    sink += verdicts.counts[0];
  });
  Stage("FilterVerdicts, shape remembered", iterations, [&](int i) {
    state.FilterVerdicts({}, at(reqs, i), views, &verdicts);
    sink += verdicts.counts[0];
  });
  const double filter_us = Stage("= Extender::Filter, a new pod each time", iterations, [&](int i) {
    sink += h.extender().Filter(at(filter_bodies, i)).body.size();
  });
  Stage("  Extender::Filter, a new pod of a new shape", iterations,
        [&](int i) { sink += h.extender().Filter(at(unique_bodies, i)).body.size(); });
  Stage("  Extender::Filter, the same pod again", iterations,
        [&](int) { sink += h.extender().Filter(filter_bodies[0]).body.size(); });

  std::printf("prioritize: %zu-byte body\n", prio_bodies[0].size());
  std::vector<std::vector<std::string_view>> feasible_views;
  for (const auto& f : feasible) feasible_views.emplace_back(f.begin(), f.end());
  Stage("ScoreViews, nothing remembered", iterations, [&](int i) {
    sink += (*cold_state)->ScoreViews({}, at(reqs, i), at(feasible_views, i)).size();
  });
  Stage("ScoreViews, remembered", iterations,
        [&](int i) { sink += state.ScoreViews({}, at(reqs, i), at(feasible_views, i)).size(); });
  const std::vector<int64_t> scores = state.ScoreViews({}, reqs[0], feasible_views[0]);
  Stage("HostPriorityListJson", iterations,
        [&](int) { sink += HostPriorityListJson(feasible_views[0], scores).size(); });
  // Prioritize right after its filter, as kube-scheduler calls them (a new pod each time).
  const double pair_us = Stage("= Extender::Filter + Prioritize, new pods", iterations, [&](int i) {
    sink += h.extender().Filter(at(http_filter, i)).body.size();
    sink += h.extender().Prioritize(at(http_prio, i)).body.size();
  });
  std::printf("  %-44s %8.1f us\n", "  of which Prioritize", pair_us - filter_us);

  // The same pairs over HTTP on loopback, one client in sequence: process CPU per pair covers
  // client, server and the kernel's loopback work.
  httplib::Client cli("127.0.0.1", h.port());
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);
  const auto pair = [&](int i) {
    const size_t k = static_cast<size_t>(iterations + 1 + i);
    auto f = cli.Post("/filter", http_filter[k], "application/json");
    auto p = cli.Post("/prioritize", http_prio[k], "application/json");
    sink += (f ? f->body.size() : 0) + (p ? p->body.size() : 0);
  };
  pair(-1);
  const double c0 = ProcessCpuSeconds(), t0 = ThreadCpuSeconds();
  const auto w0 = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) pair(i);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count() *
                      1e6 / iterations;
  const double client = (ThreadCpuSeconds() - t0) * 1e6 / iterations;
  const double all = (ProcessCpuSeconds() - c0) * 1e6 / iterations;
  std::printf("over HTTP (one sequential httplib client, keep-alive):\n");
  std::printf("  %-44s %8.1f us\n", "wall time per pair", wall);
  std::printf("  %-44s %8.1f us\n", "CPU per pair, client thread", client);
  std::printf("  %-44s %8.1f us\n", "CPU per pair, server threads", all - client);
  std::printf("  %-44s %8.1f us\n", "  of which outside the handlers", all - client - pair_us);
  h.Stop();
  return sink == 0 ? 1 : 0;
}

}  // namespace
}  // namespace vgpu::k8s::bench

int main(int argc, char** argv) {
  int iterations = 2000, nodes = 1000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--iterations") {
      iterations = std::atoi(argv[i + 1]);
    } else if (flag == "--nodes") {
      nodes = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "usage: bench_extender_profile [--iterations N] [--nodes N]\n");
      return 2;
    }
  }
  vgpu::SetLogLevel(vgpu::LogLevel::kError);
  return vgpu::k8s::bench::Run(iterations, nodes);
}
