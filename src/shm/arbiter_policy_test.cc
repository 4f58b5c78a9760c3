// The arbiter's policy against a model of a GPU without MPS (kernels of all tenants run one at a
// time, in launch order), on a synthetic clock: caps, guarantees, elastic give-back, weights and
// priorities, deterministic and fast. Real processes, crashes and the futex are tested in
// arbiter_test.cc; real launches through libvgpu.so in tests/compute.
#include "shm/arbiter_policy.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace vgpu::shm {
namespace {

constexpr uint64_t kMs = 1000 * 1000;
constexpr uint64_t kUs = 1000;
constexpr uint64_t kStep = 20 * kUs;  // how often sleeping tenants look at the clock

struct TenantSpec {
  uint32_t max = 100;
  uint32_t guarantee = 0;
  uint32_t weight = 1;
  int32_t level = kPriorityNormal;
  uint32_t mode = kModeCapped;
  uint64_t kernel_ns = 1 * kMs;
  uint64_t gap_ns = 0;    // > 0: launch one kernel, wait for it, think this long, repeat
  uint64_t start_ns = 0;  // joins at this time
  uint64_t slice_ns = 5 * kMs;
};

struct Tenant {
  TenantSpec spec;
  ProcIdentity id;
  int slice = -1, proc = -1;
  bool joined = false;
  bool waiting = false;
  uint64_t wake_ns = 0;
  uint32_t seen_generation = 0;
  uint64_t demand_since = 0;  // gap tenants: when the current request was made
  uint64_t pending_end = 0;   // gap tenants: end of the kernel in flight
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // device intervals
  std::vector<uint64_t> waits;  // request-to-start (gap tenants) / admit-to-start
  uint64_t kernels = 0;
};

class Model {
 public:
  explicit Model(std::vector<TenantSpec> specs) {
    arbiter_ = std::make_unique<Arbiter>();
    InitializeArbiter(arbiter_.get(), "GPU-test", false);
    ProcIdentity self = CurrentProcIdentity();
    for (size_t i = 0; i < specs.size(); ++i) {
      Tenant t;
      t.spec = specs[i];
      t.id = self;
      t.id.start_time = self.start_time + 1000 + i;  // distinct "processes" in one
      tenants_.push_back(t);
    }
  }

  void Run(uint64_t until) {
    for (; now_ < until; now_ += kStep) {
      // Rotate who goes first so that no tenant wins every tie by its index.
      size_t n = tenants_.size();
      for (size_t k = 0; k < n; ++k) Step(tenants_[(k + rotation_) % n]);
      rotation_++;
    }
  }

  // Share of the device (percent) tenant i got in [from, to).
  double Share(size_t i, uint64_t from, uint64_t to) const {
    uint64_t busy = 0;
    for (auto [s, e] : tenants_[i].busy) {
      uint64_t lo = std::max(s, from), hi = std::min(e, to);
      if (hi > lo) busy += hi - lo;
    }
    return 100.0 * static_cast<double>(busy) / static_cast<double>(to - from);
  }

  uint64_t WaitPercentile(size_t i, double p) const {
    std::vector<uint64_t> w = tenants_[i].waits;
    if (w.empty()) return 0;
    std::sort(w.begin(), w.end());
    return w[std::min(w.size() - 1, static_cast<size_t>(p * static_cast<double>(w.size())))];
  }

  uint64_t Kernels(size_t i) const { return tenants_[i].kernels; }
  Arbiter* arbiter() { return arbiter_.get(); }

 private:
  void Step(Tenant& t) {
    if (now_ < t.spec.start_ns) return;
    if (!t.joined) {
      ArbiterSliceConfig c{};
      c.max_pct = t.spec.max;
      c.guarantee_pct = t.spec.guarantee;
      c.weight = t.spec.weight;
      c.level = t.spec.level;
      c.mode = t.spec.mode;
      c.time_slice_ns = t.spec.slice_ns;
      std::string name = "t" + std::to_string(&t - tenants_.data());
      ASSERT_EQ(JoinArbiter(arbiter_.get(), SliceKey(name.c_str()), name.c_str(), c, t.id, now_,
                            &t.slice, &t.proc),
                RegionError::kOk);
      t.joined = true;
      t.demand_since = now_;
    }
    if (t.waiting) {
      uint32_t gen = std::atomic_ref<uint32_t>(arbiter_->header.generation).load();
      if (now_ < t.wake_ns && gen == t.seen_generation) return;
    }
    for (int burst = 0; burst < 64; ++burst) {
      if (t.spec.gap_ns > 0) {
        if (t.pending_end != 0) {
          if (now_ < t.pending_end) return;
          t.demand_since = t.pending_end + t.spec.gap_ns;  // thinks, then asks again
          t.pending_end = 0;
        }
        if (now_ < t.demand_since) return;
      }
      AdmitRequest req;
      req.slice = t.slice;
      req.proc = t.proc;
      req.now_ns = now_;
      req.estimate_ns = t.spec.kernel_ns;
      req.waiting = t.waiting;
      AdmitDecision d = TryAdmit(arbiter_.get(), req, t.id);
      ASSERT_EQ(d.status, RegionError::kOk);
      if (!d.admitted) {
        t.waiting = true;
        t.wake_ns = d.retry_at_ns;
        t.seen_generation = d.generation;
        return;
      }
      t.waiting = false;
      uint64_t start = std::max(now_, device_free_);
      uint64_t end = start + t.spec.kernel_ns;
      device_free_ = end;
      t.busy.push_back({start, end});
      t.kernels++;
      if (t.spec.gap_ns > 0) {
        t.waits.push_back(start - t.demand_since);
        t.pending_end = end;
        return;
      }
      t.waits.push_back(start - now_);
    }
  }

  std::unique_ptr<Arbiter> arbiter_;
  std::vector<Tenant> tenants_;
  uint64_t now_ = 1000 * kMs;
  uint64_t device_free_ = 0;
  size_t rotation_ = 0;
};

constexpr uint64_t kT0 = 1000 * kMs;  // the model's clock starts here

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
  // Low gets nothing while high keeps asking within its time slice... and all of it once high
  // stops (here high never stops, so low is starved).
  EXPECT_LT(shared.Share(1, kT0 + 100 * kMs, kT0 + 2000 * kMs), 5.0);
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

}  // namespace
}  // namespace vgpu::shm
