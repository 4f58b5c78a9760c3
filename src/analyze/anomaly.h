// Anomaly detection on one regular series with gaps (series.h), with robust methods only (medians,
// quantiles and Theil-Sen slopes, never mean/sigma, which bursts dominate). Pure.
//
// Kinds and methods (thresholds in DetectorOptions; the defaults are the documented ones of
// docs/analyze.md and are the same for every series):
// - kSpike: a sample more than `spike_z` robust scales above the median of the +-`spike_window`
//   samples around it (itself excluded), and at least `spike_min` above it. The robust scale is
//   the larger of 1.4826 MAD and (q95 - q50) / 1.645, floored at `spike_min` / spike_z, so
//   that a window of mostly zeros with bursts (two thirds of utilization samples are 0) does not
//   make every burst a spike. Consecutive spike samples (at most `spike_max_len`) form one.
// - kLevelShift: the lower quartile (`shift_quantile`) of the `shift_window` samples after slot
//   i differs from that of the ones before by at least `shift_min`; the change point inside a
//   region of such slots is the split minimising the pinball loss of two quartiles. A quartile,
//   not the median: a bursty series' busy stretches move its median but not its floor, while a
//   shift of the level moves both. A change back (opposite sign, to within half of the shift) ends
//   it; otherwise it lasts until the next change (or the end of the series). Change points
//   within 5 slots of each other are one (the larger).
// - kStuckZero: a run of at least `stuck_min_len` present samples exactly 0 that follows a
//   stretch (`stuck_context` samples) where at least `stuck_active_fraction` were busy: non-zero,
//   and inside a level shift up that ended by the run's start (within 5 slots) above the
//   shift's size (a pod back at 0 after a rise from idle is that shift's end). The shifts are
//   found for this whether or not `shifts` reports them.
// - kLeak (leak.h): judged on the quiet steps only (at most `leak_max_slope_per_hour` per slot
//   either way; the allocation jumps are left out). A run of `leak_creep_window` quiet steps of
//   which at least `leak_creep_fraction` rise by at least `leak_min_slope_per_hour` per slot,
//   rising `leak_min_rise` in all, is a leak; it is dated between the last flat quiet step and
//   the first one that rises at the leak's rate. An envelope rule for series without quiet
//   steps is off by default (`leak_envelope_rule`).
// A level shift that starts within 5 slots of a stuck-at-zero run is that run, and is dropped.
// Anomalies are reported in order of start, each with start and end slots (end inclusive).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace vgpu::analyze {

enum class AnomalyKind { kSpike, kLevelShift, kStuckZero, kLeak };
std::string_view KindName(AnomalyKind k);
inline constexpr AnomalyKind kAllKinds[] = {AnomalyKind::kSpike, AnomalyKind::kLevelShift,
                                            AnomalyKind::kStuckZero, AnomalyKind::kLeak};

struct Anomaly {
  AnomalyKind kind;
  size_t start = 0, end = 0;  // slots, end inclusive
  double magnitude = 0;       // spike height / shift size / leak rate per hour / run length
};

struct DetectorOptions {
  bool spikes = true, shifts = true, stuck = true, leaks = true;
  double step_s = 57;  // seconds per slot (converts the leak rate)
  // Spikes.
  size_t spike_window = 30;
  double spike_z = 5;
  double spike_min = 30;
  size_t spike_max_len = 2;
  // Level shifts.
  size_t shift_window = 20;
  double shift_min = 15;
  double shift_quantile = 0.25;
  // Stuck at zero.
  size_t stuck_min_len = 30;
  size_t stuck_context = 60;
  double stuck_active_fraction = 0.2;
  // Leaks (values in bytes; rates in bytes per hour).
  double leak_min_slope_per_hour = 0.25 * 1073741824.0;  // a quiet step rises from this rate
  double leak_max_slope_per_hour = 16 * 1073741824.0;    // a larger step is a jump, not quiet
  size_t leak_creep_window = 12;                         // quiet steps
  double leak_creep_fraction = 0.75;                     // of them rising
  double leak_min_rise = 0.25 * 1073741824.0;            // rate x duration, at least
  double leak_rate_band = 2;  // dating: flat <= rate / band < leak-like <= rate x band
  bool leak_envelope_rule = false;
  size_t leak_envelope = 15;
  size_t leak_window = 120;
  double leak_linearity = 0.15;
};

// Options for a utilization series (percent): spikes, shifts, stuck-at-zero.
DetectorOptions UtilizationOptions(double step_s);
// Options for a memory series (bytes): leaks.
DetectorOptions MemoryOptions(double step_s);

std::vector<Anomaly> DetectAnomalies(const std::vector<double>& v, const DetectorOptions& o);

}  // namespace vgpu::analyze
