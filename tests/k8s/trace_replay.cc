#include "trace_replay.h"

#include <httplib.h>

#include <chrono>
#include <cmath>
#include <unordered_map>

#include "k8s/extender/extender_scores.h"
#include "k8s/wire/gpu_inventory.h"
#include "sched/cluster.h"
#include "sched/scheduler.h"

namespace vgpu::k8s::testing {
namespace {

using Clock = std::chrono::steady_clock;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Round2(double x) { return std::nearbyint(x * 100.0) / 100.0; }

int64_t GpuMemoryOf(const ReplaySetup& s, const sched::GpuSpec& g) {
  return g.memory_mib > 0 ? g.memory_mib : s.unknown_gpu_memory_mib;
}

std::string PodName(size_t i) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "pod-%05zu", i);
  return buf;
}

EmulatedPod EmulatedPodOf(const sched::PodRequest& r) {
  return EmulatedPod{r.cpu_milli, r.memory_mib, r.num_gpus};
}

// The nodes in the simulator's order (its tie-break order, here the order kube-scheduler lists
// them in).
std::vector<size_t> SimOrder(const ReplaySetup& s) {
  std::vector<size_t> order(s.nodes.size());
  for (size_t i = 0; i < s.nodes.size(); ++i) order[s.plan.node_order[i]] = i;
  return order;
}

}  // namespace

Json ReplayNodeObject(const ReplaySetup& s, size_t i) {
  const sched::NodeSpec& n = s.nodes[i];
  NodeInventory inv;
  for (size_t g = 0; g < n.gpus.size(); ++g) {
    InventoryGpu gpu;
    gpu.uuid = "GPU-" + n.name + "-" + std::to_string(g);
    gpu.index = static_cast<int>(g);
    gpu.model = s.models->Name(n.gpus[g].model);
    gpu.memory_mib = GpuMemoryOf(s, n.gpus[g]);
    gpu.units = s.units_per_gpu;
    gpu.numa = 0;
    inv.gpus.push_back(std::move(gpu));
  }
  Json node = MakeNode(n.name, Json{{kInventoryAnnotation, FormatInventory(inv)}});
  node["status"]["allocatable"] = {
      {"cpu", std::to_string(n.cpu_milli) + "m"},
      {"memory", std::to_string(n.memory_mib) + "Mi"},
      {"pods", "1000"},
      {s.prefix + "/gpu", std::to_string(n.gpus.size() * static_cast<size_t>(s.units_per_gpu))}};
  return node;
}

Json ReplayPodObject(const ReplaySetup& s, size_t i) {
  const sched::PodRequest& r = s.plan.pods[i];
  Json requests = Json::object(), limits = Json::object();
  if (r.cpu_milli > 0) requests["cpu"] = std::to_string(r.cpu_milli) + "m";
  if (r.memory_mib > 0) requests["memory"] = std::to_string(r.memory_mib) + "Mi";
  if (r.num_gpus > 0) {
    limits[s.prefix + "/gpu"] = std::to_string(r.num_gpus);
    if (r.gpu_milli < sched::kGpuMilli) {
      // gpucores and gpumem-percentage in whole percent: the trace's shares are multiples of 10.
      const std::string pct = std::to_string((r.gpu_milli + 9) / 10);
      limits[s.prefix + "/gpucores"] = pct;
      limits[s.prefix + "/gpumem-percentage"] = pct;
    }
    for (const auto& [k, v] : limits.items()) requests[k] = v;
  }
  Json resources = {{"requests", requests}};
  if (!limits.empty()) resources["limits"] = limits;
  Json containers = Json::array({{{"name", "main"}, {"resources", resources}}});
  Json annotations = Json::object();
  if (!r.models.IsAny()) {
    std::string types;
    for (size_t m = 0; m < s.models->size(); ++m) {
      if (!r.models.Allows(static_cast<sched::ModelId>(m))) continue;
      types += (types.empty() ? "" : ",") + s.models->Name(static_cast<sched::ModelId>(m));
    }
    annotations[s.prefix + "/use-gputype"] = types;
  }
  return MakePod("replay", PodName(i), "replay-uid-" + std::to_string(i), containers, annotations);
}

void LoadReplayNodes(const ReplaySetup& setup, FakeApiServer* api) {
  for (size_t i = 0; i < setup.nodes.size(); ++i) api->PutNode(ReplayNodeObject(setup, i));
}

int LevelTally::LevelOf(int64_t arrived_milli) const {
  const double num_gpus = double(capacity_) / sched::kGpuMilli;
  return static_cast<int>(std::nearbyint(double(arrived_milli) / num_gpus / 10.0));
}

void LevelTally::Row(int64_t arrived_milli, int64_t allocated_milli) {
  const double num_gpus = double(capacity_) / sched::kGpuMilli;
  auto& [sum, rows] = sums_[LevelOf(arrived_milli)];
  sum += Round2(double(allocated_milli) / num_gpus / 10.0);
  ++rows;
}

double LevelTally::Unallocated(int level) const {
  double sum = 0;
  int64_t rows = 0;
  const auto add = [&](int l) {
    auto it = sums_.find(l);
    if (it == sums_.end()) return;
    sum += it->second.first;
    rows += it->second.second;
  };
  add(level);
  if (rows == 0) {
    add(level - 1);
    add(level + 1);
  }
  if (rows == 0) return -1;
  return Round2(100.0 - Round2(sum / double(rows)));
}

Result<ReplayResult> RunReplay(const ReplaySetup& s, FakeApiServer* api, int port,
                               const ReplayOptions& options) {
  const std::vector<size_t> order = SimOrder(s);
  std::vector<EmulatedNode> enodes;
  std::unordered_map<std::string, size_t> by_name;  // name -> emulator index
  int64_t capacity = 0;
  for (size_t k = 0; k < order.size(); ++k) {
    const sched::NodeSpec& n = s.nodes[order[k]];
    enodes.push_back(EmulatedNode{n.name, n.cpu_milli, n.memory_mib, 1000,
                                  static_cast<int64_t>(n.gpus.size()) * s.units_per_gpu});
    by_name[n.name] = k;
    capacity += int64_t{sched::kGpuMilli} * static_cast<int64_t>(n.gpus.size());
  }
  std::vector<std::string> quoted;  // node names as JSON strings
  for (const EmulatedNode& n : enodes) quoted.push_back(Json(n.name).dump());
  KubeSchedulerEmulator kube(std::move(enodes), options.kube);
  LevelTally tally(capacity);
  httplib::Client cli("127.0.0.1", port);
  cli.set_keep_alive(true);
  cli.set_tcp_nodelay(true);
  cli.set_read_timeout(60, 0);
  const auto post = [&](const char* verb, const std::string& body) -> Result<Json> {
    auto res = cli.Post(verb, body, "application/json");
    if (!res) res = cli.Post(verb, body, "application/json");  // a closed keep-alive connection
    if (!res) {
      return Status::Unavailable(std::string(verb) + ": " + httplib::to_string(res.error()));
    }
    Json j = Json::parse(res->body, nullptr, false);
    if (res->status != 200 || j.is_discarded()) {
      return Status::Internal(std::string(verb) + ": HTTP " + std::to_string(res->status) + ": " +
                              res->body.substr(0, 300));
    }
    return j;
  };
  ReplayResult out;
  const auto t0 = Clock::now();
  int64_t arrived = 0, allocated = 0;
  for (size_t i = 0; i < s.plan.pods.size(); ++i) {
    if (options.max_pods != 0 && i >= options.max_pods) break;
    const sched::PodRequest& r = s.plan.pods[i];
    if (tally.LevelOf(arrived + r.TotalGpuMilli()) > options.last_level) break;
    arrived += r.TotalGpuMilli();
    ++out.pods;
    if (r.num_gpus == 0) ++out.cpu_only;
    const Json pod = ReplayPodObject(s, i);
    api->PutPod(pod);
    const EmulatedPod ep = EmulatedPodOf(r);
    std::string chosen;
    const std::vector<size_t> feasible = kube.Feasible(ep);
    if (!feasible.empty()) {
      std::string names = "[";
      for (size_t k = 0; k < feasible.size(); ++k) {
        if (k > 0) names += ',';
        names += quoted[feasible[k]];
      }
      names += ']';
      const std::string args =
          "{\"Pod\":" + pod.dump() + ",\"Nodes\":null,\"NodeNames\":" + names + "}";
      const auto tf = Clock::now();
      auto f = post("/filter", args);
      out.filter_ms.push_back(Ms(Clock::now() - tf));
      if (!f) return f.error();
      if (f->contains("Error") && (*f)["Error"].is_string() &&
          !(*f)["Error"].get<std::string>().empty()) {
        return Status::Internal("filter: " + (*f)["Error"].get<std::string>());
      }
      std::vector<size_t> left;
      if ((*f)["NodeNames"].is_array()) {
        for (const Json& n : (*f)["NodeNames"]) {
          auto it = by_name.find(n.get<std::string>());
          if (it == by_name.end()) return Status::Internal("filter answered an unknown node");
          left.push_back(it->second);
        }
      }
      if (!left.empty()) {
        std::vector<int64_t> priorities(left.size(), 0);
        if (left.size() > 1) {
          ++out.prioritized;
          std::string kept = "[";
          for (size_t k = 0; k < left.size(); ++k) kept += (k > 0 ? "," : "") + quoted[left[k]];
          kept += ']';
          auto p = post("/prioritize",
                        "{\"Pod\":" + pod.dump() + ",\"Nodes\":null,\"NodeNames\":" + kept + "}");
          if (!p) return p.error();
          std::unordered_map<std::string, int64_t> score;
          for (const Json& h : *p) score[h["Host"].get<std::string>()] = h["Score"].get<int64_t>();
          for (size_t k = 0; k < left.size(); ++k)
            priorities[k] = score[kube.nodes()[left[k]].name];
        }
        const size_t node = kube.Select(ep, left, priorities);
        kube.Assume(node, ep);
        const Json bind = {{"PodName", PodName(i)},
                           {"PodNamespace", "replay"},
                           {"PodUID", "replay-uid-" + std::to_string(i)},
                           {"Node", kube.nodes()[node].name}};
        const auto tb = Clock::now();
        auto b = post("/bind", bind.dump());
        out.bind_ms.push_back(Ms(Clock::now() - tb));
        if (!b) return b.error();
        if ((*b)["Error"].get<std::string>().empty()) {
          chosen = kube.nodes()[node].name;
        } else {
          ++out.bind_errors;
          kube.Forget(node, ep);
        }
      }
    }
    if (chosen.empty()) {
      ++out.failed;
      api->DeletePod("replay", PodName(i));
    } else {
      ++out.placed;
      allocated += r.TotalGpuMilli();
    }
    out.chosen.push_back(chosen);
    tally.Row(arrived, allocated);
  }
  out.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  out.unallocated = tally.Unallocated(options.last_level);
  return out;
}

Result<ReferenceResult> RunReference(const ReplaySetup& s, const std::string& policy,
                                     const sched::PolicyArgs& args, uint64_t tie_seed,
                                     int last_level, size_t max_pods) {
  auto made = sched::BuiltinPolicies().Create(policy, args);
  if (!made) return made.error();
  sched::Cluster cluster;
  std::vector<std::string> names;
  for (sched::NodeSpec n : s.nodes) {
    for (sched::GpuSpec& g : n.gpus) g.memory_mib = GpuMemoryOf(s, g);
    auto id = cluster.AddNode(n);
    if (!id) return id.error();
    names.push_back(n.name);
  }
  const std::vector<uint32_t> tie = NodeTieOrder(names, tie_seed);
  auto scheduler = sched::Scheduler::Create(&cluster, std::move(*made),
                                            std::vector<sched::NodeId>(tie.begin(), tie.end()));
  if (!scheduler) return scheduler.error();
  Rng rng(tie_seed);
  LevelTally tally(cluster.total_gpu_milli());
  ReferenceResult out;
  int64_t arrived = 0;
  for (size_t i = 0; i < s.plan.pods.size(); ++i) {
    if (max_pods != 0 && i >= max_pods) break;
    const sched::PodRequest& r = s.plan.pods[i];
    if (tally.LevelOf(arrived + r.TotalGpuMilli()) > last_level) break;
    arrived += r.TotalGpuMilli();
    scheduler->ObservePod(r);
    auto p = scheduler->Schedule(r, rng);
    std::string chosen;
    if (p && scheduler->Reserve(static_cast<sched::PodKey>(i), r, *p).ok()) {
      chosen = names[p->node];
    }
    out.chosen.push_back(chosen);
    tally.Row(arrived, cluster.allocated_gpu_milli());
  }
  out.unallocated = tally.Unallocated(last_level);
  return out;
}

}  // namespace vgpu::k8s::testing
