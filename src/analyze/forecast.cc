#include "analyze/forecast.h"

#include <cmath>
#include <limits>

namespace vgpu::analyze {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr int kBank = 10;  // alpha = 0.1 x (i + 1)

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

std::vector<double> ForecastSeries(const std::vector<double>& y, const ForecastOptions& o) {
  const size_t n = y.size(), h = o.horizon;
  std::vector<std::vector<double>> bank;
  for (int i = 0; i < kBank; ++i) bank.push_back(Ewma(y, 0.1 * (i + 1)));
  // err[i][s]: |bank[i][s] - y[s + h]|, the error of the forecast made at s (0 where unknown).
  std::vector<std::vector<double>> err(kBank, std::vector<double>(n, 0));
  for (int i = 0; i < kBank; ++i) {
    for (size_t s = 0; s + h < n; ++s) {
      if (!std::isnan(bank[i][s]) && !std::isnan(y[s + h]))
        err[i][s] = std::fabs(bank[i][s] - y[s + h]);
    }
  }
  std::vector<double> out(n, kNaN), trailing(kBank, 0);
  for (size_t t = 0; t < n; ++t) {
    // Forecasts whose target is known at t were made at s <= t - h: add s = t - h, drop the one
    // that left the window.
    if (t >= h) {
      for (int i = 0; i < kBank; ++i) {
        trailing[i] += err[i][t - h];
        if (t - h >= o.window) trailing[i] -= err[i][t - h - o.window];
      }
    }
    int best = 2;  // alpha 0.3 until there is a record
    for (int i = 0; i < kBank; ++i) {
      if (trailing[i] < trailing[best] - 1e-12) best = i;
    }
    out[t] = bank[best][t];
  }
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
