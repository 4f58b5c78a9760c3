// `vgpu analyze forecast` and `vgpu analyze rightsize`.
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "analyze/forecast.h"
#include "analyze/report.h"
#include "analyze/rightsize.h"
#include "analyze/series.h"
#include "common/csv.h"

namespace vgpu::analyze {
namespace {

using nlohmann::json;
constexpr double kGiB = 1073741824.0;

struct Line {
  std::string id;
  ForecastScore score;
  double last = 0, forecast = 0;
};

Line ForecastOne(const std::string& id, const std::vector<double>& y, const ForecastOptions& o) {
  Line l{id, EvaluateForecast(y, o)};
  std::vector<double> p = ForecastSeries(y, o);
  for (size_t t = y.size(); t-- > 0;) {
    if (Present(y[t])) {
      l.last = y[t];
      l.forecast = p[t];
      break;
    }
  }
  return l;
}

// node -> indices of its series, from a groups CSV.
Result<std::map<std::string, std::vector<size_t>>> ReadGroups(const std::string& path,
                                                              const SeriesSet& set) {
  auto t = CsvTable::Load(path);
  if (!t) return t.error();
  int sc = -1;
  for (const char* name : {"series", "container_ip", "pod", "slice"}) {
    if (sc < 0) sc = t->FindColumn(name);
  }
  auto nc = t->RequireColumn("node");
  if (!nc) return nc.error();
  if (sc < 0) {
    return Status::InvalidArgument(path +
                                   ":1: the header needs a series (or container_ip, pod, "
                                   "slice) column and a node column");
  }
  std::map<std::string, std::vector<size_t>> groups;
  for (size_t r = 0; r < t->num_rows(); ++r) {
    std::string id(t->Field(r, sc)), node(t->Field(r, *nc));
    int idx = set.Find(id);
    if (idx < 0) return t->FieldError(r, sc, "no series '" + id + "' in " + set.source);
    if (node.empty()) return t->FieldError(r, *nc, "empty node");
    groups[node].push_back(static_cast<size_t>(idx));
  }
  return groups;
}

}  // namespace

Result<std::string> RunForecast(const ForecastRequest& r) {
  if (r.horizon < 1 || r.horizon > 1000) {
    return Status::InvalidArgument("--horizon: must be 1 to 1000 samples");
  }
  auto set = ReadSeriesCsv(r.util);
  if (!set) return set.error();
  ForecastOptions o;
  o.horizon = r.horizon;
  std::vector<Line> lines = {ForecastOne("(sum)", set->Aggregate(), o)};
  if (!r.groups.empty()) {
    auto groups = ReadGroups(r.groups, *set);
    if (!groups) return groups.error();
    for (const auto& [node, members] : *groups) {
      SeriesSet sub = *set;
      sub.series.clear();
      for (size_t i : members) sub.series.push_back(set->series[i]);
      lines.push_back(ForecastOne("node:" + node, sub.Aggregate(), o));
    }
  }
  const size_t first_series = lines.size();
  std::vector<ForecastScore> per_series;
  for (const Series& s : set->series) {
    lines.push_back(ForecastOne(s.id, s.values, o));
    per_series.push_back(lines.back().score);
  }
  const PanelScore panel = SummarizePanel(per_series);
  const double minutes = static_cast<double>(r.horizon) * set->step / 60.0;
  if (r.json) {
    json out = {{"horizon_samples", r.horizon},
                {"horizon_minutes", minutes},
                {"step_s", set->step},
                {"series", json::array()}};
    auto half = [](const PanelHalf& h) {
      return json{{"series", h.series},
                  {"median_mae_over_mean",
                   {{"model", h.model}, {"persistence", h.persistence}, {"ewma_0_3", h.ewma}}},
                  {"model_better_than_persistence", h.beats_persistence},
                  {"model_better_than_ewma_0_3", h.beats_ewma}};
    };
    out["per_series"] = half(panel.second);
    out["per_series_first_half"] = half(panel.first);
    // null where a half has no judged target with a positive mean.
    auto scores = [](bool defined, double model, double persistence, double ewma) {
      if (!defined) return json(nullptr);
      return json{{"model", model}, {"persistence", persistence}, {"ewma_0_3", ewma}};
    };
    for (const Line& l : lines) {
      const ForecastScore& c = l.score;
      out["series"].push_back(
          {{"series", l.id},
           {"last", l.last},
           {"forecast", l.forecast},
           {"judged", c.judged},
           {"mae_over_mean", scores(c.defined, c.model, c.persistence, c.ewma)},
           {"first_half_mae_over_mean",
            scores(c.first_defined, c.first_model, c.first_persistence, c.first_ewma)}});
    }
    return out.dump(1) + "\n";
  }
  char head[256];
  std::snprintf(head, sizeof head,
                "horizon %zu samples (%.1f min); MAE/mean on the second half of the time\nseries   "
                "                          model  persistence  ewma0.3     last  "
                "forecast\n",
                r.horizon, minutes);
  std::string text = head;
  for (size_t i = 0; i < lines.size(); ++i) {
    const Line& l = lines[i];
    char b[256];
    if (i == first_series) {
      std::snprintf(b, sizeof b, "%-32s %7.3f %12.3f %8.3f   (%zu series judged one by one)\n",
                    "median over series", panel.second.model, panel.second.persistence,
                    panel.second.ewma, panel.second.series);
      text += b;
      std::snprintf(
          b, sizeof b, "%-32s %7s %12zu %8zu   (series where the model's error is lower)\n",
          "model better than it on", "-", panel.second.beats_persistence, panel.second.beats_ewma);
      text += b;
    }
    if (!l.score.defined) {
      std::snprintf(b, sizeof b, "%-32s %7s %12s %8s %8.1f %9.1f\n", l.id.c_str(), "-", "-", "-",
                    l.last, l.forecast);
    } else {
      std::snprintf(b, sizeof b, "%-32s %7.3f %12.3f %8.3f %8.1f %9.1f\n", l.id.c_str(),
                    l.score.model, l.score.persistence, l.score.ewma, l.last, l.forecast);
    }
    text += b;
  }
  return text;
}

Result<std::string> RunRightsize(const RightsizeRequest& r) {
  if (!(r.target > 0 && r.target < 0.5)) {
    return Status::InvalidArgument("--target: must be in (0, 0.5)");
  }
  auto set = ReadSeriesCsv(r.memory);
  if (!set) return set.error();
  RightsizeOptions o;
  o.target = r.target;
  RightsizeReport rep = Rightsize(*set, o);
  auto score = [](const RuleScore& s) {
    return json{{"windows", s.windows},
                {"exceeded", s.exceeded},
                {"exceed_rate", s.ExceedRate()},
                {"mean_slack", s.MeanSlack()}};
  };
  if (r.json) {
    json out = {{"margin", rep.margin},
                {"ours", score(rep.ours)},
                {"trailing_max_1_1", score(rep.trailing_1_1)},
                {"trailing_max_1_1_all_windows", score(rep.trailing_1_1_all)},
                {"trailing_max_equal_rate", score(rep.trailing_equal)},
                {"trailing_max_equal_rate_factor", rep.equal_rate_factor},
                {"recommendations", json::array()}};
    for (const Recommendation& x : rep.recommendations) {
      out["recommendations"].push_back(
          {{"series", x.id}, {"limit_bytes", x.limit}, {"peak_bytes", x.peak}, {"risk", x.risk}});
    }
    return out.dump(1) + "\n";
  }
  char b[1024];
  std::snprintf(b, sizeof b,
                "windows of %zu samples; judged on the windows starting in the second half\n"
                "rule                                   windows  exceeded  mean slack\n"
                "history max x %.3f (fitted margin)    %8zu %8.1f%% %10.1f%%\n"
                "trailing max x 1.1                     %8zu %8.1f%% %10.1f%%\n"
                "trailing max x %.3f (equal rate)      %8zu %8.1f%% %10.1f%%\n"
                "trailing max x 1.1, all windows        %8zu %8.1f%% %10.1f%%\n"
                "\nseries                             limit GiB   peak GiB   risk\n",
                o.window, rep.margin, rep.ours.windows, 100 * rep.ours.ExceedRate(),
                100 * rep.ours.MeanSlack(), rep.trailing_1_1.windows,
                100 * rep.trailing_1_1.ExceedRate(), 100 * rep.trailing_1_1.MeanSlack(),
                rep.equal_rate_factor, rep.trailing_equal.windows,
                100 * rep.trailing_equal.ExceedRate(), 100 * rep.trailing_equal.MeanSlack(),
                rep.trailing_1_1_all.windows, 100 * rep.trailing_1_1_all.ExceedRate(),
                100 * rep.trailing_1_1_all.MeanSlack());
  std::string text = b;
  for (const Recommendation& x : rep.recommendations) {
    std::snprintf(b, sizeof b, "%-32s %10.2f %10.2f %6.3f\n", x.id.c_str(), x.limit / kGiB,
                  x.peak / kGiB, x.risk);
    text += b;
  }
  return text;
}

}  // namespace vgpu::analyze
