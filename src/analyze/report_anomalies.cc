// `vgpu analyze anomalies`: detection per series and on the sum, or --evaluate.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "analyze/anomaly.h"
#include "analyze/evaluate.h"
#include "analyze/inject.h"
#include "analyze/report.h"
#include "analyze/series.h"
#include "common/time_format.h"

namespace vgpu::analyze {
namespace {

using nlohmann::json;

struct Loaded {
  bool has_util = false, has_memory = false;
  SeriesSet util, memory;
};

Result<Loaded> Load(const AnomalyRequest& r) {
  Loaded l;
  if (!r.util.empty()) {
    auto u = ReadSeriesCsv(r.util);
    if (!u) return u.error();
    l.util = std::move(*u);
    l.has_util = true;
  }
  if (!r.memory.empty()) {
    auto m = ReadSeriesCsv(r.memory);
    if (!m) return m.error();
    l.memory = std::move(*m);
    l.has_memory = true;
  }
  if (!l.has_util && !l.has_memory)
    return Status::InvalidArgument("no series: give --util or --memory");
  return l;
}

std::vector<SeriesDetections> DetectAll(const SeriesSet& set, const DetectorOptions& o) {
  std::vector<SeriesDetections> out;
  for (size_t i = 0; i < set.series.size(); ++i) {
    out.push_back({i, DetectAnomalies(set.series[i].values, o)});
  }
  return out;
}

std::string Fixed(double v, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, v);
  return b;
}

json AnomalyJson(const SeriesSet& s, const Anomaly& a) {
  return {{"kind", KindName(a.kind)},
          {"start", s.TimeOf(a.start)},
          {"end", s.TimeOf(a.end)},
          {"start_time", FormatUtcSeconds(s.TimeOf(a.start))},
          {"end_time", FormatUtcSeconds(s.TimeOf(a.end))},
          {"start_slot", a.start},
          {"end_slot", a.end},
          {"magnitude", a.magnitude}};
}

void AddDetections(const char* metric, const SeriesSet& set, const DetectorOptions& o, json* out,
                   std::string* text) {
  auto emit = [&](const std::string& id, const std::vector<Anomaly>& found) {
    for (const Anomaly& a : found) {
      (*out).push_back(AnomalyJson(set, a));
      (*out).back()["series"] = id;
      (*out).back()["metric"] = metric;
      *text += std::string(metric) + "  " + id + "  " + std::string(KindName(a.kind)) + "  " +
               FormatUtcSeconds(set.TimeOf(a.start)) + " .. " +
               FormatUtcSeconds(set.TimeOf(a.end)) + "  (" + Fixed(a.magnitude, 3) + ")\n";
    }
  };
  for (const Series& s : set.series) emit(s.id, DetectAnomalies(s.values, o));
  // On the sum of N series the absolute floors grow as sqrt(N) (the spread of a sum of
  // independent series); a leak's rate is the same in the sum.
  DetectorOptions agg = o;
  const double scale = std::sqrt(static_cast<double>(std::max<size_t>(1, set.series.size())));
  agg.spike_min *= scale;
  agg.shift_min *= scale;
  emit("(sum)", DetectAnomalies(set.Aggregate(), agg));
}

// Each detection of `unmatched` with the label of its series whose start is nearest.
void ListUnmatched(const SeriesSet& set, uint64_t seed, const std::vector<Injection>& labels,
                   const std::vector<UnmatchedDetection>& unmatched, json* out, std::string* text) {
  for (const UnmatchedDetection& u : unmatched) {
    const Injection* nearest = nullptr;
    long distance = 0;
    for (const Injection& l : labels) {
      if (l.series != u.series) continue;
      const long d = static_cast<long>(u.anomaly.start) - static_cast<long>(l.start);
      if (!nearest || std::labs(d) < std::labs(distance)) nearest = &l, distance = d;
    }
    const Anomaly& a = u.anomaly;
    json j = {{"seed", seed},
              {"series", set.series[u.series].id},
              {"kind", KindName(a.kind)},
              {"start_slot", a.start},
              {"end_slot", a.end}};
    *text += std::to_string(seed) + "  " + set.series[u.series].id + "  " +
             std::string(KindName(a.kind)) + "  " + std::to_string(a.start) + ".." +
             std::to_string(a.end);
    if (nearest) {
      j["nearest_label"] = {{"kind", KindName(nearest->kind)},
                            {"start_slot", nearest->start},
                            {"distance_slots", distance}};
      *text += "  " + std::string(KindName(nearest->kind)) + " " + std::to_string(nearest->start) +
               " " + std::to_string(distance);
    }
    *text += "\n";
    out->push_back(std::move(j));
  }
}

}  // namespace

Result<std::string> RunAnomalies(const AnomalyRequest& r) {
  auto loaded = Load(r);
  if (!loaded) return loaded.error();
  const Loaded& l = *loaded;
  if (!r.evaluate) {
    json all = json::array();
    std::string text = "metric  series  kind  start .. end (UTC)  (magnitude)\n";
    if (l.has_util) AddDetections("util", l.util, UtilizationOptions(l.util.step), &all, &text);
    if (l.has_memory) {
      AddDetections("memory", l.memory, MemoryOptions(l.memory.step), &all, &text);
    }
    return r.json ? all.dump(1) + "\n" : text;
  }
  // Evaluation: inject with each seed, detect on the untouched and the injected series, pool.
  std::map<AnomalyKind, KindScore> total;
  json unmatched_json = json::array();
  std::string unmatched_text;
  auto run = [&](const SeriesSet& clean_set, const DetectorOptions& o, bool memory) {
    std::vector<SeriesDetections> clean = DetectAll(clean_set, o);
    for (uint64_t seed : r.seeds) {
      SeriesSet set = clean_set;
      InjectOptions io;
      io.seed = seed;
      io.leak_gib_per_hour = r.leak_gib_per_hour;
      std::vector<Injection> labels = memory ? InjectMemory(&set, io) : InjectUtilization(&set, io);
      std::vector<UnmatchedDetection> unmatched;
      for (auto& [k, s] : Score(labels, DetectAll(set, o), clean, &unmatched)) {
        if (memory != (k == AnomalyKind::kLeak)) continue;
        KindScore& t = total[k];
        t.labels += s.labels, t.detections += s.detections, t.matched += s.matched;
        t.natural += s.natural, t.delay_sum += s.delay_sum;
      }
      if (r.unmatched)
        ListUnmatched(set, seed, labels, unmatched, &unmatched_json, &unmatched_text);
    }
  };
  if (l.has_util) run(l.util, UtilizationOptions(l.util.step), false);
  if (l.has_memory) run(l.memory, MemoryOptions(l.memory.step), true);
  json out = json::object();
  std::string text =
      "kind          labels  found  matched  own-events  recall  precision  strict-precision  F1   "
      "mean-delay(slots)\n";
  for (auto& [k, s] : total) {
    out[std::string(KindName(k))] = {{"labels", s.labels},
                                     {"detections", s.detections},
                                     {"matched", s.matched},
                                     {"series_own_events", s.natural},
                                     {"recall", s.Recall()},
                                     {"precision", s.Precision()},
                                     {"strict_precision", s.StrictPrecision()},
                                     {"f1", s.F1()},
                                     {"mean_delay_slots", s.MeanDelay()},
                                     {"tolerance_slots", Tolerance(k)}};
    char line[256];
    std::snprintf(line, sizeof line, "%-12s %7zu %6zu %8zu %11zu %7.3f %10.3f %17.3f %5.3f %8.2f\n",
                  std::string(KindName(k)).c_str(), s.labels, s.detections, s.matched, s.natural,
                  s.Recall(), s.Precision(), s.StrictPrecision(), s.F1(), s.MeanDelay());
    text += line;
  }
  if (r.unmatched) {
    out["unmatched"] = unmatched_json;
    text +=
        "\nunmatched: seed  series  kind  start..end (slots)  nearest label (kind start, "
        "distance)\n" +
        unmatched_text;
  }
  return r.json ? out.dump(1) + "\n" : text;
}

}  // namespace vgpu::analyze
