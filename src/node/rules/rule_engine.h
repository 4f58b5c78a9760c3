// RuleEngine: the tuning rules (analyze/rules.h) run online by the node daemon. Each Round()
// samples the signals the node can observe today into a SignalStore, evaluates the rules at the
// clock's time, and carries out what fires through NodeActions (rule_actions.h).
//
// Signals sampled per slice (target "gpuN/<slice name>", N: the NVML index of the slice's first
// GPU), from its accounting region and the GPUs' arbiters (read-only):
//   memory_used_bytes, memory_limit_bytes   the region (the limit in force, live resize included)
//   oom_refusals_per_s                     TenantControl.oom_refusals, per second since the last
//                                          round
//   share_percent, best_effort             the share in force; 1 when its priority is low or idle
//   util, launches_per_s, gate_wait_ratio  its arbiter record on its first GPU: the share of GPU
//                                          time it got, admitted launches and time held at the
//                                          gate per second
//                                          (a slice in no arbiter, as one alone on its GPU:
//                                          util and launches_per_s from its exact counters'
//                                          busy time and launches, per second since the last
//                                          round, where libvgpu counts; no gate_wait_ratio)
//   h2d_bytes_per_s, d2h_bytes_per_s,      the slice's exact copy counters (region telemetry,
//   copy_bytes_per_s                       written by a counting libvgpu.so), per second since
//                                          the last round; their sum for copy_bytes_per_s
// per GPU (target "gpuN"): xid_errors (XIDs in the interval), slices (slices on the GPU), and
// from the GPU's latest device sample (RuleInputs::gpu_samples, the daemon's sampler through the
// device layer):
//   gpu_util                               NVML utilization (DeviceSample::sm_utilization), percent
//   dram_bw_util                           GPM DRAM bandwidth (GpmMetrics::dram_activity), percent
//                                          of peak; only where the GPU has GPM (Hopper and later)
//   nvlink_tx_bytes_per_s, nvlink_rx_bytes_per_s
//                                          GPM NVLink traffic, all links (bytes/s)
//   nvlink_replays_per_s                   the NVLink replay counters of its links, summed, per
//                                          second since the last round
// each absent where the device layer does not give it; a condition over a signal without
// samples does not hold.
//
// Samples are kept for an hour. Not thread-safe: one thread calls Round(); AddMetrics() and
// History() may be called from others (NodeActions locks its own state).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "analyze/rules.h"
#include "common/clock.h"
#include "device/device_backend.h"
#include "node/arbiter_usage.h"
#include "node/rules/rule_actions.h"
#include "node/slice.h"

namespace vgpu::node {

// What one round observes.
struct RuleInputs {
  std::vector<SliceRecord> slices;
  std::map<std::string, ArbiterUsage> arbiters;     // by GPU UUID
  std::map<int, uint64_t> xid_totals;               // by GPU NVML index: XIDs seen so far
  std::map<int, device::DeviceSample> gpu_samples;  // by GPU NVML index: the latest sample
};

class RuleEngine {
 public:
  // `gpu_count`: GPUs of the node (GPU targets gpu0..gpuN-1). `clock` is not owned.
  RuleEngine(analyze::RuleSet rules, const Clock* clock, NodeActionHooks hooks, bool dry_run,
             int gpu_count);

  // Samples `in` at the clock's time, evaluates, acts.
  void Round(const RuleInputs& in);
  // The samples a round would add (tests): (target, signal, value).
  using Signal = std::tuple<std::string, std::string, double>;
  std::vector<Signal> Sample(const RuleInputs& in);

  // Called by Round() with what it sampled, before the rules are evaluated (the node's online
  // analyses, online_analysis.h). Set before the first Round().
  using SampleObserver =
      std::function<void(const std::vector<std::tuple<std::string, std::string, double>>&)>;
  void SetSampleObserver(SampleObserver o) { observer_ = std::move(o); }

  const analyze::RuleSet& rules() const { return rules_; }
  NodeActions& actions() { return *actions_; }
  size_t transitions() const { return evaluator_->Transitions(); }
  // vgpu_rule_evaluations_total (rounds so far) and the actions' metrics (rule_actions.h).
  void AddMetrics(MetricsBuilder& m) const;

 private:
  struct Previous {
    int64_t t_ns = 0;
    double value = 0;
  };
  // The change of a cumulative counter per second since the last round (false on the first).
  bool Rate(const std::string& key, double total, int64_t now, double* rate);
  // The GPU-level signals of one device sample.
  void SampleDevice(const std::string& target, const device::DeviceSample& d, int64_t now,
                    std::vector<Signal>* out);

  analyze::RuleSet rules_;
  const Clock* clock_;
  int gpu_count_;
  std::unique_ptr<NodeActions> actions_;
  std::unique_ptr<analyze::RuleEvaluator> evaluator_;
  std::map<std::string, Previous> previous_;
  SampleObserver observer_;
  struct Kept {
    std::string target, signal;
    int64_t t_ns;
    double v;
  };
  std::vector<Kept> kept_;
  std::atomic<uint64_t> rounds_{0};
};

}  // namespace vgpu::node
