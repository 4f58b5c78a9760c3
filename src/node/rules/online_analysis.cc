#include "node/rules/online_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>

#include "analyze/leak.h"
#include "analyze/series.h"

namespace vgpu::node {
namespace {

using analyze::Anomaly;
using analyze::AnomalyKind;
using analyze::DetectorOptions;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kKeepReported = 64;  // reported anomalies remembered per series (deduplication)
// How far back (slots) a window reaches for the shift or stuck run that a change may end.
constexpr size_t kShiftMemory = 360;
// A leak still rising is reported this many creep windows after its start.
constexpr size_t kOpenLeakLagWindows = 15;

bool IsSlice(const std::string& target) { return target.find('/') != std::string::npos; }

// N of "gpuN" or "gpuN/...", or -1.
int GpuOf(const std::string& target) {
  if (target.rfind("gpu", 0) != 0 || target.size() < 4) return -1;
  char* end = nullptr;
  const long n = std::strtol(target.c_str() + 3, &end, 10);
  if (end == target.c_str() + 3 || (*end != '\0' && *end != '/') || n < 0 || n > 1 << 20) {
    return -1;
  }
  return static_cast<int>(n);
}

std::vector<AnomalyKind> KindsOf(const DetectorOptions& o) {
  std::vector<AnomalyKind> k;
  if (o.spikes) k.push_back(AnomalyKind::kSpike);
  if (o.shifts) k.push_back(AnomalyKind::kLevelShift);
  if (o.stuck) k.push_back(AnomalyKind::kStuckZero);
  if (o.leaks) k.push_back(AnomalyKind::kLeak);
  return k;
}

}  // namespace

size_t GuardSlots(AnomalyKind kind, const DetectorOptions& o) {
  switch (kind) {
    case AnomalyKind::kSpike:
      return o.spike_window + 1;  // the window of the sample before the spike
    case AnomalyKind::kLevelShift:
      return 3 * o.shift_window;  // the quartile windows and the change point's search
    case AnomalyKind::kStuckZero:
      return o.stuck_context;
    case AnomalyKind::kLeak:
      return 0;  // read from the data (analyze::LeakReach): the memory window is the whole ring
  }
  return 0;
}

size_t LagSlots(AnomalyKind kind, const DetectorOptions& o) {
  switch (kind) {
    case AnomalyKind::kSpike:
      return o.spike_window + o.spike_max_len + 1;  // the window after the sample after the run
    case AnomalyKind::kLevelShift:
      return 3 * o.shift_window;  // the change region, its search and the merge of neighbours
    case AnomalyKind::kStuckZero:
      return o.stuck_min_len;
    case AnomalyKind::kLeak:
      // A closed region is final at once (analyze::LeakReach); a region still rising is
      // reported this long after its start, dated on the samples so far.
      return kOpenLeakLagWindows * o.leak_creep_window;
  }
  return 0;
}

struct OnlineAnalysis::Track {
  std::string target;
  OnlineMetric metric = OnlineMetric::kUtil;
  size_t members = 1;
  int64_t origin = 0;  // the slot the series started at
  int64_t first = 0;   // the slot of values[0]
  std::deque<double> values;
  int64_t pending = -1;  // the open slot with samples, or -1
  double sum = 0;
  size_t n = 0;
  int64_t last_sample = -1;
  int64_t next_detect = 0;
  std::deque<Anomaly> reported;      // absolute slots
  std::deque<int64_t> leak_regions;  // the regions (LeakReach::region, absolute) of leaks reported
  std::unique_ptr<analyze::AdaptiveForecast> forecast;
  double last_forecast = kNaN;

  int64_t end() const { return first + static_cast<int64_t>(values.size()); }
};

OnlineAnalysis::OnlineAnalysis(OnlineOptions o, const Clock* clock) : o_(o), clock_(clock) {
  o_.step_ns = std::max<int64_t>(1, o_.step_ns);
  o_.capacity = std::max<size_t>(1, o_.capacity);
  o_.detect_every = std::max<size_t>(1, o_.detect_every);
  o_.leak_detect_every = std::max<size_t>(1, o_.leak_detect_every);
  o_.rightsize_every = std::max<size_t>(1, o_.rightsize_every);
}

OnlineAnalysis::~OnlineAnalysis() = default;

int64_t OnlineAnalysis::SlotOf(int64_t t_ns) const {
  return (t_ns - t0_ + o_.step_ns / 2) / o_.step_ns;
}

void OnlineAnalysis::Observe(const std::string& target, OnlineMetric metric, double value,
                             size_t members) {
  const int64_t now = clock_->NowNanos();
  if (!started_) {
    started_ = true;
    t0_ = now;
  }
  const int64_t slot = std::max(SlotOf(now), closed_);
  std::unique_ptr<Track>& t = tracks_[target + (metric == OnlineMetric::kUtil ? "|u" : "|m")];
  if (!t) {
    t = std::make_unique<Track>();
    t->target = target;
    t->metric = metric;
    t->origin = t->first = slot;
    const size_t every = metric == OnlineMetric::kUtil ? o_.detect_every : o_.leak_detect_every;
    t->next_detect = slot + static_cast<int64_t>(next_phase_++ % every) + 1;
    if (metric == OnlineMetric::kUtil && !IsSlice(target)) {
      analyze::ForecastOptions fo;
      fo.horizon = o_.horizon;
      t->forecast = std::make_unique<analyze::AdaptiveForecast>(fo);
    }
  }
  if (t->pending >= 0 && t->pending < slot) Close(*t, slot);
  t->members = std::max<size_t>(1, members);
  t->pending = slot;
  if (analyze::Present(value)) {
    t->sum += value;
    ++t->n;
    t->last_sample = slot;
  }
}

void OnlineAnalysis::ObserveRound(
    const std::vector<std::tuple<std::string, std::string, double>>& samples,
    const std::map<int, double>& gpu_util) {
  std::map<int, double> util, memory;
  std::map<int, size_t> members;
  std::map<int, bool> gpus;
  for (const auto& [target, signal, v] : samples) {
    const int gpu = GpuOf(target);
    if (gpu < 0) continue;
    if (!IsSlice(target)) {
      if (signal == "slices") gpus[gpu] = true;
      continue;
    }
    gpus[gpu] = true;
    if (signal == "util") {
      Observe(target, OnlineMetric::kUtil, v);
      util[gpu] += v;
      ++members[gpu];
    } else if (signal == "memory_used_bytes") {
      Observe(target, OnlineMetric::kMemory, v);
      memory[gpu] += v;
    }
  }
  for (const auto& [gpu, u] : gpu_util) gpus[gpu] = true;
  double node = 0;
  bool any = false;
  for (const auto& [gpu, unused] : gpus) {
    const std::string target = "gpu" + std::to_string(gpu);
    double u = kNaN;
    if (auto d = gpu_util.find(gpu); d != gpu_util.end()) {
      u = d->second;
    } else if (auto s = util.find(gpu); s != util.end()) {
      u = s->second;
    }
    Observe(target, OnlineMetric::kUtil, u, members.count(gpu) ? members[gpu] : 1);
    Observe(target, OnlineMetric::kMemory, memory.count(gpu) ? memory[gpu] : 0.0);
    if (analyze::Present(u)) node += u, any = true;
  }
  if (!gpus.empty()) Observe("node", OnlineMetric::kUtil, any ? node : kNaN);
}

void OnlineAnalysis::Close(Track& t, int64_t upto) {
  for (int64_t k = t.end(); k < upto; ++k) {
    const double v = k == t.pending && t.n > 0 ? t.sum / static_cast<double>(t.n) : kNaN;
    t.values.push_back(v);
    if (t.forecast) t.last_forecast = t.forecast->Push(v);
  }
  if (t.pending >= 0 && t.pending < upto) {
    t.pending = -1;
    t.sum = 0;
    t.n = 0;
  }
  while (t.values.size() > o_.capacity) {
    t.values.pop_front();
    ++t.first;
  }
}

void OnlineAnalysis::Detect(Track& t, std::vector<OnlineAnomaly>* out) {
  const double step_s = static_cast<double>(o_.step_ns) / 1e9;
  if (t.metric == OnlineMetric::kMemory) {
    DetectMemory(t, analyze::MemoryOptions(step_s), out);
    return;
  }
  DetectorOptions o = analyze::UtilizationOptions(step_s);
  // On a sum of N series the absolute floors grow as sqrt(N) (analyze's sum series).
  const double scale = std::sqrt(static_cast<double>(t.members));
  o.spike_min *= scale;
  o.shift_min *= scale;
  const std::vector<AnomalyKind> kinds = KindsOf(o);
  size_t span = 0;
  for (AnomalyKind k : kinds) span = std::max(span, GuardSlots(k, o) + LagSlots(k, o));
  size_t len = std::min(t.values.size(), span + o_.detect_every);
  // A level shift ends at the change that undoes it, and a stuck run's end is no shift: the
  // window reaches back to the latest shift or stuck run reported (with its guard), so that a
  // change that ends one is seen as such, as on the whole series. Not beyond kShiftMemory.
  for (const Anomaly& r : t.reported) {
    if (r.kind != AnomalyKind::kLevelShift && r.kind != AnomalyKind::kStuckZero) continue;
    if (t.end() - static_cast<int64_t>(r.start) > static_cast<int64_t>(kShiftMemory)) continue;
    const int64_t from = std::max(
        t.first, static_cast<int64_t>(r.start) - static_cast<int64_t>(GuardSlots(r.kind, o)));
    len = std::max(len, static_cast<size_t>(t.end() - from));
  }
  const int64_t begin = t.end() - static_cast<int64_t>(len);
  const std::vector<double> window(t.values.end() - static_cast<long>(len), t.values.end());
  for (Anomaly a : analyze::DetectAnomalies(window, o)) {
    const int64_t start = begin + static_cast<int64_t>(a.start);
    if (start + static_cast<int64_t>(LagSlots(a.kind, o)) >= t.end()) continue;  // not final yet
    if (begin != t.origin && a.start < GuardSlots(a.kind, o)) continue;          // context evicted
    const bool known = std::any_of(t.reported.begin(), t.reported.end(), [&](const Anomaly& r) {
      if (r.kind != a.kind) return false;
      // A spike's start is exact; the other kinds' may be dated again a few slots apart.
      const long long tolerance = a.kind == AnomalyKind::kSpike ? 0 : 5;
      return std::llabs(static_cast<long long>(r.start) - start) <= tolerance;
    });
    if (known) continue;
    a.start = static_cast<size_t>(start);
    a.end = static_cast<size_t>(begin + static_cast<int64_t>(a.end));
    Report(t, a, out);
  }
}

void OnlineAnalysis::DetectMemory(Track& t, const DetectorOptions& o,
                                  std::vector<OnlineAnomaly>* out) {
  // The whole ring: the creep rule is linear in the samples, and what a leak depends on (its
  // reach back, whether its region is closed) comes with it.
  const int64_t begin = t.first;
  const std::vector<double> window(t.values.begin(), t.values.end());
  std::vector<Anomaly> found;
  std::vector<analyze::LeakReach> reach;
  analyze::DetectLeaks(window, o, &found, &reach);
  for (size_t i = 0; i < found.size(); ++i) {
    Anomaly a = found[i];
    const analyze::LeakReach& r = reach[i];
    if (r.from == 0 && begin != t.origin) continue;  // it reads samples the ring no longer has
    const int64_t start = begin + static_cast<int64_t>(a.start);
    if (r.settled == analyze::LeakReach::kOpen &&
        start + static_cast<int64_t>(LagSlots(a.kind, o)) >= t.end()) {
      continue;  // still rising, and not yet its lag after its start
    }
    const int64_t region = begin + static_cast<int64_t>(r.region);
    if (std::find(t.leak_regions.begin(), t.leak_regions.end(), region) != t.leak_regions.end()) {
      continue;  // reported (while rising, or dated the same)
    }
    t.leak_regions.push_back(region);
    if (t.leak_regions.size() > kKeepReported) t.leak_regions.pop_front();
    a.start = static_cast<size_t>(start);
    a.end = static_cast<size_t>(begin + static_cast<int64_t>(a.end));
    Report(t, a, out);
  }
}

void OnlineAnalysis::Report(Track& t, const Anomaly& a, std::vector<OnlineAnomaly>* out) {
  t.reported.push_back(a);
  if (t.reported.size() > kKeepReported) t.reported.pop_front();
  OnlineAnomaly r;
  r.target = t.target;
  r.metric = t.metric;
  r.anomaly = a;
  r.start_ns = SlotTime(static_cast<int64_t>(a.start));
  r.found_ns = clock_->NowNanos();
  out->push_back(std::move(r));
}

std::vector<OnlineAnomaly> OnlineAnalysis::Round() {
  std::vector<OnlineAnomaly> found;
  if (!started_) return found;
  const int64_t now_slot = std::max(SlotOf(clock_->NowNanos()), closed_);
  if (now_slot == closed_) return found;  // nothing closed since the last round
  const int64_t previous = closed_;
  closed_ = now_slot;
  for (auto it = tracks_.begin(); it != tracks_.end();) {
    Track& t = *it->second;
    Close(t, closed_);
    // A series without samples for a whole ring (its slice is gone) is forgotten.
    const int64_t seen = t.last_sample >= 0 ? t.last_sample : t.origin;
    if (closed_ - seen > static_cast<int64_t>(o_.capacity)) {
      it = tracks_.erase(it);
      continue;
    }
    if (closed_ >= t.next_detect && t.target != "node") {
      Detect(t, &found);
      t.next_detect =
          closed_ + static_cast<int64_t>(t.metric == OnlineMetric::kUtil ? o_.detect_every
                                                                         : o_.leak_detect_every);
    }
    ++it;
  }
  std::stable_sort(found.begin(), found.end(), [](const OnlineAnomaly& a, const OnlineAnomaly& b) {
    return a.anomaly.start < b.anomaly.start;
  });
  for (const OnlineAnomaly& a : found) {
    ++counts_[{a.target, a.anomaly.kind}];
    last_[{a.target, a.anomaly.kind}] = a;
  }
  // Right-sizing when a multiple of rightsize_every slots was crossed.
  const int64_t every = static_cast<int64_t>(o_.rightsize_every);
  if (closed_ / every != previous / every) {
    analyze::SeriesSet memory;
    memory.step = static_cast<double>(o_.step_ns) / 1e9;
    for (const auto& [key, t] : tracks_) {
      if (t->metric != OnlineMetric::kMemory || !IsSlice(t->target)) continue;
      memory.length = std::max(memory.length, t->values.size());
    }
    for (const auto& [key, t] : tracks_) {
      if (t->metric != OnlineMetric::kMemory || !IsSlice(t->target)) continue;
      analyze::Series s;
      s.id = t->target;
      s.values.assign(memory.length - t->values.size(), kNaN);
      s.values.insert(s.values.end(), t->values.begin(), t->values.end());
      memory.series.push_back(std::move(s));
    }
    rightsize_ = analyze::Rightsize(memory, analyze::RightsizeOptions{}).recommendations;
  }
  return found;
}

std::vector<OnlineForecast> OnlineAnalysis::Forecasts() const {
  std::vector<OnlineForecast> out;
  for (const auto& [key, t] : tracks_) {
    if (t->forecast && analyze::Present(t->last_forecast)) {
      out.push_back({t->target, t->last_forecast});
    }
  }
  return out;
}

}  // namespace vgpu::node
