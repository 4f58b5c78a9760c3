// Invariants of the time-based replay over the bundled trace, on a cluster small enough to queue:
// at every instant no CPU, memory or GPU share is over-allocated and the books match the
// reservations; whole-GPU runs never put two pods on one GPU; the queue's invariant holds (with
// backfill no waiting pod fits anywhere, with FIFO the head does not); runs are deterministic per
// seed; and the full trace on the full cluster replays in well under a few seconds.
#include <gtest/gtest.h>

#include <chrono>

#include "sim/replay_experiment.h"
#include "trace_fixture.h"

namespace vgpu::sim {
namespace {

using sched::Cluster;
using sched::NodeId;

struct Trace {
  std::unique_ptr<sched::ModelRegistry> models = std::make_unique<sched::ModelRegistry>();
  std::vector<sched::NodeSpec> nodes;
  std::vector<TimedPod> pods;
};

Trace LoadDefault() {
  Trace t;
  auto nodes = LoadNodeList(testing::kDataDir + "openb_node_list_gpu_node.csv", t.models.get());
  EXPECT_TRUE(nodes.has_value());
  auto pods = LoadTimedPodList(testing::kDataDir + "openb_pod_list_default.csv", *t.models);
  EXPECT_TRUE(pods.has_value()) << pods.error().message();
  if (!nodes || !pods) return t;
  t.nodes = std::move(*nodes);
  std::sort(t.nodes.begin(), t.nodes.end(),
            [](const auto& a, const auto& b) { return a.name < b.name; });
  t.pods = std::move(*pods);
  return t;
}

ReplayInput Input(const Trace& t, double compress) {
  JobOptions jo;
  jo.time_compress = compress;
  auto jobs = MakeJobs(t.pods, jo);
  EXPECT_TRUE(jobs.has_value());
  ReplayInput in;
  in.nodes = t.nodes;
  in.jobs = jobs->jobs;
  in.models = t.models.get();
  return in;
}

// Rebuilds the usage of every node from the reservations and compares it with the books.
void CheckBooks(const Cluster& c, const ReplayInput& in, Allocation a, const std::string& where) {
  std::vector<int64_t> cpu(c.num_nodes()), mem(c.num_nodes());
  std::vector<std::vector<int64_t>> milli(c.num_nodes());
  for (NodeId n = 0; n < c.num_nodes(); ++n) milli[n].assign(size_t(c.num_gpus(n)), 0);
  size_t found = 0;
  for (uint32_t j = 0; j < in.jobs.size(); ++j) {
    const Cluster::Reservation* r = c.FindReservation(j);
    if (r == nullptr) continue;
    ++found;
    ASSERT_EQ(r->request, Allocated(in.jobs[j].request, a)) << where;
    cpu[r->placement.node] += r->request.cpu_milli;
    mem[r->placement.node] += r->request.memory_mib;
    sched::ForEachGpu(r->placement.gpus,
                      [&](int g) { milli[r->placement.node][size_t(g)] += r->request.gpu_milli; });
  }
  ASSERT_EQ(found, c.num_reservations()) << where;
  for (NodeId n = 0; n < c.num_nodes(); ++n) {
    ASSERT_EQ(c.cpu_free(n), c.cpu_capacity(n) - cpu[n]) << where;
    ASSERT_EQ(c.memory_free(n), c.memory_capacity(n) - mem[n]) << where;
    for (int g = 0; g < c.num_gpus(n); ++g) {
      ASSERT_EQ(c.gpus(n)[size_t(g)].free_milli, sched::kGpuMilli - milli[n][size_t(g)]) << where;
    }
  }
}

TEST(ReplayProperty, NoOverAllocationAndTheQueueInvariantHold) {
  const Trace t = LoadDefault();
  const ReplayInput in = Input(t, 10);
  for (const char* policy : {"bestfit", "default", "hami-binpack"}) {
    for (Allocation a : {Allocation::kShared, Allocation::kWhole}) {
      for (QueueDiscipline q : {QueueDiscipline::kFifo, QueueDiscipline::kBackfill}) {
        const std::string where = std::string(policy) + "/" + std::string(AllocationName(a)) + "/" +
                                  std::string(QueueName(q));
        ReplayConfig c;
        c.policy = policy;
        c.allocation = a;
        c.queue = q;
        c.cluster_scale = 0.02;  // 24 nodes: the trace queues at this load
        c.horizon_us = 20LL * 86400 * 1000000;
        int64_t instants = 0, max_waiting = 0;
        bool failed = false;
        c.on_instant = [&](int64_t now, const Cluster& cl, std::span<const uint32_t> waiting,
                           const std::function<bool(uint32_t, NodeId)>& feasible) {
          if (failed) return;
          ++instants;
          max_waiting = std::max<int64_t>(max_waiting, int64_t(waiting.size()));
          const std::string at = where + " t=" + std::to_string(now);
          int64_t used = 0;
          for (NodeId n = 0; n < cl.num_nodes(); ++n) {
            EXPECT_GE(cl.cpu_free(n), 0) << at;
            EXPECT_GE(cl.memory_free(n), 0) << at;
            for (const sched::GpuState& g : cl.gpus(n)) {
              EXPECT_GE(g.free_milli, 0) << at;
              EXPECT_LE(g.free_milli, sched::kGpuMilli) << at;
              if (a == Allocation::kWhole && g.pods > 0) {
                EXPECT_EQ(g.pods, 1) << at;
                EXPECT_EQ(g.free_milli, 0) << at;
              }
              used += sched::kGpuMilli - g.free_milli;
            }
          }
          EXPECT_EQ(used, cl.allocated_gpu_milli()) << at;
          EXPECT_LE(used, cl.total_gpu_milli()) << at;
          // With backfill, no waiting pod fits anywhere; with FIFO, the head does not.
          const size_t check =
              q == QueueDiscipline::kFifo ? std::min<size_t>(1, waiting.size()) : waiting.size();
          for (size_t i = 0; i < check; ++i) {
            for (NodeId n = 0; n < cl.num_nodes(); ++n) {
              EXPECT_FALSE(feasible(waiting[i], n)) << at << " waiting pod " << waiting[i];
            }
          }
          if (instants % 500 == 0) CheckBooks(cl, in, a, at);
          failed = ::testing::Test::HasFailure();
        };
        auto r = RunReplay(in, c);
        ASSERT_TRUE(r.has_value()) << where << ": " << r.error().message();
        ASSERT_FALSE(failed) << where;
        EXPECT_GT(instants, 1000) << where;
        EXPECT_GT(max_waiting, 10) << where << ": the test needs a cluster that queues";
        EXPECT_EQ(r->jobs + r->unplaceable, int64_t(in.jobs.size()) - 0) << where;
      }
    }
  }
}

TEST(ReplayProperty, DeterministicPerSeed) {
  const Trace t = LoadDefault();
  ReplayPlan plan;
  plan.policies = {"default", "random"};
  plan.queues = {QueueDiscipline::kFifo, QueueDiscipline::kBackfill};
  plan.loads = {LoadPoint{10, 0.03}};
  plan.seeds = {7, 8};
  plan.threads = 1;
  auto one = RunReplayExperiment(t.nodes, t.pods, t.models.get(), plan);
  plan.threads = 4;
  auto two = RunReplayExperiment(t.nodes, t.pods, t.models.get(), plan);
  ASSERT_TRUE(one.has_value() && two.has_value());
  ASSERT_EQ(one->runs.size(), 16u);
  bool seeds_differ = false;
  for (size_t i = 0; i < one->runs.size(); ++i) {
    const ReplayResult& a = one->runs[i].result;
    const ReplayResult& b = two->runs[i].result;
    EXPECT_EQ(a.completed, b.completed);
    EXPECT_EQ(a.wait_mean_s, b.wait_mean_s);
    EXPECT_EQ(a.mean_allocated_pct, b.mean_allocated_pct);
    ASSERT_EQ(a.series.size(), b.series.size());
    for (size_t s = 0; s < a.series.size(); ++s) {
      EXPECT_EQ(a.series[s].allocated_pct, b.series[s].allocated_pct);
    }
    if (i + 2 < one->runs.size() && one->runs[i].policy == one->runs[i + 2].policy &&
        one->runs[i].seed != one->runs[i + 2].seed) {
      seeds_differ |= a.wait_mean_s != one->runs[i + 2].result.wait_mean_s;
    }
  }
  EXPECT_TRUE(seeds_differ);
}

TEST(ReplayProperty, FullTraceOnTheFullClusterIsFast) {
  const Trace t = LoadDefault();
  const ReplayInput in = Input(t, 1);
  ReplayConfig c;
  c.policy = "default";
  c.horizon_us = 150LL * 86400 * 1000000;
  c.step_us = c.horizon_us / 400;
  const auto start = std::chrono::steady_clock::now();
  auto r = RunReplay(in, c);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->jobs, 7255);
  EXPECT_EQ(r->waited, 0);  // the trace uses about 1% of this cluster
#if defined(NDEBUG) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  EXPECT_LT(s, 5.0);  // about 0.35 s on one core of the development machine
#else
  (void)s;  // no time bound in debug and sanitizer builds
#endif
}

}  // namespace
}  // namespace vgpu::sim
