#include "analyze/anomaly.h"

#include <algorithm>
#include <cmath>

#include "analyze/leak.h"
#include "analyze/robust.h"
#include "analyze/series.h"

namespace vgpu::analyze {
namespace {

void DetectSpikes(const std::vector<double>& v, const DetectorOptions& o,
                  std::vector<Anomaly>* out) {
  const size_t n = v.size(), w = o.spike_window;
  std::vector<double> excess(n, 0);  // height above the local median where it is a spike
  std::vector<double> window;
  for (size_t i = 0; i < n; ++i) {
    if (!Present(v[i])) continue;
    size_t lo = i >= w ? i - w : 0, hi = std::min(n, i + w + 1);
    window.clear();
    for (size_t j = lo; j < hi; ++j) {
      if (j != i) window.push_back(v[j]);
    }
    if (CountPresent(window) < w) continue;
    double med = Quantile(window, 0, window.size(), 0.5);
    double q95 = Quantile(window, 0, window.size(), 0.95);
    double scale = std::max(
        {MadSigma(window, 0, window.size()), (q95 - med) / 1.645, o.spike_min / o.spike_z});
    double d = v[i] - med;
    if (d >= o.spike_min && d > o.spike_z * scale) excess[i] = d;
  }
  for (size_t i = 0; i < n;) {
    if (excess[i] <= 0) {
      ++i;
      continue;
    }
    size_t j = i;
    double peak = 0;
    while (j < n && excess[j] > 0) peak = std::max(peak, excess[j++]);
    if (j - i <= o.spike_max_len) out->push_back({AnomalyKind::kSpike, i, j - 1, peak});
    i = j;
  }
}

// The split in [a, b) minimising the pinball (quantile q) loss of two levels, each the
// q-quantile of its side.
size_t QuantileChangePoint(const std::vector<double>& v, size_t a, size_t b, size_t min_side,
                           double q) {
  size_t best = (a + b) / 2;
  double best_cost = INFINITY;
  for (size_t k = a + min_side; k + min_side <= b; ++k) {
    double m1 = Quantile(v, a, k, q), m2 = Quantile(v, k, b, q), cost = 0;
    if (!Present(m1) || !Present(m2)) continue;
    for (size_t t = a; t < b; ++t) {
      if (!Present(v[t])) continue;
      double r = v[t] - (t < k ? m1 : m2);
      cost += r >= 0 ? q * r : (q - 1) * r;
    }
    if (cost < best_cost) best_cost = cost, best = k;
  }
  return best;
}

void DetectShifts(const std::vector<double>& v, const DetectorOptions& o,
                  std::vector<Anomaly>* out) {
  const size_t n = v.size(), w = o.shift_window;
  if (n < 2 * w) return;
  std::vector<double> d(n, 0);
  for (size_t i = w; i + w <= n; ++i) {
    if (CountPresent({v.begin() + static_cast<long>(i - w), v.begin() + static_cast<long>(i)}) <
            w / 2 ||
        CountPresent({v.begin() + static_cast<long>(i), v.begin() + static_cast<long>(i + w)}) <
            w / 2) {
      continue;
    }
    d[i] = Quantile(v, i, i + w, o.shift_quantile) - Quantile(v, i - w, i, o.shift_quantile);
  }
  // Change points: one per region of same-signed |d| >= shift_min.
  struct Change {
    size_t at;
    double size;
  };
  std::vector<Change> changes;
  for (size_t i = 0; i < n;) {
    if (std::fabs(d[i]) < o.shift_min) {
      ++i;
      continue;
    }
    size_t j = i;
    const bool up = d[i] > 0;
    while (j < n && std::fabs(d[j]) >= o.shift_min && (d[j] > 0) == up) ++j;
    size_t a = i >= w ? i - w : 0, b = std::min(n, j - 1 + w);
    size_t k = QuantileChangePoint(v, a, b, std::min<size_t>(5, (b - a) / 4), o.shift_quantile);
    double size = Quantile(v, k, std::min(n, k + w), o.shift_quantile) -
                  Quantile(v, k >= w ? k - w : 0, k, o.shift_quantile);
    if (std::fabs(size) >= o.shift_min) changes.push_back({k, size});
    i = j;
  }
  // Change points found from neighbouring regions can coincide: keep the larger of two within
  // 5 slots.
  std::vector<Change> merged;
  for (const Change& c : changes) {
    if (!merged.empty() && c.at <= merged.back().at + 5) {
      if (std::fabs(c.size) > std::fabs(merged.back().size)) merged.back() = c;
      continue;
    }
    merged.push_back(c);
  }
  changes.swap(merged);
  // A change starts a shift unless it undoes the shift just started (opposite sign, back to
  // within half of it), in which case it is that shift's end. A shift lasts until the next
  // change.
  bool open = false;
  for (size_t c = 0; c < changes.size(); ++c) {
    if (open && (changes[c].size > 0) != (changes[c - 1].size > 0) &&
        std::fabs(changes[c].size + changes[c - 1].size) <= 0.5 * std::fabs(changes[c - 1].size)) {
      open = false;
      continue;
    }
    size_t end = c + 1 < changes.size() ? changes[c + 1].at - 1 : n - 1;
    out->push_back({AnomalyKind::kLevelShift, changes[c].at, end, changes[c].size});
    open = true;
  }
}

// Whether slot t of a stuck run's context was busy: non-zero by more than the size of a rise
// (a level shift up, of `shifts`) that covers t and has ended by the run's start `run` (within 5
// slots). A pod lifted from idle by such a rise and back at 0 after it has returned to its level:
// the run is that rise's end (a level shift), not a pod that went silent. The same whether or
// not shifts are reported.
bool BusyBeyondShifts(const std::vector<double>& v, size_t t, size_t run,
                      const std::vector<Anomaly>& shifts) {
  double lift = 0;
  for (const Anomaly& s : shifts) {
    if (s.magnitude > 0 && s.start <= t && t <= s.end && s.end < run + 5) {
      lift = std::max(lift, s.magnitude);
    }
  }
  return v[t] > lift;
}

void DetectStuck(const std::vector<double>& v, const DetectorOptions& o,
                 const std::vector<Anomaly>& shifts, std::vector<Anomaly>* out) {
  const size_t n = v.size();
  for (size_t i = 0; i < n;) {
    if (!(Present(v[i]) && v[i] == 0)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < n && Present(v[j]) && v[j] == 0) ++j;
    if (j - i >= o.stuck_min_len && i >= o.stuck_context / 2) {
      size_t lo = i >= o.stuck_context ? i - o.stuck_context : 0, present = 0, active = 0;
      for (size_t t = lo; t < i; ++t) {
        if (Present(v[t])) ++present, active += BusyBeyondShifts(v, t, i, shifts);
      }
      if (present > 0 &&
          static_cast<double>(active) >= o.stuck_active_fraction * static_cast<double>(present)) {
        out->push_back({AnomalyKind::kStuckZero, i, j - 1, static_cast<double>(j - i)});
      }
    }
    i = j;
  }
}

}  // namespace

std::string_view KindName(AnomalyKind k) {
  switch (k) {
    case AnomalyKind::kSpike:
      return "spike";
    case AnomalyKind::kLevelShift:
      return "level_shift";
    case AnomalyKind::kStuckZero:
      return "stuck_zero";
    case AnomalyKind::kLeak:
      return "leak";
  }
  return "?";
}

DetectorOptions UtilizationOptions(double step_s) {
  DetectorOptions o;
  o.step_s = step_s;
  o.leaks = false;
  return o;
}

DetectorOptions MemoryOptions(double step_s) {
  DetectorOptions o;
  o.step_s = step_s;
  o.spikes = o.shifts = o.stuck = false;
  return o;
}

std::vector<Anomaly> DetectAnomalies(const std::vector<double>& v, const DetectorOptions& o) {
  std::vector<Anomaly> out;
  if (o.spikes) DetectSpikes(v, o, &out);
  // The shifts are also the context of the stuck-at-zero runs (BusyBeyondShifts).
  std::vector<Anomaly> shifts;
  if (o.shifts || o.stuck) DetectShifts(v, o, &shifts);
  if (o.stuck) DetectStuck(v, o, shifts, &out);
  if (o.shifts) out.insert(out.end(), shifts.begin(), shifts.end());
  if (o.leaks) DetectLeaks(v, o, &out);
  // A stuck-at-zero run also moves the level: report it once, as the run.
  std::erase_if(out, [&](const Anomaly& a) {
    if (a.kind != AnomalyKind::kLevelShift) return false;
    return std::any_of(out.begin(), out.end(), [&](const Anomaly& z) {
      return z.kind == AnomalyKind::kStuckZero && a.start + 5 >= z.start && a.start <= z.end + 5;
    });
  });
  std::stable_sort(out.begin(), out.end(),
                   [](const Anomaly& a, const Anomaly& b) { return a.start < b.start; });
  return out;
}

}  // namespace vgpu::analyze
