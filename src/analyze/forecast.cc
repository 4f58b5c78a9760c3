#include "analyze/forecast.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vgpu::analyze {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr size_t kRecent = AdaptiveForecast::kMedianSamples[AdaptiveForecast::kMedians - 1];

// MAE / sum of targets of the forecasts `pred` (made h earlier) over the target slots [lo, hi)
// whose target and forecast slot both have a sample. `*judged`: how many; `*defined`: whether
// the targets' sum is positive (else the ratio is 0).
double Relative(const std::vector<double>& y, const std::vector<double>& pred, size_t h, size_t lo,
                size_t hi, size_t* judged, bool* defined) {
  double err = 0, sum = 0;
  size_t n = 0;
  for (size_t target = std::max(lo, h); target < hi; ++target) {
    size_t t = target - h;
    if (std::isnan(y[target]) || std::isnan(y[t]) || std::isnan(pred[t])) continue;
    err += std::fabs(pred[t] - y[target]);
    sum += y[target];
    ++n;
  }
  if (judged) *judged = n;
  if (defined) *defined = sum > 0;
  return sum > 0 ? err / sum : 0;
}

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

std::vector<double> Ewma(const std::vector<double>& y, double alpha) {
  std::vector<double> e(y.size(), kNaN);
  double cur = kNaN;
  for (size_t i = 0; i < y.size(); ++i) {
    if (!std::isnan(y[i])) cur = std::isnan(cur) ? y[i] : alpha * y[i] + (1 - alpha) * cur;
    e[i] = cur;
  }
  return e;
}

AdaptiveForecast::AdaptiveForecast(const ForecastOptions& o)
    : o_(o),
      pred_(static_cast<size_t>(kBank) * (o.horizon + 1), kNaN),
      err_(static_cast<size_t>(kBank) * (o.window + 1), 0),
      recent_(kRecent, 0) {
  for (double& c : cur_) c = kNaN;
  scratch_.reserve(kRecent);
}

double AdaptiveForecast::Median(size_t n) const {
  n = std::min(n, std::min(recent_count_, kRecent));
  scratch_.clear();
  for (size_t k = 0; k < n; ++k) scratch_.push_back(recent_[(recent_count_ - 1 - k) % kRecent]);
  const size_t mid = n / 2;
  std::nth_element(scratch_.begin(), scratch_.begin() + static_cast<long>(mid), scratch_.end());
  const double upper = scratch_[mid];
  if (n % 2) return upper;
  return (*std::max_element(scratch_.begin(), scratch_.begin() + static_cast<long>(mid)) + upper) /
         2;
}

double AdaptiveForecast::Push(double y) {
  const size_t h = o_.horizon, t = t_++, np = h + 1, ne = o_.window + 1;
  if (!std::isnan(y)) recent_[recent_count_++ % kRecent] = y;
  for (int i = 0; i < kBank; ++i) {
    if (i < kEwmas) {
      // The member's EWMA at t (a missing sample keeps its value), as Ewma() computes it.
      const double alpha = 0.1 * (i + 1);
      if (!std::isnan(y)) cur_[i] = std::isnan(cur_[i]) ? y : alpha * y + (1 - alpha) * cur_[i];
    } else if (recent_count_ > 0) {
      cur_[i] = Median(kMedianSamples[i - kEwmas]);
    }
    double* pred = &pred_[static_cast<size_t>(i) * np];
    double* err = &err_[static_cast<size_t>(i) * ne];
    pred[t % np] = cur_[i];
    // Forecasts whose target is known at t were made at s <= t - h: add the error of s = t - h,
    // drop the one that left the window.
    if (t >= h) {
      const size_t s = t - h;
      const double p = pred[s % np];
      err[s % ne] = !std::isnan(p) && !std::isnan(y) ? std::fabs(p - y) : 0;
      trailing_[i] += err[s % ne];
      if (s >= o_.window) trailing_[i] -= err[(s - o_.window) % ne];
    }
  }
  int best = 2;  // alpha 0.3 until there is a record
  for (int i = 0; i < kBank; ++i) {
    if (trailing_[i] < trailing_[best] - 1e-12) best = i;
  }
  chosen_ = best;
  return cur_[best];
}

std::vector<double> ForecastSeries(const std::vector<double>& y, const ForecastOptions& o) {
  AdaptiveForecast model(o);
  std::vector<double> out(y.size(), kNaN);
  for (size_t t = 0; t < y.size(); ++t) out[t] = model.Push(y[t]);
  return out;
}

ForecastScore EvaluateForecast(const std::vector<double>& y, const ForecastOptions& o) {
  ForecastScore s;
  const size_t n = y.size(), half = n / 2, h = o.horizon;
  const std::vector<double> model = ForecastSeries(y, o), ewma = Ewma(y, 0.3);
  s.model = Relative(y, model, h, half, n, &s.judged, &s.defined);
  s.persistence = Relative(y, y, h, half, n, nullptr, nullptr);
  s.ewma = Relative(y, ewma, h, half, n, nullptr, nullptr);
  s.first_model = Relative(y, model, h, 0, half, nullptr, &s.first_defined);
  s.first_persistence = Relative(y, y, h, 0, half, nullptr, nullptr);
  s.first_ewma = Relative(y, ewma, h, 0, half, nullptr, nullptr);
  double sum = 0;
  for (size_t t = std::max(half, h); t < n; ++t) {
    if (!std::isnan(y[t]) && !std::isnan(y[t - h])) sum += y[t];
  }
  s.mean = s.judged ? sum / static_cast<double>(s.judged) : 0;
  return s;
}

PanelScore SummarizePanel(const std::vector<ForecastScore>& scores) {
  PanelScore p;
  auto half = [&](bool second) {
    PanelHalf out;
    std::vector<double> model, persistence, ewma;
    for (const ForecastScore& s : scores) {
      if (!(second ? s.defined : s.first_defined)) continue;
      const double m = second ? s.model : s.first_model;
      const double pe = second ? s.persistence : s.first_persistence;
      const double e = second ? s.ewma : s.first_ewma;
      model.push_back(m);
      persistence.push_back(pe);
      ewma.push_back(e);
      out.beats_persistence += m < pe;
      out.beats_ewma += m < e;
    }
    out.series = model.size();
    out.model = MedianOf(std::move(model));
    out.persistence = MedianOf(std::move(persistence));
    out.ewma = MedianOf(std::move(ewma));
    return out;
  };
  p.second = half(true);
  p.first = half(false);
  return p;
}

}  // namespace vgpu::analyze
