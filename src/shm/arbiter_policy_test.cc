// The arbiter's policy against a model of a GPU without MPS (arbiter_test_model.h), on a synthetic
// clock: caps, guarantees, elastic give-back, weights and priorities, deterministic and fast. Real
// processes, crashes and the futex are tested in arbiter_test.cc; real launches through libvgpu.so
// in tests/compute.
#include "shm/arbiter_policy.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shm/arbiter_test_model.h"

namespace vgpu::shm {
namespace {

using testmodel::kMs;
using testmodel::kStep;
using testmodel::kT0;
using testmodel::kUs;
using testmodel::Model;
using testmodel::TenantSpec;

TenantSpec Capped(uint32_t max) {
  TenantSpec s;
  s.max = max;
  return s;
}

void ExpectCaps(const std::vector<uint32_t>& caps, uint64_t kernel_ns = 1 * kMs) {
  std::vector<TenantSpec> specs;
  for (uint32_t c : caps) {
    specs.push_back(Capped(c));
    specs.back().kernel_ns = kernel_ns;
  }
  Model m(specs);
  m.Run(kT0 + 3000 * kMs);
  for (size_t i = 0; i < caps.size(); ++i) {
    // Converged within the first second; then every 1 s window is within 1 point.
    for (uint64_t w = 1; w < 3; ++w) {
      double share = m.Share(i, kT0 + w * 1000 * kMs, kT0 + (w + 1) * 1000 * kMs);
      EXPECT_NEAR(share, caps[i], 1.0) << "tenant " << i << " window " << w;
    }
  }
}

TEST(ArbiterPolicy, CapsOfTwoToFourTenantsHold) {
  ExpectCaps({30, 70});
  ExpectCaps({10, 90});
  ExpectCaps({20, 30, 50});
  ExpectCaps({10, 20, 30, 40});
  ExpectCaps({25, 25}, 300 * kUs);
}

TEST(ArbiterPolicy, ACappedTenantAloneStaysAtItsCap) {
  for (uint32_t cap : {10u, 50u, 90u}) {
    Model m({Capped(cap)});
    m.Run(kT0 + 2000 * kMs);
    EXPECT_NEAR(m.Share(0, kT0 + 500 * kMs, kT0 + 2000 * kMs), cap, 1.0) << cap;
  }
}

TEST(ArbiterPolicy, ElasticTenantUsesIdleTimeAndGivesItBack) {
  TenantSpec a;
  a.mode = kModeElastic;
  a.guarantee = 30;
  a.max = 100;
  TenantSpec b = a;
  b.guarantee = 70;
  b.start_ns = kT0 + 1000 * kMs;
  Model m({a, b});
  m.Run(kT0 + 3000 * kMs);
  EXPECT_GE(m.Share(0, kT0, kT0 + 1000 * kMs), 95.0);
  // Back to its guarantee within 100 ms of the second tenant's arrival.
  EXPECT_NEAR(m.Share(0, kT0 + 1100 * kMs, kT0 + 3000 * kMs), 30.0, 2.0);
  EXPECT_NEAR(m.Share(1, kT0 + 1100 * kMs, kT0 + 3000 * kMs), 70.0, 2.0);
}

TEST(ArbiterPolicy, ElasticWithinItsMax) {
  TenantSpec a;
  a.mode = kModeElastic;
  a.guarantee = 20;
  a.max = 60;
  Model m({a});
  m.Run(kT0 + 2000 * kMs);
  EXPECT_NEAR(m.Share(0, kT0 + 500 * kMs, kT0 + 2000 * kMs), 60.0, 1.0);
}

TEST(ArbiterPolicy, SpareTimeIsSharedByWeight) {
  TenantSpec a;
  a.mode = kModeElastic;
  TenantSpec b = a;
  b.weight = 3;
  Model m({a, b});
  m.Run(kT0 + 3000 * kMs);
  EXPECT_NEAR(m.Share(0, kT0 + 1000 * kMs, kT0 + 3000 * kMs), 25.0, 2.0);
  EXPECT_NEAR(m.Share(1, kT0 + 1000 * kMs, kT0 + 3000 * kMs), 75.0, 2.0);
}

TEST(ArbiterPolicy, GuaranteesComeBeforeWeights) {
  TenantSpec a;
  a.mode = kModeElastic;
  a.guarantee = 40;
  TenantSpec b;
  b.mode = kModeElastic;
  b.weight = 20;  // would take 95% by weight alone
  Model m({a, b});
  m.Run(kT0 + 3000 * kMs);
  EXPECT_NEAR(m.Share(0, kT0 + 1000 * kMs, kT0 + 3000 * kMs), 40.0, 2.0);
}

TEST(ArbiterPolicy, HighPriorityWaitsAtMostOneSliceAndKeepsItsThroughput) {
  TenantSpec high;
  high.level = kPriorityHigh;
  high.gap_ns = 1 * kMs;
  TenantSpec low;
  low.level = kPriorityLow;
  Model alone({high});
  alone.Run(kT0 + 2000 * kMs);
  Model shared({high, low});
  shared.Run(kT0 + 2000 * kMs);
  EXPECT_GE(static_cast<double>(shared.Kernels(0)), 0.95 * static_cast<double>(alone.Kernels(0)));
  EXPECT_LE(shared.WaitPercentile(0, 0.99), 5 * kMs + 1 * kMs);
  // Low fills the millisecond between high's kernels: it ends before high is back.
  EXPECT_GE(shared.Share(1, kT0 + 100 * kMs, kT0 + 2000 * kMs), 45.0);
}

TEST(ArbiterPolicy, HighPriorityArrivingAfterIdleWaitsForTheQueuedSliceOnly) {
  TenantSpec high;
  high.level = kPriorityHigh;
  high.gap_ns = 100 * kMs;  // much longer than its hold (2 time slices): low runs in between
  TenantSpec low;
  low.level = kPriorityLow;
  Model m({high, low});
  m.Run(kT0 + 2000 * kMs);
  EXPECT_LE(m.WaitPercentile(0, 0.99), 5 * kMs + 1 * kMs);
  EXPECT_GT(m.Share(1, kT0, kT0 + 2000 * kMs), 80.0);
}

TEST(ArbiterPolicy, LowerPriorityIsNotHeldByACappedOutHigherOne) {
  TenantSpec high;
  high.level = kPriorityHigh;
  high.max = 30;
  TenantSpec low;
  low.level = kPriorityLow;
  Model m({high, low});
  m.Run(kT0 + 2000 * kMs);
  EXPECT_NEAR(m.Share(0, kT0 + 500 * kMs, kT0 + 2000 * kMs), 30.0, 1.5);
  EXPECT_NEAR(m.Share(1, kT0 + 500 * kMs, kT0 + 2000 * kMs), 70.0, 1.5);
}

TEST(ArbiterPolicy, QueuedWorkAheadIsBoundedByTheTimeSlice) {
  // A tenant with tiny kernels may never have more than one time slice queued.
  TenantSpec t;
  t.kernel_ns = 50 * kUs;
  Model m({t});
  m.Run(kT0 + 200 * kMs);
  EXPECT_LE(m.WaitPercentile(0, 1.0), 5 * kMs + 50 * kUs);
}

// --- Shallow queues: demand judged with a grace after the queue ran dry ---

// A saturating tenant with `depth` kernels in flight that sees each kernel end 20-80 us late (its
// host's latency) before it launches the next.
TenantSpec Shallow(int depth) {
  TenantSpec s;
  s.mode = kModeElastic;
  s.depth = depth;
  s.host_ns = 20 * kUs;
  s.host_jitter_ns = 60 * kUs;
  return s;
}

// Tenant 0's share of the time the two used, in every 1 s window after the first.
void ExpectSplit(const Model& m, double expected, uint64_t seconds, const std::string& what) {
  for (uint64_t w = 1; w < seconds; ++w) {
    uint64_t from = kT0 + w * 1000 * kMs, to = from + 1000 * kMs;
    double a = m.Share(0, from, to), b = m.Share(1, from, to);
    EXPECT_NEAR(100.0 * a / (a + b), expected, 2.0) << what << " window " << w;
    // The GPU idles only for the tenants' own launch latency (at most 80 us per 1 ms kernel).
    EXPECT_GE(a + b, 92.0) << what << " window " << w;
  }
}

TEST(ArbiterPolicy, GuaranteesAndWeightsHoldWithFewKernelsInFlight) {
  for (int depth : {1, 2, 4, 16}) {
    TenantSpec a = Shallow(depth), b = Shallow(depth);
    a.guarantee = 30;
    b.guarantee = 70;
    Model g({a, b});
    g.Run(kT0 + 4000 * kMs);
    ExpectSplit(g, 30.0, 4, "guarantees 30/70, depth " + std::to_string(depth));
    TenantSpec c = Shallow(depth), d = Shallow(depth);
    d.weight = 3;
    Model w({c, d});
    w.Run(kT0 + 4000 * kMs);
    ExpectSplit(w, 25.0, 4, "weights 1:3, depth " + std::to_string(depth));
  }
}

TEST(ArbiterPolicy, CapsHoldWithFewKernelsInFlight) {
  for (int depth : {1, 4}) {
    TenantSpec a = Shallow(depth), b = Shallow(depth);
    a.mode = b.mode = kModeCapped;
    a.max = 30;
    b.max = 60;
    Model m({a, b});
    m.Run(kT0 + 3000 * kMs);
    for (uint64_t w = 1; w < 3; ++w) {
      uint64_t from = kT0 + w * 1000 * kMs, to = from + 1000 * kMs;
      EXPECT_NEAR(m.Share(0, from, to), 30.0, 1.0) << depth;
      EXPECT_NEAR(m.Share(1, from, to), 60.0, 1.0) << depth;
    }
    Model alone({a});
    alone.Run(kT0 + 2000 * kMs);
    EXPECT_NEAR(alone.Share(0, kT0 + 500 * kMs, kT0 + 2000 * kMs), 30.0, 1.0) << depth;
  }
}

// The first kernel of tenant `i` that starts at or after `t`, or 0.
uint64_t FirstStartAfter(const Model& m, size_t i, uint64_t t) {
  for (auto [s, e] : m.Busy(i)) {
    if (s >= t) return s;
  }
  return 0;
}

TEST(ArbiterPolicy, AnIdleTenantsShareGoesToTheOtherWithinOneTimeSlice) {
  for (int depth : {1, 4}) {
    TenantSpec a = Shallow(depth), b = Shallow(depth);
    a.guarantee = 30;
    b.guarantee = 70;
    b.stop_ns = kT0 + 1500 * kMs;
    Model m({a, b});
    m.Run(kT0 + 2500 * kMs);
    ASSERT_FALSE(m.Busy(1).empty());
    uint64_t b_end = m.Busy(1).back().second;
    // The GPU idles at most for the grace (0.5 ms) plus a's own launch latency, and a gets the
    // whole GPU from the next time slice on.
    uint64_t next = FirstStartAfter(m, 0, b_end);
    ASSERT_GT(next, 0u);
    EXPECT_LE(next - b_end, 500 * kUs + 100 * kUs + kStep) << depth;
    EXPECT_GE(m.Share(0, b_end + 5 * kMs, kT0 + 2500 * kMs), 92.0) << depth;
  }
}

// --- Priorities that conserve work ---

// A latency-bound tenant: one 1 ms kernel, then `gap` of host time after it sees the end.
TenantSpec LatencyBound(int32_t level, uint64_t gap) {
  TenantSpec s;
  s.level = level;
  s.gap_ns = gap;
  s.host_ns = 20 * kUs;
  s.host_jitter_ns = 60 * kUs;
  return s;
}

TenantSpec SaturatingLow() {
  TenantSpec s;
  s.level = kPriorityLow;
  return s;
}

// High keeps >= 95% of its throughput alone and its p99 wait within one kernel of alone; low
// gets at least half of the time high leaves idle.
void ExpectColocation(const TenantSpec& high, const TenantSpec& low, double low_min_of_idle) {
  Model alone({high});
  alone.Run(kT0 + 2000 * kMs);
  Model shared({high, low});
  shared.Run(kT0 + 2000 * kMs);
  SCOPED_TRACE("gap " + std::to_string(high.gap_ns / kUs) + " us, slack " +
               std::to_string(high.latency_slack_us) + " us");
  EXPECT_GE(static_cast<double>(shared.Kernels(0)), 0.95 * static_cast<double>(alone.Kernels(0)));
  EXPECT_LE(shared.WaitPercentile(0, 0.99),
            alone.WaitPercentile(0, 0.99) + 1 * kMs + high.latency_slack_us * kUs);
  double high_share = shared.Share(0, kT0 + 100 * kMs, kT0 + 2000 * kMs);
  double low_share = shared.Share(1, kT0 + 100 * kMs, kT0 + 2000 * kMs);
  EXPECT_GE(low_share, low_min_of_idle * (100.0 - high_share)) << high_share;
}

TEST(ArbiterPolicy, LowPriorityUsesTheIdleTimeOfALatencyBoundHighOne) {
  ExpectColocation(LatencyBound(kPriorityHigh, 2 * kMs), SaturatingLow(), 0.5);
  ExpectColocation(LatencyBound(kPriorityHigh, 10 * kMs), SaturatingLow(), 0.8);
  // The same below a normal slice, and for a low slice with a guarantee-free elastic setting.
  TenantSpec low = SaturatingLow();
  low.mode = kModeElastic;
  ExpectColocation(LatencyBound(kPriorityNormal, 2 * kMs), low, 0.5);
}

TEST(ArbiterPolicy, ThreeLevelsEachUseTheGapsOfTheMoreImportantOnes) {
  // high every 2 ms, normal every 5 ms, low saturating: high and normal as fast as alone, low
  // in the gaps both leave.
  TenantSpec high = LatencyBound(kPriorityHigh, 2 * kMs);
  TenantSpec mid = LatencyBound(kPriorityNormal, 5 * kMs);
  Model alone_high({high}), alone_mid({mid});
  alone_high.Run(kT0 + 2000 * kMs);
  alone_mid.Run(kT0 + 2000 * kMs);
  Model m({high, mid, SaturatingLow()});
  m.Run(kT0 + 2000 * kMs);
  uint64_t learnt = kT0 + 300 * kMs;
  EXPECT_GE(static_cast<double>(m.Kernels(0)), 0.95 * static_cast<double>(alone_high.Kernels(0)));
  EXPECT_GE(static_cast<double>(m.Kernels(1)), 0.9 * static_cast<double>(alone_mid.Kernels(0)));
  EXPECT_LE(m.WaitPercentile(0, 0.99, learnt), alone_high.WaitPercentile(0, 0.99) + 1 * kMs);
  double busy_above = m.Share(0, learnt, kT0 + 2000 * kMs) + m.Share(1, learnt, kT0 + 2000 * kMs);
  EXPECT_GE(m.Share(2, learnt, kT0 + 2000 * kMs), 0.5 * (100.0 - busy_above)) << busy_above;
}

TEST(ArbiterPolicy, LatencySlackTradesHighLatencyForLowThroughput) {
  // 1.5 ms between high's kernels: one low kernel fits; with 0.5 ms of slack, two do.
  TenantSpec strict = LatencyBound(kPriorityHigh, 1500 * kUs);
  TenantSpec relaxed = strict;
  relaxed.latency_slack_us = 600;
  Model a({strict, SaturatingLow()});
  a.Run(kT0 + 2000 * kMs);
  Model b({relaxed, SaturatingLow()});
  b.Run(kT0 + 2000 * kMs);
  double low_strict = a.Share(1, kT0 + 100 * kMs, kT0 + 2000 * kMs);
  double low_relaxed = b.Share(1, kT0 + 100 * kMs, kT0 + 2000 * kMs);
  EXPECT_GT(low_relaxed, low_strict + 10.0);
  // Once high's gaps are learnt (a few dozen launches): strict, low ends before high is back;
  // relaxed, high waits up to the slack.
  uint64_t learnt = kT0 + 300 * kMs;
  EXPECT_LE(a.WaitPercentile(0, 0.99, learnt), 200 * kUs);
  EXPECT_LE(b.WaitPercentile(0, 0.99, learnt), 600 * kUs + 200 * kUs);
  EXPECT_GT(b.WaitPercentile(0, 0.99, learnt), a.WaitPercentile(0, 0.99, learnt));
  // High pays for it with at most the slack per request (cycle of about 2.55 ms).
  EXPECT_GE(static_cast<double>(b.Kernels(0)), 0.95 * 2.55 / (2.55 + 0.6) * a.Kernels(0));
}

TEST(ArbiterPolicy, ASaturatingHighPriorityWithOneKernelInFlightHoldsLow) {
  // It comes back 20-80 us after each kernel: no low kernel fits, and the grace keeps its claim.
  TenantSpec high = Shallow(1);
  high.mode = kModeCapped;
  high.level = kPriorityHigh;
  Model alone({high});
  alone.Run(kT0 + 1000 * kMs);
  Model m({high, SaturatingLow()});
  m.Run(kT0 + 1000 * kMs);
  EXPECT_LT(m.Share(1, kT0 + 100 * kMs, kT0 + 1000 * kMs), 2.0);
  EXPECT_GE(static_cast<double>(m.Kernels(0)), 0.98 * static_cast<double>(alone.Kernels(0)));
}

TEST(ArbiterPolicy, LowPriorityRunsOnceTheHighOneStops) {
  TenantSpec high = LatencyBound(kPriorityHigh, 2 * kMs);
  high.stop_ns = kT0 + 500 * kMs;
  Model m({high, SaturatingLow()});
  m.Run(kT0 + 1000 * kMs);
  ASSERT_FALSE(m.Busy(0).empty());
  uint64_t high_end = m.Busy(0).back().second;
  // Within two of high's gaps it is late: low runs a kernel at a time; after 20 time slices it is
  // gone: low has the GPU.
  EXPECT_GE(m.Share(1, high_end + 100 * kMs, kT0 + 1000 * kMs), 99.0);
  EXPECT_GE(m.Share(1, high_end, high_end + 100 * kMs), 90.0);
}

}  // namespace
}  // namespace vgpu::shm
