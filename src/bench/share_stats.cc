#include "bench/share_stats.h"

#include <algorithm>

namespace vgpu::bench {

std::vector<std::optional<double>> ExpectedShares(const std::vector<TenantPolicy>& tenants) {
  size_t n = tenants.size();
  std::vector<std::optional<double>> out(n);
  std::vector<double> floor(n, 0), ceil(n, 0);
  double floors = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!tenants[i].saturating) continue;
    const TenantPolicy& t = tenants[i];
    int g = t.elastic ? t.guarantee : (t.max < 100 ? t.max : 0);
    ceil[i] = std::min<double>(t.max, t.demand);
    floor[i] = std::min<double>(g, ceil[i]);
    floors += floor[i];
  }
  if (floors > 100) {
    for (double& f : floor) f = f * 100 / floors;
    floors = 100;
  }
  std::vector<double> share = floor;
  double remaining = 100 - floors;
  for (int level = 0; level < 5 && remaining > 1e-9; ++level) {
    std::vector<size_t> group;
    double room = 0;
    for (size_t i = 0; i < n; ++i) {
      if (tenants[i].saturating && tenants[i].level == level) {
        group.push_back(i);
        room += ceil[i] - floor[i];
      }
    }
    if (group.empty()) continue;
    double give = std::min(remaining, room);
    // share_i = clamp(weight_i * lambda, floor_i, ceil_i); find lambda with sum(extra) = give.
    auto extra = [&](double lambda) {
      double sum = 0;
      for (size_t i : group) {
        double s = std::clamp(tenants[i].weight * lambda, floor[i], ceil[i]);
        sum += s - floor[i];
      }
      return sum;
    };
    double lo = 0, hi = 1;
    while (extra(hi) < give - 1e-9 && hi < 1e12) hi *= 2;
    for (int it = 0; it < 200; ++it) {
      double mid = (lo + hi) / 2;
      (extra(mid) < give ? lo : hi) = mid;
    }
    for (size_t i : group) share[i] = std::clamp(tenants[i].weight * hi, floor[i], ceil[i]);
    remaining -= give;
  }
  for (size_t i = 0; i < n; ++i) {
    if (tenants[i].saturating) out[i] = share[i];
  }
  return out;
}

std::optional<double> SyncDemand(const std::vector<KernelRecord>& records, int sync) {
  if (sync <= 0 || records.size() < 2 * static_cast<size_t>(sync)) return std::nullopt;
  double busy = 0, host = 0;
  for (size_t i = 0; i < records.size(); ++i) {
    const KernelRecord& r = records[i];
    busy += static_cast<double>(r.end_ns - r.start_ns);
    if (i > 0 && i % static_cast<size_t>(sync) == 0) {
      const KernelRecord& last = records[i - 1];
      if (r.call_ns > last.end_ns) host += static_cast<double>(r.call_ns - last.end_ns);
    }
  }
  if (busy <= 0) return std::nullopt;
  return 100.0 * busy / (busy + host);
}

double BusyPercent(const std::vector<KernelRecord>& records, uint64_t from, uint64_t to) {
  if (to <= from) return 0;
  uint64_t busy = 0;
  for (const KernelRecord& r : records) {
    uint64_t lo = std::max(r.start_ns, from), hi = std::min(r.end_ns, to);
    if (hi > lo) busy += hi - lo;
  }
  return 100.0 * static_cast<double>(busy) / static_cast<double>(to - from);
}

std::vector<double> WindowPercents(const std::vector<KernelRecord>& records, uint64_t from,
                                   uint64_t to, uint64_t window, uint64_t step) {
  std::vector<double> out;
  if (window == 0 || step == 0) return out;
  for (uint64_t t = from; t + window <= to; t += step) {
    out.push_back(BusyPercent(records, t, t + window));
  }
  return out;
}

uint64_t Quantile(std::vector<uint64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t rank = static_cast<size_t>(p * static_cast<double>(values.size()));
  if (rank >= values.size()) rank = values.size() - 1;
  return values[rank];
}

int ConvergedAfter(const std::vector<double>& per_second, double target, double tolerance) {
  int n = static_cast<int>(per_second.size());
  int last_bad = -1;
  for (int i = 0; i < n; ++i) {
    double d = per_second[i] - target;
    if (d > tolerance || d < -tolerance) last_bad = i;
  }
  return last_bad + 1 < n ? last_bad + 1 : -1;
}

}  // namespace vgpu::bench
