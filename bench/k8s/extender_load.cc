// Load test of `vgpu scheduler`'s extender verbs over HTTP on loopback, shaped like the issue's
// acceptance figure: a 1,000-node cache (bench_cluster.h: 8 GPUs each, two GPU models, a third
// of the GPUs partly used), N concurrent kube-scheduler clients each running filter then
// prioritize with all 1,000 node names (nodeCacheCapable), for a fixed time; each pair is a new
// pod (its own UID). Closed loop (each client sends its next pair as soon as the last is
// answered) or paced (--rate pairs/s per client, latency counted from when a pair was due).
// Reports p50/p99/p99.9/max per verb and per filter+prioritize pair, throughput, errors and CPU
// per pair split into clients and server. Clients are raw keep-alive sockets (raw_http.h) that
// splice the filter's NodeNames into the prioritize body, so they cost little next to the
// server. Then 40 pods for one node are bound at once through a local HTTPS API server.
//
//   build/bin/bench_extender [--clients 64 | --clients 8,16,32,64] [--seconds 10]
//                            [--nodes 1000] [--policy default] [--rate R] [--no-memo]
//                            [--no-bind] [--cpu-only] [--unique-specs]
// --cpu-only sends pods without GPUs (CPU and memory requests only), which the extender also
// places when kube-scheduler sends every pod to it. By default the pods are replicas of six
// templates (their spec and annotations repeat, as a Deployment's or a Job's do, so the extender
// parses each template's request once); --unique-specs gives every pod an annotation of its own,
// so every pod is a new shape and its request is parsed in full.
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench_cluster.h"
#include "common/log.h"
#include "harness.h"
#include "k8s/api/json_scan.h"
#include "raw_http.h"

namespace vgpu::k8s::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::vector<int> clients = {64};
  double seconds = 10;
  int nodes = 1000;
  std::string policy = "default";
  double rate = 0;            // filter+prioritize pairs per second per client; 0 = closed loop
  bool memo = true;           // PlacementState's per-shape verdicts (StateOptions::memo_shapes)
  bool bind = true;           // also the 40-pods-for-one-node bind test
  bool cpu_only = false;      // pods without GPUs (CPU and memory only)
  bool unique_specs = false;  // every pod its own annotation: no two pods share a parse
};

double CpuSeconds(clockid_t which) {
  timespec ts{};
  clock_gettime(which, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i =
      std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

void Report(const char* what, std::vector<double> ms) {
  const double max = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
  const double p50 = Percentile(ms, 50), p99 = Percentile(ms, 99), p999 = Percentile(ms, 99.9);
  std::printf("  %-20s n=%-8zu p50 %7.3f ms  p99 %7.3f ms  p99.9 %7.3f ms  max %7.3f ms\n", what,
              ms.size(), p50, p99, p999, max);
}

// A pod's JSON text around its UID (in metadata.uid, and with --unique-specs in an annotation
// too), so each request is a new pod without re-serializing.
struct PodTemplate {
  std::vector<std::string> parts;  // joined by the UID
  void AppendTo(std::string* out, const std::string& uid) const {
    for (size_t k = 0; k < parts.size(); ++k) {
      if (k > 0) *out += uid;
      *out += parts[k];
    }
  }
};

std::vector<PodTemplate> Templates(bool cpu_only, bool unique_specs) {
  std::vector<PodTemplate> out;
  for (Json pod : bench::BenchPods(cpu_only)) {
    pod["metadata"]["uid"] = "@UID@";
    if (unique_specs) pod["metadata"]["annotations"]["bench.vgpu.io/pod"] = "@UID@";
    const std::string text = pod.dump();
    PodTemplate t;
    size_t from = 0;
    for (size_t at = text.find("@UID@"); at != std::string::npos; at = text.find("@UID@", from)) {
      t.parts.push_back(text.substr(from, at - from));
      from = at + 5;
    }
    t.parts.push_back(text.substr(from));
    out.push_back(std::move(t));
  }
  return out;
}

// One round with `clients` clients; false on errors.
bool Round(int port, const Options& o, int clients, const std::string& names_json,
           const std::vector<PodTemplate>& pods) {
  std::atomic<bool> stop{false}, go{false};
  std::atomic<int> warm{0};
  std::atomic<uint64_t> errors{0}, pairs{0};
  std::vector<double> client_cpu(static_cast<size_t>(clients), 0);
  std::vector<std::vector<double>> filter_ms(static_cast<size_t>(clients)),
      prio_ms(static_cast<size_t>(clients)), pair_ms(static_cast<size_t>(clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      const auto cs = static_cast<size_t>(c);
      bench::RawHttpClient cli("127.0.0.1", port);
      std::string fbody, pbody, fresp, presp, uid;
      uint64_t i = 0;
      bool warmed = false;
      double cpu0 = 0;
      const auto period = std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(o.rate > 0 ? 1.0 / o.rate : 0));
      Clock::time_point next{};  // paced mode: when the next pair is due
      while (!stop.load(std::memory_order_relaxed)) {
        Clock::time_point due = Clock::now();
        if (warmed && o.rate > 0) {
          std::this_thread::sleep_until(next);
          due = next;  // latency counts from when the pair was due
          next += period;
        }
        const PodTemplate& pod = pods[(cs + i) % pods.size()];
        uid = "bench-" + std::to_string(c) + "-" + std::to_string(i++);
        fbody.clear();
        fbody += "{\"Pod\":";
        pod.AppendTo(&fbody, uid);
        const size_t pod_end = fbody.size();
        fbody += ",\"Nodes\":null,\"NodeNames\":";
        fbody += names_json;
        fbody += '}';
        const auto a = Clock::now();
        const int fs = cli.Post("/filter", fbody, &fresp);
        const auto b = Clock::now();
        std::string_view feasible;
        bool ok = fs == 200;
        if (ok) {
          auto members = ScanObjectMembers(fresp);
          ok = members.has_value();
          for (const auto& [k, v] : members.value_or(decltype(members)::value_type{})) {
            if (k == "NodeNames") feasible = v;
            if (k == "Error") ok = ok && v == "\"\"";
          }
          ok = ok && feasible.starts_with('[');
        }
        if (!ok) {
          if (errors++ < 5) {
            std::fprintf(stderr, "filter failed: %d %s\n", fs, fresp.substr(0, 200).c_str());
          }
          continue;
        }
        pbody.assign(fbody, 0, pod_end);
        pbody += ",\"Nodes\":null,\"NodeNames\":";
        pbody += feasible;
        pbody += '}';
        const auto d = Clock::now();
        const int ps = cli.Post("/prioritize", pbody, &presp);
        const auto e = Clock::now();
        if (ps != 200 || !presp.starts_with('[')) {
          if (errors++ < 5) {
            std::fprintf(stderr, "prioritize failed: %d %s\n", ps, presp.substr(0, 200).c_str());
          }
          continue;
        }
        if (!warmed) {  // the first pair opens the connection: not measured
          warmed = true;
          ++warm;
          while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          cpu0 = CpuSeconds(CLOCK_THREAD_CPUTIME_ID);
          // Spread the paced clients' phases over one period.
          next = Clock::now() +
                 std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                     o.rate > 0 ? (c + 0.5) / (clients * o.rate) : 0));
          continue;
        }
        const auto ms = [](auto x, auto y) {
          return std::chrono::duration<double, std::milli>(y - x).count();
        };
        filter_ms[cs].push_back(ms(a, b));
        prio_ms[cs].push_back(ms(d, e));
        // The pair: from when it was due to the prioritize answer, minus the client's own work
        // between the two requests.
        pair_ms[cs].push_back(ms(due, e) - ms(b, d));
        ++pairs;
      }
      client_cpu[cs] = CpuSeconds(CLOCK_THREAD_CPUTIME_ID) - cpu0;
    });
  }
  while (warm.load() < clients && errors.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  const double p0 = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID);
  const auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  const double all_cpu = CpuSeconds(CLOCK_PROCESS_CPUTIME_ID) - p0;
  double clients_cpu = 0;
  for (double x : client_cpu) clients_cpu += x;
  std::vector<double> f, p, fp;
  for (size_t c = 0; c < static_cast<size_t>(clients); ++c) {
    f.insert(f.end(), filter_ms[c].begin(), filter_ms[c].end());
    p.insert(p.end(), prio_ms[c].begin(), prio_ms[c].end());
    fp.insert(fp.end(), pair_ms[c].begin(), pair_ms[c].end());
  }
  char mode[64] = "closed loop";
  if (o.rate > 0) std::snprintf(mode, sizeof mode, "%.1f pairs/s each", o.rate);
  std::printf("%d clients (%s), %.0f s:\n", clients, mode, o.seconds);
  Report("filter", f);
  Report("prioritize", p);
  Report("filter + prioritize", fp);
  const double n = static_cast<double>(std::max<uint64_t>(1, pairs.load()));
  std::printf(
      "  throughput %.0f pairs/s (%.0f requests/s); errors %llu; CPU per pair: server %.0f us, "
      "clients %.0f us (%.2f of %u cores busy)\n",
      static_cast<double>(pairs.load()) / secs, 2 * static_cast<double>(pairs.load()) / secs,
      static_cast<unsigned long long>(errors.load()), (all_cpu - clients_cpu) * 1e6 / n,
      clients_cpu * 1e6 / n, all_cpu / secs, std::thread::hardware_concurrency());
  std::fflush(stdout);
  return errors.load() == 0;
}

int LoadTest(const Options& o) {
  StateOptions so;
  so.policy = o.policy;
  if (!o.memo) so.memo_shapes = 0;
  // The harness's server has 96 workers; cpp-httplib gives each keep-alive connection one.
  ExtenderHarness h(nullptr, so, {}, /*keep_alive_seconds=*/60);
  int placed = 0;
  const std::vector<std::string> names = bench::BuildBenchCluster(h.state(), o.nodes, &placed);
  if (!h.Start().ok()) {
    std::fprintf(stderr, "cannot start the extender\n");
    return 1;
  }
  const std::vector<PodTemplate> pods = Templates(o.cpu_only, o.unique_specs);
  const std::string names_json = bench::NamesJson(names);
  std::string sample;
  pods[0].AppendTo(&sample, "bench-0-0");
  const size_t body_bytes = sample.size() + names_json.size() + 48;
  std::printf(
      "extender load test: %d nodes (%d GPUs, %d pods placed), policy %s, verdict memo %s, "
      "pods %s, filter body %zu bytes\n",
      o.nodes, o.nodes * 8, placed, o.policy.c_str(), o.memo ? "on" : "off",
      o.unique_specs ? "each its own spec" : "replicas of 6 templates", body_bytes);
  bool ok = true;
  for (int clients : o.clients) ok = Round(h.port(), o, clients, names_json, pods) && ok;
  h.Stop();
  return ok ? 0 : 1;
}

int BindOneNode() {
  FakeApiServer api;
  api.PutNode(MakeNode(
      "gpu-node-0",
      {{kInventoryAnnotation, InventoryJson("gpu-node-0", 8, "NVIDIA A100-SXM4-80GB", 81920)}}));
  std::vector<Json> pods;
  for (int i = 0; i < 40; ++i) {
    pods.push_back(GpuPod("bench", "infer-" + std::to_string(i), 1, 20, 16000));
    api.PutPod(pods.back());
  }
  ExtenderHarness h(&api);
  if (!h.Start().ok()) return 1;
  for (const Json& pod : pods) h.Post("filter", ArgsBody(pod, {"gpu-node-0"}));
  std::atomic<int> ok{0};
  std::vector<std::thread> binds;
  const auto t0 = Clock::now();
  for (const Json& pod : pods) {
    binds.emplace_back([&, pod] {
      auto [s, b] = h.Post("bind", BindBody(pod, "gpu-node-0"));
      if (s == 200 && b["Error"] == "") ++ok;
    });
  }
  for (auto& t : binds) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  std::printf(
      "40 pods for one node: %d bound in %.3f s (each bind: PATCH annotations + POST "
      "binding to a local HTTPS API server)\n",
      ok.load(), secs);
  return ok.load() == 40 ? 0 : 1;
}

}  // namespace
}  // namespace vgpu::k8s::testing

int main(int argc, char** argv) {
  vgpu::k8s::testing::Options o;
  const auto usage = [] {
    std::fprintf(stderr,
                 "usage: bench_extender [--clients N[,N...]] [--seconds S] [--nodes N] "
                 "[--policy P] [--rate PAIRS_PER_S_PER_CLIENT] [--no-memo] [--no-bind] "
                 "[--cpu-only] [--unique-specs]\n");
    return 2;
  };
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") {
      usage();
      return 0;
    }
    if (flag == "--no-memo") {
      o.memo = false;
      continue;
    }
    if (flag == "--no-bind") {
      o.bind = false;
      continue;
    }
    if (flag == "--cpu-only") {
      o.cpu_only = true;
      continue;
    }
    if (flag == "--unique-specs") {
      o.unique_specs = true;
      continue;
    }
    if (i + 1 >= argc) return usage();
    const char* value = argv[++i];
    if (flag == "--clients") {
      o.clients.clear();
      for (const char* p = value; *p != '\0';) {
        char* end = nullptr;
        const long n = std::strtol(p, &end, 10);
        if (end == p || n < 1 || n > 96) return usage();
        o.clients.push_back(static_cast<int>(n));
        p = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0') return usage();
      }
    } else if (flag == "--seconds") {
      o.seconds = std::atof(value);
    } else if (flag == "--nodes") {
      o.nodes = std::atoi(value);
    } else if (flag == "--policy") {
      o.policy = value;
    } else if (flag == "--rate") {
      o.rate = std::atof(value);
    } else {
      return usage();
    }
  }
  if (o.clients.empty() || o.seconds <= 0 || o.nodes < 1 || o.rate < 0) return usage();
  vgpu::SetLogLevel(vgpu::LogLevel::kError);
  const int a = vgpu::k8s::testing::LoadTest(o);
  const int b = o.bind ? vgpu::k8s::testing::BindOneNode() : 0;
  return a != 0 ? a : b;
}
