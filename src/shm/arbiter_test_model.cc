#include "shm/arbiter_test_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>

namespace vgpu::shm::testmodel {

struct Model::Tenant {
  TenantSpec spec;
  ProcIdentity id;
  int slice = -1, proc = -1;
  bool joined = false;
  bool waiting = false;
  uint64_t wake_ns = 0;
  uint32_t seen_generation = 0;
  uint64_t respond_at = 0;        // a woken gate runs from then on (0: not woken)
  uint64_t demand_since = 0;      // gap and burst tenants: when the current request was made
  uint64_t pending_end = 0;       // gap and burst tenants: when it sees its last kernel end
  int burst_left = 0;             // gap and burst tenants: launches left in this request
  std::deque<uint64_t> inflight;  // depth tenants: when each kernel in flight is seen ending
  uint64_t call_ns = 0;           // when the current launch was called
  uint64_t random = 0;
  std::vector<std::pair<uint64_t, uint64_t>> busy;  // device intervals
  // (start, wait): request-to-start (gap tenants' first kernel), call-to-start (depth tenants,
  // later kernels of a burst), admission-to-start (saturating tenants)
  std::vector<std::pair<uint64_t, uint64_t>> waits;
  uint64_t kernels = 0;
};

Model::Model(std::vector<TenantSpec> specs) {
  arbiter_ = std::make_unique<Arbiter>();
  InitializeArbiter(arbiter_.get(), "GPU-test", false);
  ProcIdentity self = CurrentProcIdentity();
  for (size_t i = 0; i < specs.size(); ++i) {
    Tenant t;
    t.spec = specs[i];
    t.id = self;
    t.id.start_time = self.start_time + 1000 + i;  // distinct "processes" in one
    t.random = 0x9e3779b97f4a7c15ULL * (i + 1);
    tenants_.push_back(t);
  }
}

Model::~Model() = default;

void Model::Run(uint64_t until) {
  for (; now_ < until; now_ += kStep) {
    // Rotate who goes first so that no tenant wins every tie by its index.
    size_t n = tenants_.size();
    for (size_t k = 0; k < n; ++k) Step(tenants_[(k + rotation_) % n]);
    rotation_++;
  }
}

double Model::Share(size_t i, uint64_t from, uint64_t to) const {
  uint64_t busy = 0;
  for (auto [s, e] : tenants_[i].busy) {
    uint64_t lo = std::max(s, from), hi = std::min(e, to);
    if (hi > lo) busy += hi - lo;
  }
  return 100.0 * static_cast<double>(busy) / static_cast<double>(to - from);
}

uint64_t Model::WaitPercentile(size_t i, double p, uint64_t from) const {
  std::vector<uint64_t> w;
  for (auto [start, wait] : tenants_[i].waits) {
    if (start >= from) w.push_back(wait);
  }
  if (w.empty()) return 0;
  std::sort(w.begin(), w.end());
  return w[std::min(w.size() - 1, static_cast<size_t>(p * static_cast<double>(w.size())))];
}

uint64_t Model::Kernels(size_t i) const { return tenants_[i].kernels; }

const std::vector<std::pair<uint64_t, uint64_t>>& Model::Busy(size_t i) const {
  return tenants_[i].busy;
}

uint64_t Model::Random(Tenant& t, uint64_t below) {
  if (below == 0) return 0;
  t.random = t.random * 6364136223846793005ULL + 1442695040888963407ULL;
  return (t.random >> 33) % below;
}

uint64_t Model::Stall(Tenant& t) {
  if (t.spec.stall_permille == 0 || Random(t, 1000) >= t.spec.stall_permille) return 0;
  return Random(t, t.spec.stall_ns);
}

uint64_t Model::SeenAt(Tenant& t, uint64_t end) {
  return end + t.spec.host_ns + Random(t, t.spec.host_jitter_ns) + Stall(t);
}

void Model::Step(Tenant& t) {
  if (now_ < t.spec.start_ns) return;
  const bool requests = t.spec.gap_ns > 0 || t.spec.burst > 0;
  if (!t.joined) {
    ArbiterSliceConfig c{};
    c.max_pct = t.spec.max;
    c.guarantee_pct = t.spec.guarantee;
    c.weight = t.spec.weight;
    c.level = t.spec.level;
    c.mode = t.spec.mode;
    c.time_slice_ns = t.spec.slice_ns;
    c.latency_slack_us = t.spec.latency_slack_us;
    std::string name = "t" + std::to_string(&t - tenants_.data());
    ASSERT_EQ(JoinArbiter(arbiter_.get(), SliceKey(name.c_str()), name.c_str(), c, t.id, now_,
                          &t.slice, &t.proc),
              RegionError::kOk);
    t.joined = true;
    t.demand_since = now_;
  }
  if (t.waiting) {
    if (t.respond_at == 0) {
      uint32_t gen = std::atomic_ref<uint32_t>(arbiter_->header.generation).load();
      if (now_ < t.wake_ns && gen == t.seen_generation) return;
      t.respond_at = now_ + Random(t, t.spec.wake_jitter_ns) + Stall(t);
    }
    if (now_ < t.respond_at) return;
    t.respond_at = 0;
  }
  for (int burst = 0; burst < 64; ++burst) {
    if (t.spec.stop_ns != 0 && now_ >= t.spec.stop_ns && !t.waiting) return;
    if (requests && t.burst_left == 0) {
      if (t.pending_end != 0) {
        if (now_ < t.pending_end) return;
        t.demand_since = t.pending_end + t.spec.gap_ns;  // thinks, then asks again
        t.pending_end = 0;
      }
      if (now_ < t.demand_since) return;
      t.burst_left = std::max(t.spec.burst, 1);
      t.call_ns = t.demand_since;
    } else if (!requests && t.spec.depth > 0 && !t.waiting) {
      while (!t.inflight.empty() && t.inflight.front() <= now_) t.inflight.pop_front();
      if (static_cast<int>(t.inflight.size()) >= t.spec.depth) return;
      t.call_ns = now_;
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
    if (!requests && t.spec.depth == 0) t.call_ns = now_;  // saturating: admission to start
    t.waits.push_back({start, start - t.call_ns});
    if (requests) {
      if (--t.burst_left == 0) {
        t.pending_end = SeenAt(t, end);
        return;
      }
      t.call_ns = now_;
      continue;
    }
    if (t.spec.depth > 0) t.inflight.push_back(SeenAt(t, end));
  }
}

}  // namespace vgpu::shm::testmodel
