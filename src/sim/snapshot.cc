#include "sim/snapshot.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/frag.h"
#include "sched/scheduler.h"

namespace vgpu::sim {

using sched::NodeId;
using sched::PodRequest;

SnapshotInput MakeSnapshotInput(std::vector<sched::NodeSpec> nodes,
                                std::vector<std::pair<std::string, sched::PodRequest>> pods,
                                const sched::ModelRegistry* models, std::string trace_name) {
  SnapshotInput in;
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const auto& a, const auto& b) { return a.name < b.name; });
  std::stable_sort(pods.begin(), pods.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  in.nodes = std::move(nodes);
  in.pods.reserve(pods.size());
  for (auto& [name, r] : pods) in.pods.push_back(r);
  in.target_workload = sched::TypicalWorkload(in.pods, models);
  in.models = models;
  in.trace_name = std::move(trace_name);
  return in;
}

ArrivalPlan PlanArrivals(const SnapshotInput& input, double inflate, Rng& rng) {
  ArrivalPlan plan;
  rng.Next();  // the simulator's first draw is discarded
  plan.pods = input.pods;
  rng.Shuffle(plan.pods);
  int64_t capacity = 0;
  for (const auto& n : input.nodes)
    capacity += int64_t{sched::kGpuMilli} * static_cast<int64_t>(n.gpus.size());
  int64_t total = 0;
  for (const PodRequest& r : plan.pods) total += r.TotalGpuMilli();
  const double limit = inflate * static_cast<double>(capacity);
  if (!input.pods.empty()) {
    while (true) {
      const PodRequest& r = input.pods[rng.UniformInt(input.pods.size())];
      if (static_cast<double>(total + r.gpu_milli) > limit) break;
      plan.pods.push_back(r);
      total += r.TotalGpuMilli();
    }
  }
  std::vector<NodeId> rank(input.nodes.size());
  std::iota(rank.begin(), rank.end(), NodeId{0});
  rng.Shuffle(rank);  // rank[i]: tie-break position of the i-th node by name
  plan.node_order.assign(rank.size(), 0);
  for (NodeId i = 0; i < rank.size(); ++i) plan.node_order[rank[i]] = i;
  return plan;
}

namespace {

struct LevelSum {
  double alloc = 0;
  double frag = 0;
  int64_t rows = 0;
};

double Round2(double x) { return std::nearbyint(x * 100.0) / 100.0; }

}  // namespace

Result<SeedResult> RunSnapshot(const SnapshotInput& input, const std::string& policy,
                               const sched::PolicyArgs& args, uint64_t seed, double inflate,
                               std::atomic<int64_t>* progress) {
  auto made = sched::BuiltinPolicies().Create(policy, args);
  if (!made) return made.error();
  sched::Cluster cluster;
  for (const auto& n : input.nodes) {
    auto id = cluster.AddNode(n);
    if (!id) return id.error();
  }
  Rng rng(seed);
  ArrivalPlan plan = PlanArrivals(input, inflate, rng);
  auto scheduler = sched::Scheduler::Create(&cluster, std::move(*made), plan.node_order);
  if (!scheduler) return scheduler.error();

  const sched::FragModel frag_model(input.target_workload);
  std::vector<double> node_frag(cluster.num_nodes());
  double frag_sum = 0;
  for (NodeId n = 0; n < cluster.num_nodes(); ++n) {
    node_frag[n] = frag_model.NodeFrag(cluster, n);
    frag_sum += node_frag[n];
  }
  const double capacity = static_cast<double>(cluster.total_gpu_milli());
  const double num_gpus = capacity / sched::kGpuMilli;
  std::vector<LevelSum> sums;
  SeedResult result;
  result.seed = seed;
  int64_t arrived = 0;
  int64_t since_report = 0;
  for (size_t i = 0; i < plan.pods.size(); ++i) {
    const PodRequest& r = plan.pods[i];
    arrived += r.TotalGpuMilli();
    scheduler->ObservePod(r);
    auto placement = scheduler->Schedule(r, rng);
    if (placement) {
      VGPU_RETURN_IF_ERROR(scheduler->Reserve(static_cast<sched::PodKey>(i), r, *placement));
      const NodeId n = placement->node;
      const double f = frag_model.NodeFrag(cluster, n);
      frag_sum += f - node_frag[n];
      node_frag[n] = f;
    } else {
      ++result.failed;
    }
    const double used = static_cast<double>(cluster.allocated_gpu_milli());
    const double idle = capacity - used;
    const int level =
        static_cast<int>(std::nearbyint(static_cast<double>(arrived) / num_gpus / 10.0));
    if (level >= static_cast<int>(sums.size())) sums.resize(static_cast<size_t>(level) + 1);
    LevelSum& s = sums[static_cast<size_t>(level)];
    s.alloc += Round2(used / num_gpus / 10.0);
    s.frag += idle > 0 ? Round2(100.0 * std::max(0.0, frag_sum) / idle) : 0.0;
    ++s.rows;
    if (progress != nullptr && ++since_report == 256) {
      progress->fetch_add(since_report, std::memory_order_relaxed);
      since_report = 0;
    }
  }
  if (progress != nullptr) progress->fetch_add(since_report, std::memory_order_relaxed);
  result.pods = static_cast<int64_t>(plan.pods.size());
  const int max_level = std::max<int>(static_cast<int>(sums.size()) - 1,
                                      static_cast<int>(std::ceil(inflate * 100.0 - 1e-9)));
  for (int x = 0; x <= max_level; ++x) {
    LevelSum s;
    auto add = [&](int l) {
      if (l < 0 || l >= static_cast<int>(sums.size())) return;
      s.alloc += sums[static_cast<size_t>(l)].alloc;
      s.frag += sums[static_cast<size_t>(l)].frag;
      s.rows += sums[static_cast<size_t>(l)].rows;
    };
    add(x);
    if (s.rows == 0) {
      add(x - 1);
      add(x + 1);
    }
    if (s.rows == 0) continue;
    const double n = static_cast<double>(s.rows);
    result.levels.push_back(LevelValue{x, Round2(s.alloc / n), Round2(s.frag / n)});
  }
  return result;
}

}  // namespace vgpu::sim
