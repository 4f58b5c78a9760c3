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
//   stretch (`stuck_context` samples) where at least `stuck_active_fraction` were non-zero.
// - kLeak, two ways:
//   - creep (dates a leak best): memory that rises by small steps sample after sample, where a
//     serving process's memory is otherwise flat between allocation jumps. Windows of
//     `leak_creep_window` steps where at least `leak_creep_fraction` are small rises (0 < step
//     <= 16 x the minimum slope per slot) adding up to half the minimum slope over the window;
//     regions less than 4 windows apart are one; the start is the sample before the region's
//     first small rise. The untouched bundled series have no creep at all.
//   - envelope (for series too noisy for creep): the centred median over `leak_envelope`
//     samples rises with a Theil-Sen slope of at least `leak_min_slope_per_hour` over
//     `leak_window` samples, along a line (median residual at most `leak_linearity` x the
//     rise); the start is the knee of a flat-then-linear L1 fit. Reported only where no creep
//     overlaps.
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
  // Leaks (values in bytes).
  size_t leak_envelope = 15;
  size_t leak_window = 120;
  double leak_linearity = 0.15;
  size_t leak_creep_window = 20;
  double leak_creep_fraction = 0.6;
  double leak_min_slope_per_hour = 0.5 * 1073741824.0;
};

// Options for a utilization series (percent): spikes, shifts, stuck-at-zero.
DetectorOptions UtilizationOptions(double step_s);
// Options for a memory series (bytes): leaks.
DetectorOptions MemoryOptions(double step_s);

std::vector<Anomaly> DetectAnomalies(const std::vector<double>& v, const DetectorOptions& o);

}  // namespace vgpu::analyze
