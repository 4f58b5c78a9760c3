#include "analyze/rightsize.h"

#include <algorithm>
#include <cmath>

#include "analyze/robust.h"

namespace vgpu::analyze {
namespace {

constexpr double kPrior = 10;

// Maximum of the present samples of v[a, b); 0 when none.
double MaxOf(const std::vector<double>& v, size_t a, size_t b) {
  double m = 0;
  for (size_t i = a; i < std::min(b, v.size()); ++i) {
    if (Present(v[i])) m = std::max(m, v[i]);
  }
  return m;
}

void Judge(double limit, double next_max, RuleScore* s) {
  ++s->windows;
  if (next_max > limit) {
    ++s->exceeded;
  } else {
    s->slack_sum += (limit - next_max) / limit;
  }
}

// Calls f(series, boundary, history max, trailing max, next max) for every judged window.
template <typename F>
void ForEachWindow(const SeriesSet& m, const RightsizeOptions& o, F f) {
  const size_t w = o.window;
  for (size_t si = 0; si < m.series.size(); ++si) {
    const std::vector<double>& v = m.series[si].values;
    double hist = 0;
    for (size_t b = w; b + w <= v.size(); b += w) {
      hist = std::max(hist, MaxOf(v, b - w, b));
      double trailing = MaxOf(v, b - w, b), next = MaxOf(v, b, b + w);
      if (next <= 0 || hist <= 0 || trailing <= 0) continue;
      f(si, b, hist, trailing, next);
    }
  }
}

}  // namespace

RuleScore ScoreTrailingMax(const SeriesSet& memory, const RightsizeOptions& o, double factor,
                           size_t first_start) {
  RuleScore s;
  ForEachWindow(memory, o, [&](size_t, size_t b, double, double trailing, double next) {
    if (b >= first_start) Judge(factor * trailing, next, &s);
  });
  return s;
}

RightsizeReport Rightsize(const SeriesSet& memory, const RightsizeOptions& o) {
  RightsizeReport r;
  const size_t half = memory.length / 2;
  std::vector<double> ratios;
  ForEachWindow(memory, o, [&](size_t, size_t b, double hist, double, double next) {
    if (b + o.window <= half) ratios.push_back(next / hist);
  });
  r.margin = ratios.empty() ? 1.0 : std::max(1.0, Quantile(ratios, 0, ratios.size(), 1 - o.target));
  ForEachWindow(memory, o, [&](size_t, size_t b, double hist, double, double next) {
    if (b >= half) Judge(r.margin * hist, next, &r.ours);
  });
  r.trailing_1_1 = ScoreTrailingMax(memory, o, 1.1, half);
  r.trailing_1_1_all = ScoreTrailingMax(memory, o, 1.1, 0);
  // The smallest factor (to 0.001) whose exceedance is no higher than ours.
  double lo = 1.0, hi = 10.0;
  if (ScoreTrailingMax(memory, o, hi, half).ExceedRate() > r.ours.ExceedRate()) {
    r.equal_rate_factor = INFINITY;
  } else {
    while (hi - lo > 1e-3) {
      double mid = (lo + hi) / 2;
      (ScoreTrailingMax(memory, o, mid, half).ExceedRate() <= r.ours.ExceedRate() ? hi : lo) = mid;
    }
    r.equal_rate_factor = hi;
    r.trailing_equal = ScoreTrailingMax(memory, o, hi, half);
  }
  // Recommendations from all history, with each workload's own record under the rule.
  std::vector<Recommendation> rec(memory.series.size());
  ForEachWindow(memory, o, [&](size_t si, size_t, double hist, double, double next) {
    ++rec[si].history_windows;
    rec[si].history_exceeded += next > r.margin * hist;
  });
  for (size_t si = 0; si < memory.series.size(); ++si) {
    Recommendation& x = rec[si];
    x.id = memory.series[si].id;
    x.peak = MaxOf(memory.series[si].values, 0, memory.length);
    x.limit = r.margin * x.peak;
    x.risk = (static_cast<double>(x.history_exceeded) + o.target * kPrior) /
             (static_cast<double>(x.history_windows) + kPrior);
  }
  r.recommendations = std::move(rec);
  return r;
}

}  // namespace vgpu::analyze
