// OnlineAnalysis fed the bundled series (data/alibaba-genai-2026, with anomalies injected by
// analyze/inject.h) one sample at a time on a simulated clock: it reports the anomalies that
// DetectAnomalies finds on each whole series (kind and start), each once; its forecasts are
// ForecastSeries' values; a slice's right-size recommendation follows its memory.
#include "node/rules/online_analysis.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "analyze/inject.h"
#include "analyze/series.h"

namespace vgpu::node {
namespace {

using analyze::AnomalyKind;

constexpr int64_t kStepNs = 57'000'000'000;  // the bundled series' step

// VGPU_ONLINE_TEST_SERIES / VGPU_ONLINE_TEST_SEED widen the comparison (docs/analyze.md).
size_t EnvOr(const char* name, size_t fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && std::atoi(v) > 0 ? static_cast<size_t>(std::atoi(v)) : fallback;
}

std::string Data(const std::string& file) {
  return std::string(VGPU_SOURCE_DIR) + "/data/alibaba-genai-2026/" + file;
}

// The n series of `set` with the most samples (the busiest pods), in a stable order.
std::vector<size_t> Busiest(const analyze::SeriesSet& set, size_t n) {
  std::vector<size_t> idx(set.series.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) {
    return analyze::CountPresent(set.series[a].values) >
           analyze::CountPresent(set.series[b].values);
  });
  idx.resize(std::min(n, idx.size()));
  return idx;
}

using Found = std::set<std::tuple<std::string, AnomalyKind, size_t>>;  // target, kind, start

// Feeds `ids` of `set` as slice targets, slot by slot; returns what was reported (and checks
// that nothing is reported twice). Prints the delays from the anomalies' starts to their reports.
Found FeedOnline(const analyze::SeriesSet& set, const std::vector<size_t>& ids, OnlineMetric m,
                 const OnlineOptions& o) {
  SimulatedClock clock(1'000'000'000);
  OnlineAnalysis online(o, &clock);
  Found found;
  std::vector<int64_t> delays;  // slots
  for (size_t t = 0; t <= set.length; ++t) {
    clock.AdvanceTo(1'000'000'000 + static_cast<int64_t>(t) * kStepNs);
    if (t < set.length) {
      for (size_t i : ids) online.Observe("gpu0/" + set.series[i].id, m, set.series[i].values[t]);
    }
    for (const OnlineAnomaly& a : online.Round()) {
      EXPECT_EQ(a.start_ns, 1'000'000'000 + static_cast<int64_t>(a.anomaly.start) * kStepNs);
      EXPECT_TRUE(found.insert({a.target, a.anomaly.kind, a.anomaly.start}).second)
          << a.target << " " << analyze::KindName(a.anomaly.kind) << " at " << a.anomaly.start
          << " reported twice";
      delays.push_back((a.found_ns - a.start_ns) / kStepNs);
    }
  }
  std::sort(delays.begin(), delays.end());
  if (!delays.empty()) {
    std::printf("reported %lld to %lld slots after the start (median %lld)\n",
                static_cast<long long>(delays.front()), static_cast<long long>(delays.back()),
                static_cast<long long>(delays[delays.size() / 2]));
  }
  return found;
}

// Whether the online module can know an anomaly of `kind` at `start` in a series of `length`:
// its lag of samples after it lies within the series.
bool Knowable(AnomalyKind kind, size_t start, size_t length, const analyze::DetectorOptions& o) {
  return start + LagSlots(kind, o) < length;
}

// The series as the online module keeps it: a series without a sample for a whole ring
// (`capacity` slots) is forgotten and starts afresh. The pieces [begin, end) between such gaps.
std::vector<std::pair<size_t, size_t>> Pieces(const std::vector<double>& v, size_t capacity) {
  std::vector<std::pair<size_t, size_t>> pieces{{0, v.size()}};
  size_t last = 0;
  bool seen = false;
  for (size_t t = 0; t < v.size(); ++t) {
    if (!analyze::Present(v[t])) continue;
    if (seen && t - last > capacity + 1) {
      pieces.back().second = last + capacity + 1;  // forgotten there
      pieces.push_back({last + capacity + 1, v.size()});
    }
    last = t, seen = true;
  }
  return pieces;
}

// What DetectAnomalies finds on each piece of the whole series (above), where the online module
// can know it.
Found Offline(const analyze::SeriesSet& set, const std::vector<size_t>& ids,
              const analyze::DetectorOptions& o, size_t capacity) {
  Found found;
  for (size_t i : ids) {
    const std::vector<double>& v = set.series[i].values;
    for (const auto& [begin, end] : Pieces(v, capacity)) {
      std::vector<double> piece(v.size(), NAN);
      std::copy(v.begin() + static_cast<long>(begin), v.begin() + static_cast<long>(end),
                piece.begin() + static_cast<long>(begin));
      for (const analyze::Anomaly& a : analyze::DetectAnomalies(piece, o)) {
        if (Knowable(a.kind, a.start, end, o)) {
          found.insert({"gpu0/" + set.series[i].id, a.kind, a.start});
        }
      }
    }
  }
  return found;
}

std::string Describe(const Found& f) {
  std::string s;
  for (const auto& [target, kind, start] : f) {
    s += target.substr(0, 12) + " " + std::string(analyze::KindName(kind)) + "@" +
         std::to_string(start) + "\n";
  }
  return s;
}

void ExpectSame(const Found& online, const Found& offline) {
  std::printf("offline %zu anomalies, online %zu\n", offline.size(), online.size());
  Found missed, extra;
  std::set_difference(offline.begin(), offline.end(), online.begin(), online.end(),
                      std::inserter(missed, missed.end()));
  std::set_difference(online.begin(), online.end(), offline.begin(), offline.end(),
                      std::inserter(extra, extra.end()));
  EXPECT_TRUE(missed.empty() && extra.empty()) << "offline only:\n"
                                               << Describe(missed) << "online only:\n"
                                               << Describe(extra);
}

TEST(OnlineAnalysisTest, FindsTheAnomaliesOfferedOfflineOnTheWholeSeriesOnce) {
  auto util = analyze::ReadSeriesCsv(Data("pod_gpu_duty_cycle_anon.csv"));
  ASSERT_TRUE(util) << util.error().message();
  analyze::InjectOptions io;
  io.seed = EnvOr("VGPU_ONLINE_TEST_SEED", 7);
  std::vector<analyze::Injection> labels = analyze::InjectUtilization(&*util, io);
  ASSERT_FALSE(labels.empty());
  OnlineOptions o;
  o.step_ns = kStepNs;
  o.capacity = 600;  // under half the day: the ring evicts, detection runs on tail windows
  const std::vector<size_t> ids = Busiest(*util, EnvOr("VGPU_ONLINE_TEST_SERIES", 6));
  const Found online = FeedOnline(*util, ids, OnlineMetric::kUtil, o);
  const Found offline = Offline(*util, ids, analyze::UtilizationOptions(util->step), o.capacity);
  std::set<AnomalyKind> kinds;
  for (const auto& f : offline) kinds.insert(std::get<1>(f));
  EXPECT_EQ(kinds.size(), 3u) << "spikes, shifts and stuck runs among the expected";
  EXPECT_GE(offline.size(), 20u);
  ExpectSame(online, offline);
}

TEST(OnlineAnalysisTest, FindsTheLeaksFoundOfflineOnTheWholeSeries) {
  auto memory = analyze::ReadSeriesCsv(Data("pod_gpu_memory_used_bytes_anon.csv"));
  ASSERT_TRUE(memory) << memory.error().message();
  analyze::InjectOptions io;
  io.seed = EnvOr("VGPU_ONLINE_TEST_SEED", 3);
  analyze::InjectMemory(&*memory, io);
  OnlineOptions o;
  o.step_ns = kStepNs;
  o.capacity = 600;
  const std::vector<size_t> ids = Busiest(*memory, EnvOr("VGPU_ONLINE_TEST_SERIES", 4));
  const analyze::DetectorOptions mo = analyze::MemoryOptions(memory->step);
  const Found offline = Offline(*memory, ids, mo, o.capacity);
  EXPECT_GE(offline.size(), 2u);
  // A leak is reported once its region closed, or its lag after its start while it still rises:
  // near the series' end either may come first, so those are left out on both sides.
  Found online;
  for (const auto& f : FeedOnline(*memory, ids, OnlineMetric::kMemory, o)) {
    if (Knowable(std::get<1>(f), std::get<2>(f), memory->length, mo)) online.insert(f);
  }
  ExpectSame(online, offline);
}

// A leak that stops is reported once its region closes (a window of quiet steps without a rise
// after it), before the lag of a leak that goes on, at the start found on the whole series; one
// that goes on is reported its lag after its start (and at most a detection period later); each
// once.
TEST(OnlineAnalysisTest, AStoppedLeakIsReportedWhenItsRegionClosesOneThatGoesOnAtItsLag) {
  const double kGiB = 1073741824.0, per_slot = kGiB * 57 / 3600;  // 1 GiB/h
  std::vector<double> v(1000, 8 * kGiB);
  for (size_t i = 0; i < v.size(); ++i) {
    if (i > 200 && i <= 300) v[i] += per_slot * static_cast<double>(i - 200);  // stops at 300
    if (i > 300) v[i] += 100 * per_slot;
    if (i > 600) v[i] += per_slot * static_cast<double>(i - 600);  // goes on to the end
  }
  const analyze::DetectorOptions mo = analyze::MemoryOptions(57);
  const std::vector<analyze::Anomaly> offline = analyze::DetectAnomalies(v, mo);
  ASSERT_EQ(offline.size(), 2u);
  OnlineOptions o;
  o.step_ns = kStepNs;
  SimulatedClock clock(0);
  OnlineAnalysis online(o, &clock);
  std::vector<std::pair<size_t, int64_t>> reports;  // start, delay in slots
  for (size_t t = 0; t <= v.size(); ++t) {
    clock.AdvanceTo(static_cast<int64_t>(t) * kStepNs);
    if (t < v.size()) online.Observe("gpu0/s", OnlineMetric::kMemory, v[t]);
    for (const OnlineAnomaly& a : online.Round()) {
      reports.push_back({a.anomaly.start, (a.found_ns - a.start_ns) / kStepNs});
    }
  }
  ASSERT_EQ(reports.size(), 2u);
  const int64_t lag = static_cast<int64_t>(LagSlots(AnomalyKind::kLeak, mo));
  EXPECT_EQ(reports[0].first, offline[0].start);
  EXPECT_LT(reports[0].second, lag) << "the first leak's region closed before its lag";
  EXPECT_EQ(reports[1].first, offline[1].start);
  EXPECT_GE(reports[1].second, lag);
  EXPECT_LE(reports[1].second, lag + static_cast<int64_t>(o.leak_detect_every));
}

TEST(OnlineAnalysisTest, ForecastsAreTheOfflineForecastsOfTheGpuAndNodeSums) {
  auto util = analyze::ReadSeriesCsv(Data("pod_gpu_duty_cycle_anon.csv"));
  ASSERT_TRUE(util) << util.error().message();
  const std::vector<size_t> ids = Busiest(*util, 3);
  // Two slices on GPU 0, one on GPU 1, as the rule engine samples them.
  std::vector<double> gpu0(util->length), node(util->length);
  for (size_t t = 0; t < util->length; ++t) {
    const double a = util->series[ids[0]].values[t], b = util->series[ids[1]].values[t],
                 c = util->series[ids[2]].values[t];
    const bool g0 = analyze::Present(a) || analyze::Present(b);
    gpu0[t] = g0 ? (analyze::Present(a) ? a : 0) + (analyze::Present(b) ? b : 0) : NAN;
    node[t] = g0 || analyze::Present(c) ? (g0 ? gpu0[t] : 0) + (analyze::Present(c) ? c : 0) : NAN;
  }
  analyze::ForecastOptions fo;
  const std::vector<double> want0 = analyze::ForecastSeries(gpu0, fo);
  const std::vector<double> want_node = analyze::ForecastSeries(node, fo);
  OnlineOptions o;
  o.step_ns = kStepNs;
  SimulatedClock clock(0);
  OnlineAnalysis online(o, &clock);
  size_t compared = 0;
  for (size_t t = 0; t <= util->length; ++t) {
    clock.AdvanceTo(static_cast<int64_t>(t) * kStepNs);
    if (t < util->length) {
      std::vector<std::tuple<std::string, std::string, double>> samples = {{"gpu0", "slices", 2},
                                                                           {"gpu1", "slices", 1}};
      for (int k = 0; k < 3; ++k) {
        const double v = util->series[ids[k]].values[t];
        const std::string target = (k < 2 ? "gpu0/s" : "gpu1/s") + std::to_string(k);
        if (analyze::Present(v)) samples.emplace_back(target, "util", v);
        samples.emplace_back(target, "memory_used_bytes", 1e9);
      }
      online.ObserveRound(samples, {});
    }
    online.Round();
    if (t == 0) continue;
    std::map<std::string, double> got;
    for (const OnlineForecast& f : online.Forecasts()) got[f.target] = f.value;
    // After slot t - 1 closed: the forecast made at t - 1, exactly.
    if (analyze::Present(want0[t - 1])) {
      ASSERT_TRUE(got.count("gpu0")) << t;
      ASSERT_EQ(got["gpu0"], want0[t - 1]) << "slot " << t - 1;
      ++compared;
    }
    if (analyze::Present(want_node[t - 1])) {
      ASSERT_TRUE(got.count("node")) << t;
      ASSERT_EQ(got["node"], want_node[t - 1]) << "slot " << t - 1;
    }
  }
  EXPECT_GT(compared, util->length / 2);
}

TEST(OnlineAnalysisTest, SamplesOfASlotAreAveragedAndASliceIsRightSizedFromItsMemory) {
  OnlineOptions o;
  o.step_ns = 60'000'000'000;
  o.rightsize_every = 1;
  SimulatedClock clock(0);
  OnlineAnalysis online(o, &clock);
  // Two samples in each slot (at +0 s and +20 s): the slot holds their mean. Memory alternates
  // between 2 and 4 GiB within each slot, so its peak is the mean, 3 GiB.
  const double kGiB = 1073741824.0;
  for (int slot = 0; slot < 200; ++slot) {
    for (int k = 0; k < 2; ++k) {
      clock.AdvanceTo(slot * o.step_ns + k * 20'000'000'000LL);
      online.Observe("gpu0/web", OnlineMetric::kMemory, (k == 0 ? 2 : 4) * kGiB);
      online.Round();
    }
  }
  EXPECT_EQ(online.closed_slots(), 199);
  ASSERT_EQ(online.rightsize().size(), 1u);
  const analyze::Recommendation& r = online.rightsize()[0];
  EXPECT_EQ(r.id, "gpu0/web");
  EXPECT_DOUBLE_EQ(r.peak, 3 * kGiB);
  EXPECT_GE(r.limit, r.peak);  // the fleet margin is at least 1
  EXPECT_GT(r.risk, 0);
  EXPECT_LT(r.risk, 0.05);  // never exceeded in its history: below the prior rate
  EXPECT_EQ(online.series(), 1u);
  // A slice gone for a whole ring is forgotten.
  clock.AdvanceTo(clock.NowNanos() + 800 * o.step_ns);
  online.Round();
  EXPECT_EQ(online.series(), 0u);
}

}  // namespace
}  // namespace vgpu::node
