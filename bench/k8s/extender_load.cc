// Load test of `vgpu scheduler`'s extender verbs over HTTP on loopback, shaped like the issue's
// acceptance figure: a 1,000-node cache (8 GPUs each, two GPU models, a third of the GPUs
// partly used), N concurrent kube-scheduler clients each running filter then prioritize with all
// 1,000 node names (nodeCacheCapable), for a fixed time. Reports p50/p90/p99/max per verb and per
// filter+prioritize pair, throughput and errors. Then 40 pods for one node are bound at once
// through a local HTTPS API server, and the time to bind all of them is reported.
//
//   build/bin/bench_extender [--clients 64] [--seconds 10] [--nodes 1000] [--policy default]
//                            [--rate R]   (R pairs/s per client; default: closed loop, no pause)
#include <httplib.h>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "harness.h"
#include "k8s/json_scan.h"

namespace vgpu::k8s::testing {
namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  int clients = 64;
  double seconds = 10;
  int nodes = 1000;
  std::string policy = "default";
  double rate = 0;  // filter+prioritize pairs per second per client; 0 = as fast as possible
};

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i =
      std::min(v.size() - 1, static_cast<size_t>(p / 100.0 * static_cast<double>(v.size())));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(i), v.end());
  return v[i];
}

void Report(const char* what, std::vector<double> ms) {
  const double max = ms.empty() ? 0 : *std::max_element(ms.begin(), ms.end());
  const double p50 = Percentile(ms, 50), p90 = Percentile(ms, 90), p99 = Percentile(ms, 99);
  std::printf("  %-22s n=%-8zu p50 %7.3f ms  p90 %7.3f ms  p99 %7.3f ms  max %7.3f ms\n", what,
              ms.size(), p50, p90, p99, max);
}

int LoadTest(const Options& o) {
  StateOptions so;
  so.policy = o.policy;
  ExtenderHarness h(nullptr, so, {}, /*keep_alive_seconds=*/60);
  PlacementState& state = h.state();
  std::vector<std::string> names;
  for (int n = 0; n < o.nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "gpu-node-%04d", n);
    names.push_back(name);
    const bool big = n % 5 < 3;
    state.UpsertNode(
        name, *ParseInventory(InventoryJson(name, 8, big ? "NVIDIA A100-SXM4-80GB" : "NVIDIA L4",
                                            big ? 81920 : 23034)));
  }
  // A third of the GPUs carry pods already.
  Rng rng(7);
  int placed = 0;
  for (int i = 0; i < o.nodes * 8 / 3; ++i) {
    PodGpuRequest r;
    ContainerGpuRequest c;
    c.name = "main";
    c.count = 1;
    c.cores = 10 + static_cast<int>(rng.UniformInt(6)) * 10;
    c.memory_mib = 2000 + static_cast<int64_t>(rng.UniformInt(8)) * 1000;
    r.containers.push_back(c);
    const std::string uid = "pre-" + std::to_string(i);
    auto t = state.Assume(uid, "bench", uid, r, names[rng.UniformInt(names.size())]);
    if (t) {
      state.BindSucceeded(uid, t->generation);
      ++placed;
    }
  }
  if (!h.Start().ok()) {
    std::fprintf(stderr, "cannot start the extender\n");
    return 1;
  }
  // Pods as kube-scheduler sends them: the realistic fixture pod with varied GPU requests.
  const Json base = Fixture("pod_train.json");
  const int kShapes = 6;
  const int cores[kShapes] = {10, 20, 30, 50, 100, 100};
  const int counts[kShapes] = {1, 1, 1, 1, 1, 2};
  const int64_t mems[kShapes] = {4000, 8000, 12000, 20000, 0, 0};
  std::vector<Json> pods;
  for (int s = 0; s < kShapes; ++s) {
    Json pod = base;
    Json& lim = pod["spec"]["containers"][0]["resources"]["limits"];
    lim["nvidia.com/gpu"] = std::to_string(counts[s]);
    lim["nvidia.com/gpucores"] = std::to_string(cores[s]);
    if (mems[s] > 0) {
      lim["nvidia.com/gpumem"] = std::to_string(mems[s]);
    } else {
      lim.erase("nvidia.com/gpumem");
    }
    pod["spec"]["containers"][0]["resources"]["requests"] = lim;
    pod["metadata"]["annotations"] = Json::object();
    pods.push_back(pod);
  }
  const size_t body_bytes = ArgsBody(pods[0], names).size();
  char mode[64] = "closed loop";
  if (o.rate > 0) std::snprintf(mode, sizeof mode, "%.1f pairs/s each", o.rate);
  std::printf(
      "extender load test: %d nodes (%d GPUs, %d pods placed), %d clients (%s), %.0f s, "
      "policy %s, filter body %zu bytes\n",
      o.nodes, o.nodes * 8, placed, o.clients, mode, o.seconds, o.policy.c_str(), body_bytes);

  // Bodies are assembled the way a client would serialize them; the node-name list is the same
  // for every pod, so it is serialized once.
  std::string names_json = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) names_json += ',';
    AppendJsonString(&names_json, names[i]);
  }
  names_json += ']';
  std::atomic<bool> stop{false}, go{false};
  std::atomic<int> warm{0};
  std::atomic<uint64_t> errors{0}, pairs{0};
  std::vector<std::vector<double>> filter_ms(static_cast<size_t>(o.clients)),
      prio_ms(static_cast<size_t>(o.clients)), pair_ms(static_cast<size_t>(o.clients));
  std::vector<std::thread> threads;
  for (int c = 0; c < o.clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", h.port());
      cli.set_keep_alive(true);
      cli.set_tcp_nodelay(true);  // as Go clients (kube-scheduler) do
      cli.set_read_timeout(30, 0);
      uint64_t i = 0;
      bool warmed = false;
      Clock::time_point next{};  // paced mode: when the next pair is due
      while (!stop.load(std::memory_order_relaxed)) {
        if (warmed && o.rate > 0) {
          std::this_thread::sleep_until(next);
          next += std::chrono::duration_cast<Clock::duration>(
              std::chrono::duration<double>(1.0 / o.rate));
        }
        // In paced mode latency counts from when the pair was due, so a client that falls
        // behind is not hiding the queueing it suffers.
        const auto due = warmed && o.rate > 0
                             ? next - std::chrono::duration_cast<Clock::duration>(
                                          std::chrono::duration<double>(1.0 / o.rate))
                             : Clock::now();
        Json pod = pods[(static_cast<size_t>(c) + i) % pods.size()];
        pod["metadata"]["uid"] = "bench-" + std::to_string(c) + "-" + std::to_string(i++);
        const std::string pod_json = pod.dump();
        const std::string fbody =
            "{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":" + names_json + "}";
        const auto a = Clock::now();
        auto fr = cli.Post("/filter", fbody, "application/json");
        const auto b = Clock::now();
        std::vector<std::string> feasible;
        bool ok = fr && fr->status == 200;
        if (ok) {
          auto members = ScanObjectMembers(fr->body);
          ok = members.has_value();
          for (const auto& [k, v] : members.value_or(decltype(members)::value_type{})) {
            if (k == "NodeNames") ok = ok && ScanStringArray(v, &feasible);
            if (k == "Error") ok = ok && v == "\"\"";
          }
        }
        if (!ok) {
          if (errors++ < 5) {
            std::fprintf(stderr, "filter failed: %s\n",
                         fr ? (std::to_string(fr->status) + " " + fr->body.substr(0, 200)).c_str()
                            : httplib::to_string(fr.error()).c_str());
          }
          continue;
        }
        std::string pbody = "{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":[";
        for (size_t k = 0; k < feasible.size(); ++k) {
          if (k > 0) pbody += ',';
          AppendJsonString(&pbody, feasible[k]);
        }
        pbody += "]}";
        const auto d = Clock::now();
        auto pr = cli.Post("/prioritize", pbody, "application/json");
        const auto e = Clock::now();
        if (!pr || pr->status != 200) {
          ++errors;
          continue;
        }
        if (!warmed) {  // the first pair opens the connection: not measured
          warmed = true;
          ++warm;
          while (!go.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
          // Spread the paced clients' phases over one period.
          next = Clock::now() +
                 std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                     o.rate > 0 ? (c + 0.5) / (o.clients * o.rate) : 0));
          continue;
        }
        const auto ms = [](auto x, auto y) {
          return std::chrono::duration<double, std::milli>(y - x).count();
        };
        filter_ms[static_cast<size_t>(c)].push_back(ms(a, b));
        prio_ms[static_cast<size_t>(c)].push_back(ms(d, e));
        // The pair: from when it was due to the prioritize answer, minus the client's own work
        // between the two requests.
        pair_ms[static_cast<size_t>(c)].push_back(ms(due, e) - ms(b, d));
        ++pairs;
      }
    });
  }
  while (warm.load() < o.clients && errors.load() == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  rusage ru0{};
  getrusage(RUSAGE_SELF, &ru0);
  const auto t0 = Clock::now();
  go = true;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
  stop = true;
  for (auto& t : threads) t.join();
  const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
  rusage ru1{};
  getrusage(RUSAGE_SELF, &ru1);
  const auto cpu = [](const rusage& r) {
    return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
           static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec) * 1e-6;
  };
  std::vector<double> f, p, fp;
  for (int c = 0; c < o.clients; ++c) {
    f.insert(f.end(), filter_ms[static_cast<size_t>(c)].begin(),
             filter_ms[static_cast<size_t>(c)].end());
    p.insert(p.end(), prio_ms[static_cast<size_t>(c)].begin(),
             prio_ms[static_cast<size_t>(c)].end());
    fp.insert(fp.end(), pair_ms[static_cast<size_t>(c)].begin(),
              pair_ms[static_cast<size_t>(c)].end());
  }
  Report("filter", f);
  Report("prioritize", p);
  Report("filter + prioritize", fp);
  std::printf("  throughput: %.0f filter+prioritize pairs/s (%.0f requests/s); errors: %llu\n",
              static_cast<double>(pairs.load()) / secs,
              2 * static_cast<double>(pairs.load()) / secs,
              static_cast<unsigned long long>(errors.load()));
  std::printf(
      "  CPU: %.2f cores busy of %u; %.0f us of CPU per pair (clients and server together)\n",
      (cpu(ru1) - cpu(ru0)) / secs, std::thread::hardware_concurrency(),
      (cpu(ru1) - cpu(ru0)) * 1e6 / static_cast<double>(std::max<uint64_t>(1, pairs.load())));
  h.Stop();
  return errors.load() == 0 ? 0 : 1;
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
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--clients")
      o.clients = std::atoi(argv[i + 1]);
    else if (flag == "--seconds")
      o.seconds = std::atof(argv[i + 1]);
    else if (flag == "--nodes")
      o.nodes = std::atoi(argv[i + 1]);
    else if (flag == "--policy")
      o.policy = argv[i + 1];
    else if (flag == "--rate")
      o.rate = std::atof(argv[i + 1]);
    else {
      std::fprintf(stderr,
                   "usage: bench_extender [--clients N] [--seconds S] [--nodes N] [--policy P] "
                   "[--rate PAIRS_PER_S_PER_CLIENT]\n");
      return 2;
    }
  }
  vgpu::SetLogLevel(vgpu::LogLevel::kError);
  const int a = vgpu::k8s::testing::LoadTest(o);
  const int b = vgpu::k8s::testing::BindOneNode();
  return a != 0 ? a : b;
}
