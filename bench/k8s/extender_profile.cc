// Where a filter + prioritize pair's time goes inside `vgpu scheduler`, stage by stage, on the
// benchmark's 1,000-node cache (bench_cluster.h), single-threaded and without HTTP, then the
// same verbs over HTTP on loopback from one sequential client (so the HTTP and socket share
// shows as the difference). Deterministic enough to run under valgrind --tool=callgrind.
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
#include "k8s/json_scan.h"
#include "k8s/name_index.h"

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
  if (!h.Start().ok()) return 1;
  const std::string names_json = NamesJson(names);
  std::vector<Json> pods = BenchPods();
  // One request per (shape, uid): the bodies kube-scheduler would send.
  const int kBodies = 64;
  std::vector<std::string> filter_bodies, prio_bodies;
  std::vector<std::vector<std::string>> feasible(kBodies);
  for (int i = 0; i < kBodies; ++i) {
    Json pod = pods[static_cast<size_t>(i) % pods.size()];
    pod["metadata"]["uid"] = "profile-" + std::to_string(i);
    filter_bodies.push_back(ExtenderArgsBody(pod.dump(), names_json));
    auto args = ParseExtenderArgs(filter_bodies.back());
    auto req = ParsePodGpuRequest(args->pod, state.options().request);
    feasible[static_cast<size_t>(i)] = state.Filter(*req, names).feasible;
    prio_bodies.push_back(
        ExtenderArgsBody(pod.dump(), NamesJson(feasible[static_cast<size_t>(i)])));
  }
  const auto at = [](const std::vector<std::string>& v, int i) -> const std::string& {
    return v[static_cast<size_t>(i) % v.size()];
  };
  size_t sink = 0;
  std::printf("filter: %zu-byte body, %zu node names; %zu feasible on average\n",
              filter_bodies[0].size(), names.size(), feasible[0].size());
  double parse = 0;
  parse += Stage("split the body (ScanObjectMembers)", iterations,
                 [&](int i) { sink += ScanObjectMembers(at(filter_bodies, i))->size(); });
  const std::string_view pod_span = (*ScanObjectMembers(filter_bodies[0]))[0].second;
  parse += Stage("parse the Pod (nlohmann DOM)", iterations,
                 [&](int) { sink += Json::parse(pod_span).size(); });
  const std::string_view names_span = (*ScanObjectMembers(filter_bodies[0]))[2].second;
  parse += Stage("read NodeNames (ScanStringArray)", iterations, [&](int) {
    std::vector<std::string> out;
    ScanStringArray(names_span, &out);
    sink += out.size();
  });
  std::printf("  %-44s %8.1f us\n", "= ParseExtenderArgs (sum)", parse);
  Stage("ParseExtenderArgs (measured)", iterations,
        [&](int i) { sink += ParseExtenderArgs(at(filter_bodies, i))->node_names.size(); });
  const Json pod0 = Json::parse(pod_span);
  Stage("ParsePodGpuRequest", iterations,
        [&](int) { sink += ParsePodGpuRequest(pod0, state.options().request)->containers.size(); });
  NameIndex index;
  index.Build(&names);
  Stage("1,000 name lookups (NameIndex)", iterations, [&](int) {
    for (const std::string& n : names) sink += index.Find(n).value_or(0);
  });
  std::vector<PodGpuRequest> reqs;
  for (int i = 0; i < kBodies; ++i) {
    auto args = ParseExtenderArgs(filter_bodies[static_cast<size_t>(i)]);
    reqs.push_back(*ParsePodGpuRequest(args->pod, state.options().request));
  }
  Stage("PlacementState::Filter (lookup+engine+reasons)", iterations, [&](int i) {
    sink += state.Filter(reqs[static_cast<size_t>(i % kBodies)], names).feasible.size();
  });
  const auto fargs = ParseExtenderArgs(filter_bodies[0]);
  FilterResult fr = state.Filter(reqs[0], names);
  FilterAnswer fa{fr.feasible, fr.failed, fr.unresolvable, ""};
  Stage("FilterResultJson", iterations, [&](int) { sink += FilterResultJson(fa, *fargs).size(); });
  const double filter_us = Stage("= Extender::Filter (measured)", iterations, [&](int i) {
    sink += h.extender().Filter(at(filter_bodies, i)).body.size();
  });

  std::printf("prioritize: %zu-byte body\n", prio_bodies[0].size());
  Stage("ParseExtenderArgs", iterations,
        [&](int i) { sink += ParseExtenderArgs(at(prio_bodies, i))->node_names.size(); });
  Stage("PlacementState::Score", iterations, [&](int i) {
    sink += state
                .Score(reqs[static_cast<size_t>(i % kBodies)],
                       feasible[static_cast<size_t>(i % kBodies)])
                .size();
  });
  const std::vector<int64_t> scores = state.Score(reqs[0], feasible[0]);
  Stage("HostPriorityListJson", iterations,
        [&](int) { sink += HostPriorityListJson(feasible[0], scores).size(); });
  const double prio_us = Stage("= Extender::Prioritize (measured)", iterations, [&](int i) {
    sink += h.extender().Prioritize(at(prio_bodies, i)).body.size();
  });
  std::printf("handlers, filter + prioritize: %.1f us\n", filter_us + prio_us);

  // The same pairs over HTTP on loopback, one client in sequence: process CPU per pair covers
  // client, server and the kernel's loopback work.
  httplib::Client cli("127.0.0.1", h.port());
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);
  const auto pair = [&](int i) {
    auto f = cli.Post("/filter", at(filter_bodies, i), "application/json");
    auto p = cli.Post("/prioritize", at(prio_bodies, i), "application/json");
    sink += (f ? f->body.size() : 0) + (p ? p->body.size() : 0);
  };
  pair(0);
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
  std::printf("  %-44s %8.1f us\n", "  of which outside the handlers",
              all - client - filter_us - prio_us);
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
