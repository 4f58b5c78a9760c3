// The memory-leak rules of DetectAnomalies (anomaly.h), on one memory series in bytes. Pure.
//
// A serving process's memory toggles between levels by large jumps while it allocates, and is
// flat (steps exactly 0, or tiny noise both ways) while it does not. A leak adds a small rise to
// every step, which only the flat steps show. So a leak is judged on the *quiet* steps: steps
// between two present neighbouring samples of at most the largest leak rate of interest
// (`leak_max_slope_per_hour`) per slot; the jumps are left out.
//
// - Creep over quiet steps: a quiet step *rises* when it is at least the smallest leak rate of
//   interest (`leak_min_slope_per_hour`) per slot. Windows of `leak_creep_window` consecutive
//   quiet steps that start with a rise and in which at least `leak_creep_fraction` rise are
//   candidates; candidates less than a window apart form one region. The region's rate is the
//   median of its rising steps; it is a leak when rate x its length in slots is at least
//   `leak_min_rise`. Dating: each quiet step near the region's start is *flat* (|step| <=
//   rate / `leak_rate_band`), *leak-like* (up to rate x `leak_rate_band`) or neither (a move of
//   the process's own, which says nothing); the split with the fewest leak-like steps before it
//   and flat ones after it separates the two. The leak began after the last flat step before
//   the split and before the first leak-like one after it; the start reported is the middle of
//   that interval (with no flat step before it, the middle back to the start of the stretch of
//   present samples). The end is the region's last rising step. A region dated at or before
//   the end of the leak found before it (the process freed memory of its own for longer than a
//   window inside one leak) is that leak: its end and rate extend it, no second one is reported.
// - Envelope (off by default, `leak_envelope_rule`): the centred median over `leak_envelope`
//   samples rises with a Theil-Sen slope of at least `leak_min_slope_per_hour` over
//   `leak_window` samples, along a line (median residual at most `leak_linearity` x the rise);
//   the start is the knee of a flat-then-linear L1 fit. Reported only where no creep overlaps.
//   On the bundled series it fires on the series' own load swings, so it is not the default.
#pragma once

#include <vector>

#include "analyze/anomaly.h"

namespace vgpu::analyze {

// What a creep leak found on `v` depends on, for a detector run on a tail of a longer series
// (online_analysis.h). The creep rule reads, for a region whose first candidate is quiet step t:
// the `leak_creep_window` (w) quiet steps before t (no candidate there: t starts a region), the
// dating's steps from t - w back to the last flat one before the first leak-like step, and
// forward the region itself and the 2w - 1 quiet steps after its last candidate (w more steps
// without a candidate close it; a candidate there is judged on its own w steps).
// - `from`: the earliest sample read. 0 where the reading reached the start of `v` (t < w, or no
//   flat step before the first leak-like one): then a longer series may give another leak.
// - `settled`: the latest sample read once the region is closed; kOpen while it is not (the
//   region's rate, and with it the dating and the judgement, may still change).
// A leak with from > 0 and settled < v.size() is found, with the same start, on any series that
// holds v[from..settled] unchanged at the same slots; a later region dated inside it extends its
// end and rate (and its reach), never its start. `region`, the slot of the region's first
// candidate step, names the leak: it stays the same while the region grows (while the start may
// be dated again as the rate changes).
struct LeakReach {
  static constexpr size_t kOpen = static_cast<size_t>(-1);
  size_t from = 0;
  size_t settled = kOpen;
  size_t region = 0;
};

// Appends the leaks of `v` (bytes, NaN = missing) to `out`, in order of start; with `reach`, one
// LeakReach per leak appended (an envelope leak's: from 0, open: the rule reads the whole series).
void DetectLeaks(const std::vector<double>& v, const DetectorOptions& o, std::vector<Anomaly>* out,
                 std::vector<LeakReach>* reach = nullptr);

}  // namespace vgpu::analyze
