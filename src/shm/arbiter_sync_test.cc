// The arbiter's policy for tenants that launch a few kernels and then synchronize (inference
// loops), with and without host time between their bursts, on an idle and on a loaded host (late
// wake-ups, the occasional long stall), against the model of arbiter_test_model.h; and the
// hand-over of a turn whose new owner wakes late.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "shm/arbiter_policy.h"
#include "shm/arbiter_rules.h"
#include "shm/arbiter_test_model.h"

namespace vgpu::shm {
namespace {

using testmodel::kMs;
using testmodel::kT0;
using testmodel::kUs;
using testmodel::Model;
using testmodel::TenantSpec;

// Launches `burst` kernels of 1 ms, waits until it sees the last one end (20-80 us later), spends
// `host` on the host, and again.
TenantSpec Sync(int burst, uint64_t host, bool loaded) {
  TenantSpec s;
  s.mode = kModeElastic;
  s.burst = burst;
  s.gap_ns = host;
  s.host_ns = 20 * kUs;
  s.host_jitter_ns = loaded ? 40 * kUs : 60 * kUs;
  if (loaded) {
    // As measured on a 2-core host with both cores busy: wake-ups up to 60 us late, and 3% of
    // them stalled up to 2 ms more.
    s.wake_jitter_ns = 60 * kUs;
    s.stall_permille = 30;
    s.stall_ns = 2 * kMs;
  }
  return s;
}

constexpr uint64_t kRun = 5000 * kMs;
constexpr uint64_t kFrom = kT0 + 1000 * kMs;  // after the first second
constexpr uint64_t kTo = kT0 + kRun;

double Alone(const TenantSpec& s) {
  Model m({s});
  m.Run(kT0 + kRun);
  return m.Share(0, kFrom, kTo);
}

// The expected split of two saturating tenants (`fair_a` for a) when each can use at most what it
// uses alone: one that cannot use its share leaves the rest to the other.
std::pair<double, double> Targets(double fair_a, double alone_a, double alone_b) {
  double a = fair_a, b = 100 - fair_a;
  if (b > alone_b) {
    b = alone_b;
    a = std::min(alone_a, 100 - b);
  } else if (a > alone_a) {
    a = alone_a;
    b = std::min(alone_b, 100 - a);
  }
  return {a, b};
}

void ExpectShares(TenantSpec a, TenantSpec b, double fair_a, const std::string& what) {
  Model m({a, b});
  m.Run(kT0 + kRun);
  auto [ta, tb] = Targets(fair_a, Alone(a), Alone(b));
  double sa = m.Share(0, kFrom, kTo), sb = m.Share(1, kFrom, kTo);
  SCOPED_TRACE(what + ": a " + std::to_string(sa) + " of " + std::to_string(ta) + ", b " +
               std::to_string(sb) + " of " + std::to_string(tb));
  // One kernel in flight without host time: the GPU must idle while the larger tenant turns
  // around (20-80 us, twice in four kernels) for the shares to hold, which costs it about 2
  // points; everything else lands within 1.5 points.
  double tolerance = a.burst == 1 && a.gap_ns == 0 ? 3.0 : 1.5;
  EXPECT_NEAR(sa, ta, tolerance);
  EXPECT_NEAR(sb, tb, tolerance);
}

TEST(ArbiterSync, LaunchThenSyncTenantsShareByWeightAndByGuarantee) {
  for (bool loaded : {false, true}) {
    for (uint64_t host : {uint64_t{0}, 1 * kMs}) {
      for (int burst : {1, 4, 20}) {
        std::string what = std::string(loaded ? "loaded host, " : "idle host, ") +
                           std::to_string(burst) + " kernels per sync, " +
                           std::to_string(host / kUs) + " us of host time";
        TenantSpec a = Sync(burst, host, loaded), b = a;
        b.weight = 3;
        ExpectShares(a, b, 25, what + ", weights 1:3");
        a.guarantee = 30;
        b = a;
        b.guarantee = 70;
        ExpectShares(a, b, 30, what + ", guarantees 30/70");
      }
    }
  }
}

// A tenant that keeps one kernel in flight on a loaded host: the GPU idles only for the tenants'
// own turnarounds, and the weights hold.
TEST(ArbiterSync, OneKernelInFlightOnALoadedHost) {
  TenantSpec a = Sync(1, 0, true), b = a;
  a.burst = b.burst = 0;
  a.depth = b.depth = 1;
  b.weight = 3;
  Model m({a, b});
  m.Run(kT0 + kRun);
  double sa = m.Share(0, kFrom, kTo), sb = m.Share(1, kFrom, kTo);
  EXPECT_NEAR(sa, 25, 2.0);
  EXPECT_NEAR(sb, 75, 3.5);
  EXPECT_GE(sa + sb, 95.0);
}

struct Gate {
  ProcIdentity id;
  int slice = -1, proc = -1;
};

Gate Join(Arbiter* a, const char* name, uint32_t weight, int index) {
  Gate g;
  g.id = CurrentProcIdentity();
  g.id.start_time += 1000 + static_cast<uint64_t>(index);
  ArbiterSliceConfig c{};
  c.max_pct = 100;
  c.weight = weight;
  c.level = kPriorityNormal;
  c.mode = kModeElastic;
  c.time_slice_ns = kDefaultTimeSliceNs;
  EXPECT_EQ(JoinArbiter(a, SliceKey(name), name, c, g.id, kT0, &g.slice, &g.proc),
            RegionError::kOk);
  return g;
}

AdmitDecision Ask(Arbiter* a, const Gate& g, uint64_t now, bool waiting) {
  AdmitRequest r;
  r.slice = g.slice;
  r.proc = g.proc;
  r.now_ns = now;
  r.estimate_ns = 1 * kMs;
  r.waiting = waiting;
  return TryAdmit(a, r, g.id);
}

// A turn handed to a slice whose gate sleeps (a late wake-up on a loaded host) does not keep the
// GPU idle from a slice that asks: after kHandOverGraceNs of the GPU running free without the
// owner's launch, the asker runs; the owner gets the next turn and queues behind it. (The
// kernels run exactly their estimates, so no end is reported.)
TEST(ArbiterSync, AHandedOverTurnThatIsNotUsedDoesNotKeepTheGpuIdle) {
  auto arbiter = std::make_unique<Arbiter>();
  Arbiter* a = arbiter.get();
  InitializeArbiter(a, "GPU-test", false);
  Gate heavy = Join(a, "heavy", 3, 0);  // the weight that is owed time
  Gate light = Join(a, "light", 1, 1);
  uint64_t t = kT0;
  AdmitDecision d = Ask(a, light, t, false);  // light runs a kernel [t, t + 1 ms)
  ASSERT_TRUE(d.admitted);
  // heavy asks and waits; its gate then sleeps.
  ASSERT_FALSE(Ask(a, heavy, t + 10 * kUs, false).admitted);
  // light's kernel ends; light launches again: heavy outranks it, so the turn is handed to
  // heavy while light's second kernel runs [t + 1.05 ms, t + 2.05 ms).
  d = Ask(a, light, t + 1050 * kUs, false);
  ASSERT_TRUE(d.admitted);
  ASSERT_EQ(a->header.owner, heavy.slice);
  // heavy's gate does not wake in time. light's kernel ends and light asks again: the GPU is free
  // and the owner has not launched; within the hand-over grace light waits, told to look again
  // by the end of the grace.
  const uint64_t free_at = t + 2050 * kUs;
  d = Ask(a, light, free_at + 20 * kUs, false);
  EXPECT_FALSE(d.admitted);
  EXPECT_LE(d.retry_at_ns, free_at + internal::kHandOverGraceNs);
  // At the end of the grace it runs.
  d = Ask(a, light, free_at + internal::kHandOverGraceNs, true);
  ASSERT_TRUE(d.admitted);
  // heavy, awake at last, gets the turn back and queues behind light's kernel.
  d = Ask(a, heavy, free_at + 300 * kUs, true);
  ASSERT_TRUE(d.admitted);
  EXPECT_EQ(d.start_ns, free_at + internal::kHandOverGraceNs + 1 * kMs);
}

}  // namespace
}  // namespace vgpu::shm
