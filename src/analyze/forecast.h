// Load forecasts `horizon` slots ahead: an adaptive exponential moving average. A bank of EWMAs
// (alpha 0.1, 0.2, ..., 1.0; 1.0 is persistence) runs on the series; at each slot t the forecast
// is the bank member whose forecasts made over the trailing `window` slots (those whose target
// is known at t, i.e. made at t - horizon and before) had the smallest absolute error. Only the
// past is used, so the method needs no fitting beyond its history and carries over when the
// load's regime changes (the bundled cluster's load falls to a fifth between the two halves of
// the day, which defeats models whose coefficients are fitted on the first half). Pure.
//
// Contract:
// - Missing samples (NaN) are skipped by the EWMAs (they keep their value); a forecast is NaN
//   where the series has no sample yet; errors are counted only where the target is present.
// - EvaluateForecast(y, o): judges every target slot in the second half of the slots: mean
//   absolute error divided by the mean of the judged targets, for the model, persistence (y[t])
//   and an EWMA with alpha 0.3 (the NOTICE's baselines); the same for the first half.
#pragma once

#include <cstddef>
#include <vector>

namespace vgpu::analyze {

struct ForecastOptions {
  size_t horizon = 5;
  size_t window = 120;  // slots of trailing error (about 2 hours at 57 s)
};

// EWMA of y (missing samples keep the previous value); NaN until the first sample.
std::vector<double> Ewma(const std::vector<double>& y, double alpha);

// The adaptive EWMA one sample at a time (the node daemon runs it online): Push(y[t]) returns
// the forecast of y[t + horizon] made at t, the same value ForecastSeries gives for slot t (it is
// built on this class). Memory: (horizon + window) values per bank member.
class AdaptiveEwma {
 public:
  explicit AdaptiveEwma(const ForecastOptions& o);
  // y: the next slot's sample, NaN where it is missing.
  double Push(double y);
  size_t slots() const { return t_; }

 private:
  static constexpr int kBank = 10;  // alpha = 0.1 x (i + 1)
  ForecastOptions o_;
  size_t t_ = 0;
  double cur_[kBank];
  double trailing_[kBank] = {};
  std::vector<double> pred_;  // ring of the last horizon + 1 forecasts per member
  std::vector<double> err_;   // ring of the last window + 1 errors per member
};

// Forecasts of y[t + horizon] made at every t.
std::vector<double> ForecastSeries(const std::vector<double>& y, const ForecastOptions& o);

struct ForecastScore {
  size_t judged = 0;
  double mean = 0;                                                // of the judged targets
  double model = 0, persistence = 0, ewma = 0;                    // MAE / mean, second half
  double first_model = 0, first_persistence = 0, first_ewma = 0;  // the same, first half
};
ForecastScore EvaluateForecast(const std::vector<double>& y, const ForecastOptions& o);

}  // namespace vgpu::analyze
