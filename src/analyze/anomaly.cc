#include "analyze/anomaly.h"

#include <algorithm>
#include <cmath>

#include "analyze/robust.h"
#include "analyze/series.h"

namespace vgpu::analyze {
namespace {

constexpr double kGiB = 1073741824.0;

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

void DetectStuck(const std::vector<double>& v, const DetectorOptions& o,
                 std::vector<Anomaly>* out) {
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
        if (Present(v[t])) ++present, active += v[t] > 0;
      }
      if (present > 0 &&
          static_cast<double>(active) >= o.stuck_active_fraction * static_cast<double>(present)) {
        out->push_back({AnomalyKind::kStuckZero, i, j - 1, static_cast<double>(j - i)});
      }
    }
    i = j;
  }
}

// Creep: memory that rises by small steps sample after sample (a serving process's memory is
// otherwise flat between allocation jumps). Regions of windows where at least
// `leak_creep_fraction` of the steps are small rises (0 < step <= 16 x the minimum slope) adding up
// to half the minimum slope over the window; the start is the sample before the region's first
// small rise.
void DetectCreep(const std::vector<double>& v, const DetectorOptions& o,
                 std::vector<Anomaly>* out) {
  const size_t n = v.size(), w = o.leak_creep_window;
  if (n < w + 1) return;
  const double min_slope = o.leak_min_slope_per_hour * o.step_s / 3600.0;
  const double max_step = 16 * min_slope;
  std::vector<double> step(n, kMissing);
  for (size_t i = 1; i < n; ++i) {
    if (Present(v[i]) && Present(v[i - 1])) step[i] = v[i] - v[i - 1];
  }
  auto creeping = [&](double d) { return Present(d) && d > 0 && d <= max_step; };
  std::vector<char> cand(n, 0);
  for (size_t i = 1; i + w <= n; ++i) {
    size_t present = 0, small = 0;
    double rise = 0;
    for (size_t t = i; t < i + w; ++t) {
      if (!Present(step[t])) continue;
      ++present;
      if (creeping(step[t])) ++small, rise += step[t];
    }
    if (present >= w / 2 &&
        static_cast<double>(small) >= o.leak_creep_fraction * static_cast<double>(present) &&
        rise >= 0.5 * min_slope * static_cast<double>(w)) {
      cand[i] = 1;
    }
  }
  for (size_t i = 0; i < n;) {
    if (!cand[i]) {
      ++i;
      continue;
    }
    // Regions interrupted by less than four windows (an allocation jump in the middle of a
    // leak) are one.
    size_t j = i, last = i;
    while (j < n && j <= last + 4 * w) {
      if (cand[j]) last = j;
      ++j;
    }
    j = last + 1;
    size_t start = i;
    while (start < n && !creeping(step[start])) ++start;
    const size_t end = std::min(n, j - 1 + w);
    double slope = TheilSenSlope(v, start, end, 40);
    if (start > 0) --start;  // the last sample before the first rise is where it began
    out->push_back({AnomalyKind::kLeak, start, end - 1, slope * 3600.0 / o.step_s});
    i = end;
  }
}

// Leaks in series too noisy for creep: see anomaly.h.
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
  o.leak_min_slope_per_hour = 0.5 * kGiB;
  return o;
}

std::vector<Anomaly> DetectAnomalies(const std::vector<double>& v, const DetectorOptions& o) {
  std::vector<Anomaly> out;
  if (o.spikes) DetectSpikes(v, o, &out);
  if (o.shifts) DetectShifts(v, o, &out);
  if (o.stuck) DetectStuck(v, o, &out);
  if (o.leaks) {
    std::vector<Anomaly> creep, envelope;
    DetectCreep(v, o, &creep);
    DetectEnvelopeLeaks(v, o, &envelope);
    out.insert(out.end(), creep.begin(), creep.end());
    for (const Anomaly& e : envelope) {  // a creep, where found, dates the same leak better
      if (std::none_of(creep.begin(), creep.end(),
                       [&](const Anomaly& c) { return c.start <= e.end && e.start <= c.end; })) {
        out.push_back(e);
      }
    }
  }
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
