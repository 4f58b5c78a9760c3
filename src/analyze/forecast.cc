#include "analyze/forecast.h"

#include <cmath>
#include <limits>

namespace vgpu::analyze {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// MAE / sum of targets over target slots [lo, hi) of the forecasts `pred` (made h earlier).
double Relative(const std::vector<double>& y, const std::vector<double>& pred, size_t h, size_t lo,
                size_t hi, size_t* judged) {
  double err = 0, sum = 0;
  size_t n = 0;
  for (size_t target = std::max(lo, h); target < hi; ++target) {
    size_t t = target - h;
    if (std::isnan(y[target]) || std::isnan(pred[t])) continue;
    err += std::fabs(pred[t] - y[target]);
    sum += y[target];
    ++n;
  }
  if (judged) *judged = n;
  return sum > 0 ? err / sum : 0;
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

AdaptiveEwma::AdaptiveEwma(const ForecastOptions& o)
    : o_(o),
      pred_(static_cast<size_t>(kBank) * (o.horizon + 1), kNaN),
      err_(static_cast<size_t>(kBank) * (o.window + 1), 0) {
  for (double& c : cur_) c = kNaN;
}

double AdaptiveEwma::Push(double y) {
  const size_t h = o_.horizon, t = t_++, np = h + 1, ne = o_.window + 1;
  for (int i = 0; i < kBank; ++i) {
    // The bank member's EWMA at t (a missing sample keeps its value), as Ewma() computes it.
    const double alpha = 0.1 * (i + 1);
    if (!std::isnan(y)) cur_[i] = std::isnan(cur_[i]) ? y : alpha * y + (1 - alpha) * cur_[i];
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
  return cur_[best];
}

std::vector<double> ForecastSeries(const std::vector<double>& y, const ForecastOptions& o) {
  AdaptiveEwma model(o);
  std::vector<double> out(y.size(), kNaN);
  for (size_t t = 0; t < y.size(); ++t) out[t] = model.Push(y[t]);
  return out;
}

ForecastScore EvaluateForecast(const std::vector<double>& y, const ForecastOptions& o) {
  ForecastScore s;
  const size_t n = y.size(), half = n / 2, h = o.horizon;
  const std::vector<double> model = ForecastSeries(y, o), ewma = Ewma(y, 0.3);
  s.model = Relative(y, model, h, half, n, &s.judged);
  s.persistence = Relative(y, y, h, half, n, nullptr);
  s.ewma = Relative(y, ewma, h, half, n, nullptr);
  s.first_model = Relative(y, model, h, 0, half, nullptr);
  s.first_persistence = Relative(y, y, h, 0, half, nullptr);
  s.first_ewma = Relative(y, ewma, h, 0, half, nullptr);
  double sum = 0;
  for (size_t t = std::max(half, h); t < n; ++t) {
    if (!std::isnan(y[t]) && !std::isnan(y[t - h])) sum += y[t];
  }
  s.mean = s.judged ? sum / static_cast<double>(s.judged) : 0;
  return s;
}

}  // namespace vgpu::analyze
