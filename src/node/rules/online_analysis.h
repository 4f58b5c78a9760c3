// OnlineAnalysis: the analyses of `vgpu analyze` (analyze/anomaly.h, forecast.h, rightsize.h) run
// online by the node daemon, over the samples it takes each round. Pure logic over an injected
// clock: no I/O, no threads.
//
// Series. Per slice (target "gpuN/<slice>") its utilization (percent) and memory used (bytes);
// per GPU (target "gpuN") its utilization and the sum of its slices' memory; for the node
// (target "node") the sum of its GPUs' utilization. Samples are put on a fixed grid of `step_ns`
// from the first observation: slot k holds the mean of the samples taken within half a step of
// t0 + k x step. A slot closes at the first Round() of a later slot; a closed slot without a
// sample is missing (NaN), as in the offline series. Each series keeps the last `capacity`
// closed slots (a ring); a series without a sample for `capacity` slots is forgotten.
//
// Anomalies (per slice and per GPU, not the node): DetectAnomalies with the offline defaults,
// UtilizationOptions(step) for utilization (on a GPU's sum the absolute floors times sqrt(N),
// N its slices, as offline on the sum of N series) and MemoryOptions(step) for memory. The cost
// is bounded: a series is examined every `detect_every` slots (series are spread over the
// phases, so each round examines about 1/detect_every of them; memory every
// `leak_detect_every`). Utilization: on its tail window of Guard(kind) + Lag(kind) + detect_every
// slots; an anomaly found there is reported when its start has at least Lag(kind) slots after it
// (its window is complete: more samples no longer move it) and Guard(kind) before it in the
// window (or the window starts where the series started), so it is the one DetectAnomalies finds
// on the whole series. Memory: on the whole ring (the leak rule is linear in the samples); what a
// leak depends on is read from the data (analyze::LeakReach, in quiet steps, not slots): it is
// reported when nothing it read lies before the ring (or the ring starts where the series
// started) and either its region is closed (final: the one found on the whole series) or it
// still rises Lag(kLeak) slots after its start (then dated on the samples so far; a later change
// of its rate may date it otherwise on the whole series). A utilization window also reaches
// back to the level shifts and stuck runs reported in the last 360 slots (with their guard), so
// that a change that ends one is seen as its end, not as a new shift; a change that undoes an
// older shift is reported as a shift (offline it ends the first). Each anomaly is reported once:
// a later detection of the same kind at the same start (spikes) or within 5 slots of it (the
// others) is the same anomaly; a leak is named by its region (LeakReach::region).
//
// Forecasts (per GPU and the node): the adaptive forecaster of forecast.h fed slot by slot,
// `horizon` slots ahead; the same values as ForecastSeries on the whole series.
//
// Right-sizing (per slice): Rightsize (rightsize.h) over the slices' memory rings, every
// `rightsize_every` slots: a recommended limit (margin x the ring's peak) and the risk that the
// next window exceeds it.
//
// Not thread-safe: the caller serialises Observe/Round and the accessors.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/anomaly.h"
#include "analyze/forecast.h"
#include "analyze/rightsize.h"
#include "common/clock.h"

namespace vgpu::node {

struct OnlineOptions {
  int64_t step_ns = 60'000'000'000;  // the grid step
  size_t capacity = 720;             // closed slots kept per series (12 hours at 60 s)
  size_t detect_every = 10;          // a utilization series' detectors run every N slots
  size_t leak_detect_every = 30;     // a memory series' (their window is longer)
  size_t horizon = 5;                // forecast slots ahead
  size_t rightsize_every = 10;       // slots between right-sizing runs
};

enum class OnlineMetric { kUtil, kMemory };

struct OnlineAnomaly {
  std::string target;
  OnlineMetric metric = OnlineMetric::kUtil;
  analyze::Anomaly anomaly;  // start and end: absolute slots of the grid
  int64_t start_ns = 0;      // clock time of the start slot
  int64_t found_ns = 0;      // clock time it was reported
};

struct OnlineForecast {
  std::string target;  // "gpuN" or "node"
  double value = 0;    // utilization (percent; the node: the sum over its GPUs)
};

// Slots of context a kind needs before its start (Guard) and after it (Lag) in a window for the
// anomaly to be the one found on the whole series. Leaks: Guard 0 (read from the data), Lag the
// slots after its start at which a leak that still rises is reported.
size_t GuardSlots(analyze::AnomalyKind kind, const analyze::DetectorOptions& o);
size_t LagSlots(analyze::AnomalyKind kind, const analyze::DetectorOptions& o);

class OnlineAnalysis {
 public:
  // `clock` is not owned.
  OnlineAnalysis(OnlineOptions o, const Clock* clock);
  ~OnlineAnalysis();

  // A sample of `target`'s metric at the clock's time. NaN records the series (a missing sample).
  // `members`: how many series the value sums (a GPU's slices), for the detectors' floors.
  void Observe(const std::string& target, OnlineMetric metric, double value, size_t members = 1);
  // The samples of one rule-engine round (rule_engine.h: (target, signal, value)): each slice's
  // `util` and `memory_used_bytes`, their sums per GPU, the GPUs' sum for the node. `gpu_util`
  // (by GPU index, percent) replaces the sum of the slices' utilization where the device
  // reports its own.
  void ObserveRound(const std::vector<std::tuple<std::string, std::string, double>>& samples,
                    const std::map<int, double>& gpu_util);
  // Closes the slots that ended, runs what is due; returns the anomalies reported for the first
  // time, in order of start.
  std::vector<OnlineAnomaly> Round();

  // The state after the last Round().
  const std::map<std::pair<std::string, analyze::AnomalyKind>, uint64_t>& anomaly_counts() const {
    return counts_;
  }
  const std::map<std::pair<std::string, analyze::AnomalyKind>, OnlineAnomaly>& last_anomalies()
      const {
    return last_;
  }
  std::vector<OnlineForecast> Forecasts() const;
  const std::vector<analyze::Recommendation>& rightsize() const { return rightsize_; }
  const OnlineOptions& options() const { return o_; }
  size_t series() const { return tracks_.size(); }
  // Closed slots so far (the next slot to close).
  int64_t closed_slots() const { return closed_; }
  int64_t SlotTime(int64_t slot) const { return t0_ + slot * o_.step_ns; }

 private:
  struct Track;
  int64_t SlotOf(int64_t t_ns) const;
  void Close(Track& t, int64_t upto);
  void Detect(Track& t, std::vector<OnlineAnomaly>* out);
  void DetectMemory(Track& t, const analyze::DetectorOptions& o, std::vector<OnlineAnomaly>* out);
  void Report(Track& t, const analyze::Anomaly& a, std::vector<OnlineAnomaly>* out);

  OnlineOptions o_;
  const Clock* clock_;
  bool started_ = false;
  int64_t t0_ = 0;
  int64_t closed_ = 0;  // slots < closed_ are closed
  size_t next_phase_ = 0;
  std::map<std::string, std::unique_ptr<Track>> tracks_;  // by target|metric
  std::map<std::pair<std::string, analyze::AnomalyKind>, uint64_t> counts_;
  std::map<std::pair<std::string, analyze::AnomalyKind>, OnlineAnomaly> last_;
  std::vector<analyze::Recommendation> rightsize_;
};

}  // namespace vgpu::node
