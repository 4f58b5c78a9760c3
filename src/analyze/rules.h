// Tuning rules: a YAML file of rules over observable signals, with `for:` durations and
// hysteresis, whose actions are a closed set (action_sink.h). Parsing is strict; evaluation is
// pure, on the time of an injected Clock (common/clock.h).
//
// File format (docs/analyze.md has the full reference and the shipped file):
//   evaluation_interval: 30s          # how often Evaluate is meant to run (default 30s)
//   rules:
//     - name: copy-hog                # unique
//       scope: slice                  # slice (targets "gpuN/name") or gpu (targets "gpuN")
//       when:                         # all must hold
//         - signal: copy_bytes_per_s  # one of kSignals
//           above: 1e10               # or below:
//           clear: 5e9                # once firing, the condition holds until this is crossed
//           over: 5m                  # optional: the signal's rate of change per hour over
//                                     #   this window instead of its value
//           of: neighbour             # optional (slice scope): any other slice on the same GPU
//       for: 1m                       # held this long before firing (default 0)
//       clear_for: 2m                 # cleared this long before resolving (default = for)
//       action: lower_share           # one of the actions
//       amount: 10                    # the action's amount (share points; bytes factor ...)
//       detail: "1g.18gb"             # optional text (the MIG profile)
// Errors: kInvalidArgument "file:line:column: what" (1-based, yaml-cpp's marks) for bad YAML,
// an unknown key, signal or action, a bad duration ("30s", "5m", "1h", "500ms"), a missing
// threshold, a duplicate name, `of:` or `over:` where they do not apply.
//
// Evaluation: Evaluate(store) at the clock's time, for every rule and every target of its scope
// present in the store. A condition reads the target's latest sample of the signal at or before
// now and no older than 3 evaluation intervals (else it does not hold). State per (rule, target):
// idle -> pending (conditions hold) -> firing after `for` (Fire) -> clearing (conditions
// fail against their clear thresholds) -> idle after `clear_for` (Resolve). lower_share and
// raise_share apply only to slices whose `best_effort` signal is 1; elsewhere they are skipped.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analyze/action_sink.h"
#include "common/clock.h"
#include "common/result.h"

namespace vgpu::analyze {

struct Condition {
  std::string signal;
  bool above = true;
  double threshold = 0, clear = 0;
  bool neighbour = false;
  int64_t rate_window_ns = 0;  // > 0: rate per hour over this window
};

struct Rule {
  std::string name;
  bool gpu_scope = false;
  std::vector<Condition> when;
  int64_t for_ns = 0, clear_for_ns = 0;
  ActionType action = ActionType::kAlert;
  double amount = 0;
  std::string detail;
  int line = 0;
};

struct RuleSet {
  int64_t interval_ns = 30'000'000'000;
  std::vector<Rule> rules;
};

Result<RuleSet> ParseRules(const std::string& text, const std::string& source);
Result<RuleSet> LoadRules(const std::string& path);
// Parses "30s", "5m", "1h", "500ms", "0" into nanoseconds.
Result<int64_t> ParseDuration(const std::string& text);

// Samples per target and signal, in time order.
class SignalStore {
 public:
  void Add(const std::string& target, const std::string& signal, int64_t t_ns, double v);
  // The latest sample at or before t_ns; false when none is younger than max_age_ns.
  bool Latest(const std::string& target, const std::string& signal, int64_t t_ns,
              int64_t max_age_ns, double* v) const;
  // The change per hour between the latest sample and the one `window_ns` before it.
  bool RatePerHour(const std::string& target, const std::string& signal, int64_t t_ns,
                   int64_t window_ns, int64_t max_age_ns, double* rate) const;
  std::vector<std::string> Targets() const;
  // First and last sample times over everything; false when empty.
  bool Span(int64_t* first, int64_t* last) const;

 private:
  std::map<std::string, std::map<std::string, std::vector<std::pair<int64_t, double>>>> data_;
};

// Reads a long-format series CSV: columns timestamp (seconds), target (or slice), signal, value,
// in any order. Errors name file, line and column; an unknown signal is an error.
Result<SignalStore> ReadSignalCsv(const std::string& path);
Result<SignalStore> ParseSignalCsv(std::string_view text, std::string source);

class RuleEvaluator {
 public:
  RuleEvaluator(RuleSet rules, const Clock* clock, ActionSink* sink)
      : rules_(std::move(rules)), clock_(clock), sink_(sink) {}
  void Evaluate(const SignalStore& store);
  // State changes so far per (rule, target): fired and resolved count.
  size_t Transitions() const { return transitions_; }

 private:
  struct State {
    int phase = 0;  // 0 idle, 1 pending, 2 firing, 3 clearing
    int64_t since = 0;
  };
  bool Holds(const Rule& r, const std::string& target, const SignalStore& store, bool firing,
             int64_t now) const;
  bool CondHolds(const Condition& c, const std::string& target, const SignalStore& store,
                 bool firing, int64_t now) const;
  Action MakeAction(const Rule& r, const std::string& target, const SignalStore& store,
                    int64_t now) const;
  RuleSet rules_;
  const Clock* clock_;
  ActionSink* sink_;
  std::map<std::pair<std::string, std::string>, State> state_;
  size_t transitions_ = 0;
};

// Dry run: replays the store's time range on a SimulatedClock, one evaluation per interval,
// into `sink`.
void DryRun(const RuleSet& rules, const SignalStore& store, ActionSink* sink);

}  // namespace vgpu::analyze
