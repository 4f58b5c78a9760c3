// The time-based replay on small hand-built traces: every wait, completion and average below is
// computed by hand in the comments.
#include "sim/replay.h"

#include <gtest/gtest.h>

#include "topo/bandwidth.h"
#include "topo/presets.h"

namespace vgpu::sim {
namespace {

using sched::NodeSpec;
using sched::PodRequest;

constexpr int64_t kS = 1'000'000;  // one second in microseconds

NodeSpec Node(std::string name, int64_t cpu, int gpus) {
  NodeSpec n;
  n.name = std::move(name);
  n.cpu_milli = cpu;
  n.memory_mib = 65536;
  n.gpus.assign(static_cast<size_t>(gpus), sched::GpuSpec{0, 0});
  return n;
}

ReplayJob Job(std::string name, int64_t arrival_s, int64_t run_s, int32_t num_gpus, int32_t milli,
              int64_t cpu = 1000) {
  ReplayJob j;
  j.name = std::move(name);
  j.request.cpu_milli = cpu;
  j.request.memory_mib = 1024;
  j.request.num_gpus = num_gpus;
  j.request.gpu_milli = milli;
  j.arrival_us = arrival_s * kS;
  j.run_us = run_s * kS;
  return j;
}

ReplayResult Replay(const ReplayInput& in, Allocation a, QueueDiscipline q, int64_t horizon_s,
                    int64_t step_s = 0) {
  ReplayConfig c;
  c.policy = "bestfit";
  c.allocation = a;
  c.queue = q;
  c.horizon_us = horizon_s * kS;
  c.step_us = step_s * kS;
  auto r = RunReplay(in, c);
  EXPECT_TRUE(r.has_value()) << r.error().message();
  return r ? *r : ReplayResult{};
}

// One node with one GPU. p0 (600 milli) arrives at 0 and runs 100 s; p1 (500) arrives at 10 and
// runs 50 s; p2 (300) arrives at 20 and runs 10 s.
ReplayInput ThreePods() {
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 1)};
  in.jobs = {Job("p0", 0, 100, 1, 600), Job("p1", 10, 50, 1, 500), Job("p2", 20, 10, 1, 300)};
  return in;
}

TEST(Replay, WholeGpuRounding) {
  PodRequest r;
  r.num_gpus = 2;
  r.gpu_milli = 300;
  r.cpu_milli = 4000;
  EXPECT_EQ(Allocated(r, Allocation::kShared), r);
  PodRequest w = Allocated(r, Allocation::kWhole);
  EXPECT_EQ(w.gpu_milli, 1000);
  EXPECT_EQ(w.num_gpus, 2);
  EXPECT_EQ(w.cpu_milli, 4000);
  PodRequest cpu_only;
  cpu_only.cpu_milli = 500;
  EXPECT_EQ(Allocated(cpu_only, Allocation::kWhole), cpu_only);
}

TEST(Replay, SharedFifo) {
  // p0 starts at 0 (400 milli left). p1 (500) waits. p2 (300) would fit but queues behind p1.
  // p0 leaves at 100: p1 starts (500 left), then p2. p2 leaves at 110, p1 at 150.
  const ReplayResult r =
      Replay(ThreePods(), Allocation::kShared, QueueDiscipline::kFifo, /*horizon_s=*/120, 10);
  EXPECT_EQ(r.jobs, 3);
  EXPECT_EQ(r.waited, 2);
  EXPECT_DOUBLE_EQ(r.wait_mean_s, (0 + 90 + 80) / 3.0);
  EXPECT_DOUBLE_EQ(r.wait_p50_s, 80);
  EXPECT_DOUBLE_EQ(r.wait_p99_s, 90);
  EXPECT_DOUBLE_EQ(r.wait_max_s, 90);
  EXPECT_EQ(r.completed, 2);  // p0 at 100, p2 at 110; p1 leaves at 150, after the horizon
  EXPECT_DOUBLE_EQ(r.completed_gpu_hours, (0.6 * 100 + 0.3 * 10) / 3600);
  EXPECT_EQ(r.started, 3);
  EXPECT_EQ(r.queued_at_horizon, 0);
  // Allocated milli: 600 on [0,100), 800 on [100,110), 500 on [110,120) -> 73000 / 120000.
  EXPECT_NEAR(r.mean_allocated_pct, 100.0 * 73000 / 120000, 1e-9);
  EXPECT_NEAR(r.mean_requested_pct, r.mean_allocated_pct, 1e-9);
  // Queue: 1 on [10,20), 2 on [20,100).
  EXPECT_NEAR(r.mean_queued, (10 + 160) / 120.0, 1e-9);
  EXPECT_EQ(r.max_queued, 2);
  EXPECT_EQ(r.last_start_us, 100 * kS);
  EXPECT_EQ(r.makespan_us, 150 * kS);
  // Offered: 600 x 100 + 500 x 50 + 300 x 10 = 88000 milli-s over 120 s x 1000.
  EXPECT_NEAR(r.offered_pct, 100.0 * 88000 / 120000, 1e-9);
  EXPECT_NEAR(r.offered_whole_pct, 100.0 * 160000 / 120000, 1e-9);
  EXPECT_NEAR(r.peak_demand_pct, 140, 1e-9);  // all three at t = 20
  // Samples every 10 s from 0 to 120, each after the events at its time.
  ASSERT_EQ(r.series.size(), 13u);
  EXPECT_EQ(r.series[2].time_us, 20 * kS);
  EXPECT_EQ(r.series[2].queued, 2);
  EXPECT_DOUBLE_EQ(r.series[2].allocated_pct, 60);
  EXPECT_DOUBLE_EQ(r.series[2].demand_pct, 140);
  EXPECT_EQ(r.series[10].running, 2);
  EXPECT_DOUBLE_EQ(r.series[10].allocated_pct, 80);
  EXPECT_EQ(r.series[10].completed, 1);
  EXPECT_EQ(r.series[11].completed, 2);
  EXPECT_DOUBLE_EQ(r.series[11].allocated_pct, 50);
}

TEST(Replay, SharedBackfill) {
  // p2 passes p1: it starts at 20 and leaves at 30. p1 starts when p0 leaves at 100.
  const ReplayResult r = Replay(ThreePods(), Allocation::kShared, QueueDiscipline::kBackfill, 120);
  EXPECT_DOUBLE_EQ(r.wait_mean_s, (0 + 90 + 0) / 3.0);
  EXPECT_EQ(r.waited, 1);
  EXPECT_EQ(r.completed, 2);  // p2 at 30, p0 at 100
  // 600 on [0,20), 900 on [20,30), 600 on [30,100), 500 on [100,120).
  EXPECT_NEAR(r.mean_allocated_pct, 100.0 * (12000 + 9000 + 42000 + 10000) / 120000, 1e-9);
  EXPECT_NEAR(r.mean_queued, (10 + 80) / 120.0, 1e-9);
  EXPECT_EQ(r.max_queued, 1);
}

TEST(Replay, WholeFifoAndBackfillAgreeWhenNothingFits) {
  // Every pod takes the whole GPU: p0 on [0,100), p1 on [100,150), p2 on [150,160).
  for (QueueDiscipline q : {QueueDiscipline::kFifo, QueueDiscipline::kBackfill}) {
    const ReplayResult r = Replay(ThreePods(), Allocation::kWhole, q, 120);
    EXPECT_DOUBLE_EQ(r.wait_mean_s, (0 + 90 + 130) / 3.0) << QueueName(q);
    EXPECT_DOUBLE_EQ(r.wait_max_s, 130);
    EXPECT_EQ(r.completed, 1);
    EXPECT_EQ(r.started, 2);  // p2 starts at 150
    EXPECT_EQ(r.queued_at_horizon, 1);
    EXPECT_NEAR(r.mean_allocated_pct, 100, 1e-9);
    // Requested (shared sizes): 600 on [0,100), 500 on [100,120).
    EXPECT_NEAR(r.mean_requested_pct, 100.0 * 70000 / 120000, 1e-9);
    EXPECT_NEAR(r.mean_queued, (10 + 160 + 20) / 120.0, 1e-9);
    EXPECT_EQ(r.last_start_us, 150 * kS);
    EXPECT_EQ(r.makespan_us, 160 * kS);
  }
}

TEST(Replay, DeparturesFreeResourcesBeforeArrivalsAtTheSameInstant) {
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 1)};
  in.jobs = {Job("a", 0, 100, 1, 1000), Job("b", 100, 10, 1, 1000)};
  const ReplayResult r = Replay(in, Allocation::kShared, QueueDiscipline::kFifo, 200);
  EXPECT_EQ(r.waited, 0);
  EXPECT_EQ(r.completed, 2);
  EXPECT_EQ(r.makespan_us, 110 * kS);
}

TEST(Replay, ZeroRunTimePodsStartAndLeaveAtOnce) {
  // z (0 s) waits behind p0 in whole mode, starts and leaves at 100; q, behind z, starts at 100.
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 1)};
  in.jobs = {Job("p0", 0, 100, 1, 600), Job("z", 5, 0, 1, 100), Job("q", 6, 10, 1, 100)};
  const ReplayResult shared = Replay(in, Allocation::kShared, QueueDiscipline::kFifo, 200);
  EXPECT_EQ(shared.waited, 0);
  EXPECT_EQ(shared.completed, 3);
  const ReplayResult whole = Replay(in, Allocation::kWhole, QueueDiscipline::kFifo, 200);
  EXPECT_DOUBLE_EQ(whole.wait_mean_s, (0 + 95 + 94) / 3.0);
  EXPECT_EQ(whole.completed, 3);
  EXPECT_EQ(whole.makespan_us, 110 * kS);
}

TEST(Replay, PodsThatFitNoNodeAreLeftOutAndDoNotBlock) {
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 1)};
  in.jobs = {Job("two", 0, 10, 2, 1000), Job("one", 1, 10, 1, 1000), Job("late", 500, 1, 1, 10)};
  const ReplayResult r = Replay(in, Allocation::kShared, QueueDiscipline::kFifo, 100);
  EXPECT_EQ(r.unplaceable, 1);
  EXPECT_EQ(r.jobs, 1);  // "late" arrives after the horizon
  EXPECT_EQ(r.waited, 0);
  EXPECT_EQ(r.completed, 1);
}

TEST(Replay, CpuOnlyPodsHoldCpu) {
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 1)};
  in.jobs = {Job("cpu", 0, 50, 0, 0, 8000), Job("gpu", 1, 10, 1, 100, 1000)};
  const ReplayResult r = Replay(in, Allocation::kShared, QueueDiscipline::kFifo, 100);
  EXPECT_DOUBLE_EQ(r.wait_max_s, 49);
  EXPECT_EQ(r.completed, 2);
}

TEST(Replay, MultiGpuPodsTakeWholeGpusOnlyInWholeMode) {
  // Two GPUs: a asks 2 x 300, b 1 x 500. Shared: both run at once. Whole: a takes both GPUs.
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 2)};
  in.jobs = {Job("a", 0, 100, 2, 300), Job("b", 1, 10, 1, 500)};
  EXPECT_EQ(Replay(in, Allocation::kShared, QueueDiscipline::kFifo, 200).waited, 0);
  const ReplayResult whole = Replay(in, Allocation::kWhole, QueueDiscipline::kFifo, 200);
  EXPECT_DOUBLE_EQ(whole.wait_max_s, 99);
}

TEST(Replay, ClusterScaleKeepsTheMixOfNodeTypes) {
  // Four 1-GPU nodes (type A) and two 4-GPU nodes (type B).
  ReplayInput in;
  for (int i = 0; i < 4; ++i) in.nodes.push_back(Node("a" + std::to_string(i), 8000, 1));
  for (int i = 0; i < 2; ++i) in.nodes.push_back(Node("b" + std::to_string(i), 32000, 4));
  in.jobs = {Job("p", 0, 1, 1, 100)};
  ReplayConfig c;
  c.policy = "bestfit";
  c.horizon_us = 10 * kS;
  for (uint64_t seed : {1, 2, 3, 4, 5}) {
    c.seed = seed;
    c.cluster_scale = 0.5;  // 3 nodes: 2 of A, 1 of B
    auto half = RunReplay(in, c);
    ASSERT_TRUE(half.has_value());
    EXPECT_EQ(half->nodes, 3u);
    EXPECT_EQ(half->gpus, 2 * 1 + 4);
    c.cluster_scale = 0.25;  // round(1.5) = 2 nodes: A gets 1 (exact 1.0), B its remainder 0.5
    auto quarter = RunReplay(in, c);
    ASSERT_TRUE(quarter.has_value());
    EXPECT_EQ(quarter->nodes, 2u);
    EXPECT_EQ(quarter->gpus, 1 + 4);
  }
  c.cluster_scale = 0.01;  // at least one node
  auto tiny = RunReplay(in, c);
  ASSERT_TRUE(tiny.has_value());
  EXPECT_EQ(tiny->nodes, 1u);
}

TEST(Replay, RejectsBadConfigs) {
  ReplayInput in = ThreePods();
  ReplayConfig c;
  c.policy = "bestfit";
  c.horizon_us = 0;
  EXPECT_EQ(RunReplay(in, c).error().code(), StatusCode::kInvalidArgument);
  c.horizon_us = kS;
  c.cluster_scale = 1.5;
  EXPECT_EQ(RunReplay(in, c).error().code(), StatusCode::kInvalidArgument);
  c.cluster_scale = 1;
  c.policy = "tetris";
  EXPECT_EQ(RunReplay(in, c).error().code(), StatusCode::kNotFound);
}

// Topology (replay_topology.h): one 4-GPU node shaped as rtx8000x4 (NV2 bridges join 0-3 and
// 1-2; 0-1 is PCIe) and one 2-GPU node without a shape. A 2-GPU pod runs 100 s on the best set.
ReplayResult TopologyReplay(GpuChoice choice, double share, const std::string& shape) {
  ReplayInput in;
  in.nodes = {Node("n0", 8000, 4), Node("n1", 1000, 2)};
  in.jobs = {Job("p0", 0, 100, 2, 1000, 4000)};  // only n0 has the CPU
  ReplayConfig c;
  c.policy = "bestfit";
  c.horizon_us = 1000 * kS;
  c.topology.shapes = {shape};
  c.topology.comm_share = share;
  c.topology.choice = choice;
  auto r = RunReplay(in, c);
  EXPECT_TRUE(r.has_value()) << r.error().message();
  return r ? *r : ReplayResult{};
}

TEST(ReplayTopology, WorseConnectedSetsRunLongerByTheCommunicationShare) {
  topo::Evaluator ev(*topo::Preset("rtx8000x4"));
  const double ratio = ev.Pair(0, 1) / ev.Pair(0, 3);  // lowest-index set / the bridged pair
  ASSERT_LT(ratio, 0.5);
  const ReplayResult best = TopologyReplay(GpuChoice::kVgpu, 0.5, "rtx8000x4");
  EXPECT_EQ(best.topology.multi_jobs, 1);
  EXPECT_DOUBLE_EQ(best.topology.bandwidth_ratio, 1.0);
  EXPECT_DOUBLE_EQ(best.topology.best_share, 1.0);
  EXPECT_DOUBLE_EQ(best.topology.multi_jct_mean_s, 100.0);
  const ReplayResult low = TopologyReplay(GpuChoice::kLowestIndex, 0.5, "rtx8000x4");
  EXPECT_NEAR(low.topology.bandwidth_ratio, ratio, 1e-9);
  EXPECT_DOUBLE_EQ(low.topology.best_share, 0.0);
  const double stretched = 100.0 * (0.5 + 0.5 / ratio);
  EXPECT_NEAR(low.topology.run_factor, stretched / 100.0, 1e-9);
  EXPECT_NEAR(low.topology.multi_jct_mean_s, stretched, 1e-5);
  EXPECT_NEAR(low.topology.jct_mean_s, stretched, 1e-5);
  EXPECT_NEAR(static_cast<double>(low.makespan_us) / kS, stretched, 1e-5);
  // besteffort sees the NV2 bridges; with no communication share nothing is stretched.
  EXPECT_DOUBLE_EQ(TopologyReplay(GpuChoice::kBestEffort, 0.5, "rtx8000x4").topology.run_factor,
                   1.0);
  EXPECT_DOUBLE_EQ(
      TopologyReplay(GpuChoice::kLowestIndex, 0, "rtx8000x4").topology.multi_jct_mean_s, 100.0);
  // A shape of another GPU count leaves the node unshaped: nothing is counted or stretched.
  const ReplayResult unshaped = TopologyReplay(GpuChoice::kLowestIndex, 0.5, "dgx1-volta");
  EXPECT_EQ(unshaped.topology.multi_jobs, 0);
  EXPECT_DOUBLE_EQ(unshaped.topology.jct_mean_s, 100.0);
}

// Pods that require NVLink (vgpu.io/topology: require-nvlink): on the rtx8000x4 box (NV2
// bridges 0-3 and 1-2; 0-1 and 2-3 are PCIe) the lowest-index rule gives 2-GPU pods PCIe pairs,
// but with the requirement each gets a bridge, whatever the rule; a 4-GPU pod that requires
// NVLink fits no node (no NVLink ring of four) and is left out; without shapes the replay refuses
// such pods.
TEST(ReplayTopology, RequireNvlinkPodsGetConnectedSetsOrNoNode) {
  ReplayInput in;
  in.nodes = {Node("n0", 64000, 4)};
  in.jobs = {Job("p1", 0, 100, 2, 1000), Job("p2", 1, 100, 2, 1000), Job("big", 2, 100, 4, 1000)};
  ReplayConfig c;
  c.policy = "bestfit";
  c.horizon_us = 1000 * kS;
  c.topology.shapes = {"rtx8000x4"};
  c.topology.comm_share = 0.5;
  c.topology.choice = GpuChoice::kLowestIndex;
  auto plain = RunReplay(in, c);
  ASSERT_TRUE(plain.has_value()) << plain.error().message();
  EXPECT_EQ(plain->unplaceable, 0);
  EXPECT_LT(plain->topology.best_share, 0.5);  // both pairs on PCIe
  for (ReplayJob& j : in.jobs) j.request.require_nvlink = j.request.num_gpus >= 2;
  auto nvlink = RunReplay(in, c);
  ASSERT_TRUE(nvlink.has_value()) << nvlink.error().message();
  EXPECT_EQ(nvlink->unplaceable, 1);  // the 4-GPU pod
  EXPECT_EQ(nvlink->topology.multi_jobs, 2);
  EXPECT_DOUBLE_EQ(nvlink->topology.best_share, 1.0);
  EXPECT_DOUBLE_EQ(nvlink->topology.bandwidth_ratio, 1.0);
  c.topology.shapes.clear();
  auto no_shapes = RunReplay(in, c);
  ASSERT_FALSE(no_shapes.has_value());
  EXPECT_NE(no_shapes.error().message().find("3 pod(s) require NVLink"), std::string::npos)
      << no_shapes.error().message();
}

TEST(ReplayTopology, BadModelsAreRefusedNamingTheField) {
  TopologyModel m;
  m.shapes = {"dgx-9000"};
  EXPECT_NE(CheckTopologyModel(m).message().find("unknown server shape 'dgx-9000'"),
            std::string::npos);
  m.shapes = {"dgx1-volta"};
  m.comm_share = 1.0;
  EXPECT_NE(CheckTopologyModel(m).message().find("communication share must be in [0, 1)"),
            std::string::npos);
  EXPECT_EQ(ParseGpuChoice("best").error().message(),
            "unknown GPU choice 'best' (known: vgpu, lowest-index, besteffort, policy)");
  EXPECT_EQ(*ParseGpuChoice("besteffort"), GpuChoice::kBestEffort);
}

}  // namespace
}  // namespace vgpu::sim
