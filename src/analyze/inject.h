// The anomaly generator: injects labelled anomalies into copies of real series, with a seed, so
// that detectors can be scored (evaluate.h). Deterministic for a seed (common/rng.h).
//
// Into each utilization series (percent) with at least half its samples present:
// - `spikes_per_series` spikes: one sample raised to the local median + 6 x the local robust
//   scale (the larger of 1.4826 MAD and (q95 - q50) / 1.645 of the +-30 samples around it),
//   and at least 40 points above the median; positions where that would pass 100 are skipped
//   (a pod bursting to 100 that often has no visible spike at that point).
// - one level shift: +20 to +40 points (uniform) added over 60 to 180 samples, clamped at 100.
// - one stuck-at-zero run of 40 to 120 samples, placed where at least 20% of the 60 samples
//   before it are non-zero (a pod that was working goes silent).
// Into each memory series (bytes) with at least half its samples present:
// - one leak of `leak_gib_per_hour` (1 GiB/h) over 180 to 360 samples: sample k of the run gets
//   k x rate x step added; after the run the series is as it was (the leaking process ended).
// Events on one series are at least 60 samples apart, and none starts in the first or last 60
// samples (so every detector has context on both sides). Missing samples stay missing. A label
// starts at the event's first present sample (an event that begins in a gap is seen from the
// sample after it; one wholly inside a gap has no label).
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/anomaly.h"
#include "analyze/series.h"

namespace vgpu::analyze {

struct Injection {
  size_t series = 0;  // index into the SeriesSet
  AnomalyKind kind = AnomalyKind::kSpike;
  size_t start = 0, end = 0;  // slots, end inclusive
  double magnitude = 0;
};

struct InjectOptions {
  uint64_t seed = 1;
  int spikes_per_series = 3;
  double leak_gib_per_hour = 1.0;
};

// Injects into `util` (spikes, level shifts, stuck-at-zero); returns the labels.
std::vector<Injection> InjectUtilization(SeriesSet* util, const InjectOptions& o);
// Injects leaks into `memory`; returns the labels.
std::vector<Injection> InjectMemory(SeriesSet* memory, const InjectOptions& o);

}  // namespace vgpu::analyze
