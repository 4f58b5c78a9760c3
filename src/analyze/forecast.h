// Load forecasts `horizon` slots ahead, the forecaster chosen online per series from its own
// past. A bank of simple forecasters runs on the series: EWMAs with alpha 0.1, 0.2, ..., 1.0 (1.0
// is persistence) and the medians of its last 15, 30 and 60 samples. At each slot t the forecast
// is that of the member whose forecasts over the trailing `window` slots (those whose target is
// known at t, i.e. made at t - horizon and before) had the smallest absolute error; alpha 0.3
// until there is a record. Only the past is used, so the method needs no fitting beyond its
// history and carries over when the load's regime changes (the bundled cluster's load falls to a
// fifth between the two halves of the day, which defeats models whose coefficients are fitted on
// the first half). Why medians: the absolute error is smallest at the median of what comes next,
// and a pod idle two thirds of the time (bursts between zeros) is best forecast by a median
// (often 0), which no EWMA gives; on a smooth sum of pods the EWMAs win, and the choice follows.
// Pure.
//
// Contract:
// - Missing samples (NaN) are skipped (EWMAs keep their value, medians are over the last present
//   samples); a forecast is NaN where the series has no sample yet; errors are counted only where
//   the target is present.
// - EvaluateForecast(y, o): judges the target slots in the second half of the slots whose target
//   and whose forecast slot (target - horizon) both have a sample, the same slots for every
//   method: mean absolute error divided by the mean of the judged targets, for the model,
//   persistence (y[t]) and an EWMA with alpha 0.3 (the NOTICE's baselines); the same for the
//   first half. `defined` is false when the half has no judged target with a positive mean.
// - SummarizePanel(scores): of series judged one by one (EvaluateForecast each), the median over
//   the series whose score is defined, per method and half, and the number of those series on
//   which the model's error is lower than each baseline's.
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

// The adaptive forecaster one sample at a time (the node daemon runs it online): Push(y[t])
// returns the forecast of y[t + horizon] made at t, the same value ForecastSeries gives for slot
// t (it is built on this class). Memory: (horizon + window) values per bank member and the last
// 60 samples.
class AdaptiveForecast {
 public:
  explicit AdaptiveForecast(const ForecastOptions& o);
  // y: the next slot's sample, NaN where it is missing.
  double Push(double y);
  size_t slots() const { return t_; }

  static constexpr int kEwmas = 10;  // alpha = 0.1 x (i + 1), members 0..9
  static constexpr int kMedians = 3;
  static constexpr size_t kMedianSamples[kMedians] = {15, 30, 60};  // members 10..12
  static constexpr int kBank = kEwmas + kMedians;
  // The member whose forecast the last Push returned.
  int chosen() const { return chosen_; }

 private:
  double Median(size_t n) const;  // of the last min(n, recent_count_) present samples

  ForecastOptions o_;
  size_t t_ = 0;
  int chosen_ = 2;
  double cur_[kBank];
  double trailing_[kBank] = {};
  std::vector<double> pred_;    // ring of the last horizon + 1 forecasts per member
  std::vector<double> err_;     // ring of the last window + 1 errors per member
  std::vector<double> recent_;  // ring of the last 60 present samples
  size_t recent_count_ = 0;     // present samples so far
  mutable std::vector<double> scratch_;
};

// Forecasts of y[t + horizon] made at every t.
std::vector<double> ForecastSeries(const std::vector<double>& y, const ForecastOptions& o);

struct ForecastScore {
  size_t judged = 0;
  bool defined = false;
  double mean = 0;                                                // of the judged targets
  double model = 0, persistence = 0, ewma = 0;                    // MAE / mean, second half
  double first_model = 0, first_persistence = 0, first_ewma = 0;  // the same, first half
  bool first_defined = false;
};
ForecastScore EvaluateForecast(const std::vector<double>& y, const ForecastOptions& o);

struct PanelHalf {
  size_t series = 0;                             // series whose score is defined in this half
  double model = 0, persistence = 0, ewma = 0;   // medians over them of MAE / mean
  size_t beats_persistence = 0, beats_ewma = 0;  // series where the model's error is lower
};
struct PanelScore {
  PanelHalf second, first;
};
PanelScore SummarizePanel(const std::vector<ForecastScore>& scores);

}  // namespace vgpu::analyze
