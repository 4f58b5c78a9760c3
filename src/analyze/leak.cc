#include "analyze/leak.h"

#include <algorithm>
#include <cmath>

#include "analyze/robust.h"
#include "analyze/series.h"

namespace vgpu::analyze {
namespace {

struct QuietStep {
  size_t at;  // the slot of the later sample
  double d;   // v[at] - v[at - 1]
};

// The steps between present neighbours of at most `max_step` either way.
std::vector<QuietStep> QuietSteps(const std::vector<double>& v, double max_step) {
  std::vector<QuietStep> q;
  for (size_t i = 1; i < v.size(); ++i) {
    if (!Present(v[i]) || !Present(v[i - 1])) continue;
    const double d = v[i] - v[i - 1];
    if (std::fabs(d) <= max_step) q.push_back({i, d});
  }
  return q;
}

enum class StepClass { kFlat, kLeakLike, kOther };

struct LeakDate {
  size_t start;       // the slot reported as the start
  size_t first_rise;  // the slot of the first leak-like step
  size_t from;        // the earliest slot read (0: the reading reached the start of the series)
  bool found;         // a leak-like step was found (else the first candidate stands for it)
};

// Where the leak of region [first, ...) of quiet steps `q` began, at `rate` per slot: see leak.h.
LeakDate DateLeak(const std::vector<double>& v, const std::vector<QuietStep>& q, size_t first,
                  size_t window, double rate, double band) {
  auto cls = [&](double d) {
    if (std::fabs(d) <= rate / band) return StepClass::kFlat;
    if (d > rate / band && d <= rate * band) return StepClass::kLeakLike;
    return StepClass::kOther;
  };
  const size_t a = first >= window ? first - window : 0, b = std::min(q.size(), first + window);
  // cost(s) = leak-like steps in [a, s) + flat steps in [s, b); the latest split of least cost.
  size_t cost = 0;
  for (size_t t = a; t < b; ++t) cost += cls(q[t].d) == StepClass::kFlat;
  size_t best = cost, split = a;
  for (size_t s = a + 1; s <= b; ++s) {
    const StepClass c = cls(q[s - 1].d);
    if (c == StepClass::kLeakLike) ++cost;
    if (c == StepClass::kFlat) --cost;
    if (cost <= best) best = cost, split = s;
  }
  size_t j = split;
  while (j < q.size() && cls(q[j].d) != StepClass::kLeakLike) ++j;
  const bool found = j < q.size();
  if (!found) j = first;
  const size_t j_at = q[j].at;
  size_t z_at = j_at - 1;  // with no flat step before: the start of the stretch of present samples
  bool flat_before = false;
  size_t earliest = a;  // the earliest quiet step read
  for (size_t t = j; t-- > 0;) {
    if (cls(q[t].d) == StepClass::kFlat) {
      z_at = q[t].at, flat_before = true;
      earliest = std::min(earliest, t);
      break;
    }
  }
  if (!flat_before) {
    while (z_at > 0 && Present(v[z_at - 1])) --z_at;
  }
  // Without w steps before the region or a flat step before its rise, the reading ran to the start.
  const size_t from = first >= window && flat_before ? q[earliest].at - 1 : 0;
  return {(z_at + j_at - 1) / 2, j_at, from, found};  // the leak began in [z_at, j_at - 1]
}

void DetectQuietCreep(const std::vector<double>& v, const DetectorOptions& o,
                      std::vector<Anomaly>* out, std::vector<LeakReach>* reach) {
  const size_t w = o.leak_creep_window;
  if (w == 0) return;
  const double per_slot = o.step_s / 3600.0;
  const double min_step = o.leak_min_slope_per_hour * per_slot;
  const std::vector<QuietStep> q = QuietSteps(v, o.leak_max_slope_per_hour * per_slot);
  const size_t m = q.size();
  if (m < w) return;
  std::vector<char> rising(m);
  std::vector<size_t> rises(m + 1, 0);  // rises[t] = rising steps in [0, t)
  for (size_t t = 0; t < m; ++t) {
    rising[t] = q[t].d >= min_step;
    rises[t + 1] = rises[t] + static_cast<size_t>(rising[t]);
  }
  const auto need = static_cast<size_t>(std::ceil(o.leak_creep_fraction * static_cast<double>(w)));
  std::vector<char> cand(m, 0);
  for (size_t t = 0; t + w <= m; ++t) cand[t] = rising[t] && rises[t + w] - rises[t] >= need;
  auto rate_of = [&](size_t from, size_t to) {  // the median rising step of [from, to]
    std::vector<double> steps;
    for (size_t u = from; u <= to; ++u) {
      if (rising[u]) steps.push_back(q[u].d);
    }
    return Median(std::move(steps));
  };
  const size_t first_out = out->size();  // out->back() is this rule's from here
  size_t open_first = 0;                 // the first quiet step of the region of out->back()
  for (size_t t = 0; t < m;) {
    if (!cand[t]) {
      ++t;
      continue;
    }
    size_t last = t;
    for (size_t u = t + 1; u < m && u <= last + w; ++u) {
      if (cand[u]) last = u;
    }
    size_t end = last + w - 1;
    while (!rising[end]) --end;
    const double rate = rate_of(t, end);
    const LeakDate date = DateLeak(v, q, t, w, rate, o.leak_rate_band);
    const size_t end_at = std::max(q[end].at, date.first_rise);
    // Closed: the w steps after the last candidate hold none, and each of them is judged on its
    // own w steps; the leak-like step that dates it was found.
    const size_t close = last + 2 * w - 1;
    const size_t settled =
        close < m && date.found ? std::max(q[close].at, date.first_rise) : LeakReach::kOpen;
    if (out->size() > first_out && date.start <= out->back().end) {
      // Dated inside the leak before it (steps of the process's own that fall split the
      // candidates): the same leak, reported once; it now depends on this region too.
      out->back().end = std::max(out->back().end, end_at);
      out->back().magnitude = rate_of(open_first, end) / per_slot;
      if (reach) {
        reach->back().from = std::min(reach->back().from, date.from);
        reach->back().settled = settled;
      }
    } else if (rate * static_cast<double>(end_at - date.start) >= o.leak_min_rise) {
      out->push_back({AnomalyKind::kLeak, date.start, end_at, rate / per_slot});
      open_first = t;
      if (reach) {
        LeakReach r;
        r.from = date.from;
        r.region = q[t].at;
        r.settled = settled;
        reach->push_back(r);
      }
    }
    t = end + 1;
  }
}

// Leaks in series too noisy for creep: see leak.h.
void DetectEnvelopeLeaks(const std::vector<double>& v, const DetectorOptions& o,
                         std::vector<Anomaly>* out) {
  const size_t n = v.size(), w = o.leak_window;
  if (n < w + 2) return;
  const double min_slope = o.leak_min_slope_per_hour * o.step_s / 3600.0;  // per slot
  const std::vector<double> env = CentredMedian(v, o.leak_envelope / 2);
  // Candidates: windows over which the smoothed series rises along a line.
  std::vector<char> cand(n, 0);
  for (size_t i = 0; i + w <= n; ++i) {
    if (CountPresent({v.begin() + static_cast<long>(i), v.begin() + static_cast<long>(i + w)}) <
        w * 3 / 4) {
      continue;
    }
    double s = TheilSenSlope(env, i, i + w, 20);
    if (!Present(s) || s < min_slope) continue;
    const double rise = s * static_cast<double>(w);
    std::vector<double> res;
    double mid = Median(env, i, i + w);
    for (size_t t = i; t < i + w; ++t) {
      if (Present(env[t])) {
        res.push_back(std::fabs(
            env[t] - mid - s * (static_cast<double>(t - i) - static_cast<double>(w - 1) / 2.0)));
      }
    }
    if (Median(std::move(res)) <= o.leak_linearity * rise) cand[i] = 1;
  }
  // Regions of candidate windows (overlapping windows form one); the start is the knee of a
  // flat-then-linear L1 fit of the smoothed series around the region's first window.
  for (size_t i = 0; i < n;) {
    if (!cand[i]) {
      ++i;
      continue;
    }
    size_t j = i, last = i;
    while (j < n && j < last + w) {
      if (cand[j]) last = j;
      ++j;
    }
    const size_t end = std::min(n, last + w);
    const double slope = TheilSenSlope(env, i, end, 40);
    const size_t a = i >= w ? i - w : 0, b = std::min(n, i + w);
    size_t knee = i;
    double best = INFINITY;
    for (size_t k = a + 1; k + 10 < b; ++k) {
      double level = Median(env, a, k), s = std::max(0.0, TheilSenSlope(env, k, b, 20)), cost = 0;
      if (!Present(level) || !Present(s)) continue;
      for (size_t t = a; t < b; ++t) {
        if (!Present(env[t])) continue;
        double f = t < k ? level : level + s * static_cast<double>(t - k);
        cost += std::fabs(env[t] - f);
      }
      if (cost < best) best = cost, knee = k;
    }
    out->push_back({AnomalyKind::kLeak, knee, end - 1, slope * 3600.0 / o.step_s});
    i = end;
  }
}

}  // namespace

void DetectLeaks(const std::vector<double>& v, const DetectorOptions& o, std::vector<Anomaly>* out,
                 std::vector<LeakReach>* reach) {
  std::vector<Anomaly> creep, envelope;
  DetectQuietCreep(v, o, &creep, reach);
  if (o.leak_envelope_rule) DetectEnvelopeLeaks(v, o, &envelope);
  out->insert(out->end(), creep.begin(), creep.end());
  for (const Anomaly& e : envelope) {  // a creep, where found, dates the same leak better
    if (std::none_of(creep.begin(), creep.end(),
                     [&](const Anomaly& c) { return c.start <= e.end && e.start <= c.end; })) {
      out->push_back(e);
      if (reach) reach->push_back({0, LeakReach::kOpen, e.start});
    }
  }
}

}  // namespace vgpu::analyze
