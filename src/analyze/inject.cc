#include "analyze/inject.h"

#include <algorithm>
#include <cmath>

#include "analyze/robust.h"
#include "common/rng.h"

namespace vgpu::analyze {
namespace {

constexpr size_t kMargin = 60;
constexpr int kTries = 200;

double Uniform(Rng& rng, double lo, double hi) { return lo + (hi - lo) * rng.UniformDouble(); }
size_t UniformSlot(Rng& rng, size_t lo, size_t hi) {  // [lo, hi)
  return lo + static_cast<size_t>(rng.UniformInt(hi - lo));
}

// Free when [start - kMargin, end + kMargin] overlaps no event of `taken`.
bool Free(const std::vector<std::pair<size_t, size_t>>& taken, size_t start, size_t end) {
  for (auto [a, b] : taken) {
    if (start <= b + kMargin && a <= end + kMargin) return false;
  }
  return true;
}

// A start for an event of `len` slots, or -1 after kTries.
long PickStart(Rng& rng, size_t n, size_t len,
               const std::vector<std::pair<size_t, size_t>>& taken) {
  if (n < 2 * kMargin + len + 1) return -1;
  for (int t = 0; t < kTries; ++t) {
    size_t s = UniformSlot(rng, kMargin, n - kMargin - len);
    if (Free(taken, s, s + len - 1)) return static_cast<long>(s);
  }
  return -1;
}

bool MostlyPresent(const Series& s) { return CountPresent(s.values) * 2 >= s.values.size(); }

// The first present slot of [a, b], or -1: an event that begins in a gap is seen from there.
long FirstPresent(const std::vector<double>& v, size_t a, size_t b) {
  for (size_t t = a; t <= b; ++t) {
    if (Present(v[t])) return static_cast<long>(t);
  }
  return -1;
}

}  // namespace

std::vector<Injection> InjectUtilization(SeriesSet* util, const InjectOptions& o) {
  Rng rng(o.seed);
  std::vector<Injection> out;
  for (size_t si = 0; si < util->series.size(); ++si) {
    std::vector<double>& v = util->series[si].values;
    const size_t n = v.size();
    if (!MostlyPresent(util->series[si])) continue;
    std::vector<std::pair<size_t, size_t>> taken;
    // Level shift.
    size_t len = UniformSlot(rng, 60, 181);
    double up = Uniform(rng, 20, 40);
    if (long s = PickStart(rng, n, len, taken); s >= 0) {
      size_t a = static_cast<size_t>(s);
      for (size_t t = a; t < a + len; ++t) {
        if (Present(v[t])) v[t] = std::min(100.0, v[t] + up);
      }
      taken.push_back({a, a + len - 1});
      if (long f = FirstPresent(v, a, a + len - 1); f >= 0) {
        out.push_back({si, AnomalyKind::kLevelShift, static_cast<size_t>(f), a + len - 1, up});
      }
    }
    // Stuck at zero, after activity.
    len = UniformSlot(rng, 40, 121);
    for (int t = 0; t < kTries; ++t) {
      long s = PickStart(rng, n, len, taken);
      if (s < 0) break;
      size_t a = static_cast<size_t>(s), present = 0, active = 0;
      for (size_t k = a - kMargin; k < a; ++k) {
        if (Present(v[k])) ++present, active += v[k] > 0;
      }
      if (present == 0 || active * 5 < present) continue;
      for (size_t k = a; k < a + len; ++k) {
        if (Present(v[k])) v[k] = 0;
      }
      taken.push_back({a, a + len - 1});
      // The run visibly starts at the first of the zeros just before its first present sample.
      long f = FirstPresent(v, a, a + len - 1);
      if (f < 0) break;
      size_t first = static_cast<size_t>(f);
      while (first > 0 && Present(v[first - 1]) && v[first - 1] == 0) --first;
      out.push_back({si, AnomalyKind::kStuckZero, first, a + len - 1, static_cast<double>(len)});
      break;
    }
    // Spikes.
    for (int k = 0; k < o.spikes_per_series; ++k) {
      for (int t = 0; t < kTries; ++t) {
        long s = PickStart(rng, n, 1, taken);
        if (s < 0) break;
        size_t a = static_cast<size_t>(s);
        if (!Present(v[a])) continue;
        std::vector<double> w(v.begin() + static_cast<long>(a - 30),
                              v.begin() + static_cast<long>(a + 31));
        w.erase(w.begin() + 30);
        double med = Median(w, 0, w.size()), q95 = Quantile(w, 0, w.size(), 0.95);
        double scale = std::max(MadSigma(w, 0, w.size()), (q95 - med) / 1.645);
        double height = std::max(40.0, 6 * scale);
        if (!Present(med) || med + height > 100) continue;
        v[a] = med + height;
        taken.push_back({a, a});
        out.push_back({si, AnomalyKind::kSpike, a, a, height});
        break;
      }
    }
  }
  return out;
}

std::vector<Injection> InjectMemory(SeriesSet* memory, const InjectOptions& o) {
  Rng rng(o.seed ^ 0x6d656d6f7279ULL);
  std::vector<Injection> out;
  const double per_slot = o.leak_gib_per_hour * 1073741824.0 * memory->step / 3600.0;
  for (size_t si = 0; si < memory->series.size(); ++si) {
    std::vector<double>& v = memory->series[si].values;
    if (!MostlyPresent(memory->series[si])) continue;
    size_t len = UniformSlot(rng, 180, 361);
    long s = PickStart(rng, v.size(), len, {});
    if (s < 0) continue;
    size_t a = static_cast<size_t>(s);
    for (size_t k = 0; k < len; ++k) {
      if (Present(v[a + k])) v[a + k] += per_slot * static_cast<double>(k);
    }
    if (long f = FirstPresent(v, a, a + len - 1); f >= 0) {
      out.push_back(
          {si, AnomalyKind::kLeak, static_cast<size_t>(f), a + len - 1, o.leak_gib_per_hour});
    }
  }
  return out;
}

}  // namespace vgpu::analyze
