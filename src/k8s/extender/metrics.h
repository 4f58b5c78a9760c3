// Prometheus text exposition for the scheduler extender: counters and a latency histogram per
// extender verb (HAMi has none), bind outcomes, and gauges read at scrape time.
//
// Contract:
// - Counters and histograms are lock-free to update (atomics) and safe from any thread.
// - Render() writes the text format 0.0.4 with HELP and TYPE lines; metric names follow the
//   Prometheus conventions (base units, _total for counters), checked by `promtool check metrics`.
// - Label values are escaped (backslash, quote, newline).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "k8s/api/prometheus_text.h"

namespace vgpu::k8s {

class LatencyHistogram {
 public:
  static constexpr std::array<double, 16> kBounds = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                                     0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                                     1,      2.5,     5,      10};
  void Observe(std::chrono::nanoseconds d);
  // Appends the _bucket/_sum/_count series of `name` with the extra label text (e.g.
  // `verb="filter"`).
  void Render(std::string* out, std::string_view name, std::string_view labels) const;

 private:
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> counts_{};  // last = +Inf only
  std::atomic<uint64_t> sum_ns_{0};
  std::atomic<uint64_t> count_{0};
};

enum class Verb { kFilter = 0, kPrioritize = 1, kBind = 2 };
inline constexpr int kNumVerbs = 3;
std::string_view VerbName(Verb v);

enum class BindOutcome { kBound = 0, kNoRoom = 1, kApiError = 2, kUnknown = 3, kBadRequest = 4 };
inline constexpr int kNumBindOutcomes = 5;
std::string_view BindOutcomeName(BindOutcome o);

struct ExtenderMetrics {
  std::array<std::atomic<uint64_t>, kNumVerbs> requests_ok{};
  std::array<std::atomic<uint64_t>, kNumVerbs> requests_error{};
  std::array<LatencyHistogram, kNumVerbs> latency;
  std::atomic<uint64_t> nodes_feasible{0}, nodes_failed{0}, nodes_unresolvable{0},
      nodes_narrowed{0};
  std::array<std::atomic<uint64_t>, kNumBindOutcomes> binds{};

  void Record(Verb v, bool ok, std::chrono::nanoseconds d);
  // Writes everything above.
  void Render(std::string* out) const;
};

}  // namespace vgpu::k8s
