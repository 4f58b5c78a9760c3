// Resource invariants over full replays of the bundled trace: with every policy and a few seeds,
// no CPU, memory, GPU share or GPU memory is ever over-allocated, and the cluster's free
// resources always equal capacity minus what its reservations hold, also while pods leave.
#include <gtest/gtest.h>

#include "common/rng.h"
#include "sched/cluster.h"
#include "sched/registry.h"
#include "sched/scheduler.h"
#include "trace_fixture.h"

namespace vgpu::sim {
namespace {

using sched::Cluster;
using sched::NodeId;
using sched::PodRequest;

struct Held {
  PodRequest request;
  sched::Placement placement;
};

// Recomputes every node's usage from the reservations and compares with the cluster's books.
void CheckBooks(const Cluster& c, const std::vector<sched::NodeSpec>& nodes,
                const std::map<sched::PodKey, Held>& held, const std::string& where) {
  std::vector<int64_t> cpu(c.num_nodes()), mem(c.num_nodes());
  std::vector<std::vector<int64_t>> milli(c.num_nodes());
  for (NodeId n = 0; n < c.num_nodes(); ++n) milli[n].assign(static_cast<size_t>(c.num_gpus(n)), 0);
  for (const auto& entry : held) {
    const Held& h = entry.second;  // not a structured binding: clang 14 cannot capture one
    cpu[h.placement.node] += h.request.cpu_milli;
    mem[h.placement.node] += h.request.memory_mib;
    sched::ForEachGpu(h.placement.gpus, [&](int g) {
      milli[h.placement.node][static_cast<size_t>(g)] += h.request.gpu_milli;
    });
  }
  int64_t allocated = 0;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    ASSERT_LE(cpu[n], nodes[n].cpu_milli) << where << " node " << n;
    ASSERT_LE(mem[n], nodes[n].memory_mib) << where << " node " << n;
    ASSERT_EQ(c.cpu_free(n), nodes[n].cpu_milli - cpu[n]) << where;
    ASSERT_EQ(c.memory_free(n), nodes[n].memory_mib - mem[n]) << where;
    for (int g = 0; g < c.num_gpus(n); ++g) {
      const auto& gs = c.gpus(n)[static_cast<size_t>(g)];
      ASSERT_LE(milli[n][static_cast<size_t>(g)], sched::kGpuMilli) << where;
      ASSERT_EQ(gs.free_milli, sched::kGpuMilli - milli[n][static_cast<size_t>(g)]) << where;
      ASSERT_GE(gs.memory_free_mib, 0) << where;
      allocated += milli[n][static_cast<size_t>(g)];
    }
  }
  ASSERT_EQ(c.allocated_gpu_milli(), allocated) << where;
}

class NoOverAllocation : public ::testing::TestWithParam<std::string> {};

TEST_P(NoOverAllocation, FullReplaysWithDepartures) {
  static testing::LoadedTrace trace = testing::LoadTrace("gpuspec10");  // has model constraints
  const SnapshotInput& in = trace.input;
  ASSERT_FALSE(in.pods.empty());
  for (uint64_t seed : {1, 2}) {
    sched::PolicyArgs args;
    args.target_workload = in.target_workload;
    args.models = in.models;
    auto policy = sched::BuiltinPolicies().Create(GetParam(), args);
    ASSERT_TRUE(policy.has_value());
    Cluster c;
    for (const auto& n : in.nodes) ASSERT_TRUE(c.AddNode(n).has_value());
    Rng rng(seed);
    ArrivalPlan plan = PlanArrivals(in, 1.3, rng);
    auto s = sched::Scheduler::Create(&c, std::move(*policy), plan.node_order);
    ASSERT_TRUE(s.has_value());
    std::map<sched::PodKey, Held> held;
    int64_t placed = 0, failed = 0;
    for (size_t i = 0; i < plan.pods.size(); ++i) {
      const PodRequest& r = plan.pods[i];
      s->ObservePod(r);
      auto p = s->Schedule(r, rng);
      if (!p) {
        ++failed;
      } else {
        ASSERT_TRUE(c.Fits(r, p->node, s->policy().fit)) << "placed where it does not fit";
        ASSERT_TRUE(s->Reserve(i, r, *p).ok());
        held[i] = Held{r, *p};
        ++placed;
      }
      // In the second half, one pod in ten leaves (Unreserve), and a repeat is a no-op.
      if (i > plan.pods.size() / 2 && i % 10 == 0 && !held.empty()) {
        auto it = held.begin();
        std::advance(it, static_cast<long>(rng.UniformInt(held.size())));
        ASSERT_TRUE(s->Unreserve(it->first));
        ASSERT_FALSE(s->Unreserve(it->first));
        held.erase(it);
      }
      if (i % 2000 == 0) CheckBooks(c, in.nodes, held, GetParam() + " pod " + std::to_string(i));
    }
    CheckBooks(c, in.nodes, held, GetParam() + " end");
    EXPECT_GT(placed, 0);
    EXPECT_GT(failed, 0);  // 130% of capacity cannot all fit
  }
}

INSTANTIATE_TEST_SUITE_P(AllPolicies, NoOverAllocation,
                         ::testing::Values("random", "dotprod", "clustering", "packing", "bestfit",
                                           "fgd", "fgd-online", "hami-binpack", "hami-spread",
                                           "cafgd"));

}  // namespace
}  // namespace vgpu::sim
