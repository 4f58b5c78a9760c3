// The Prometheus text exposition format (version 0.0.4), written by hand: metric families with
// HELP and TYPE lines, samples with escaped label values, histograms with cumulative buckets.
//
// Families are collected first and rendered at the end so that every sample of a family is
// contiguous (promtool rejects interleaved families). Aliases (another name, renamed labels)
// and derived families (another name, labels and values rewritten by a function) copy a
// family's samples, which is how HAMi's metric names are offered next to ours.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace vgpu::node {

using Labels = std::vector<std::pair<std::string, std::string>>;

// kUntyped: "# TYPE name untyped", for a name another exporter chose that promtool's lint
// rules would reject as a gauge (a "_count" suffix).
enum class MetricType { kGauge, kCounter, kHistogram, kUntyped };

struct MetricSample {
  std::string suffix;  // "" or, for histograms, "_bucket" / "_sum" / "_count"
  Labels labels;
  double value = 0;
};

struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::vector<MetricSample> samples;
};

class MetricsBuilder {
 public:
  // Returns the family `name`, creating it (with `type` and `help`) on first use.
  MetricFamily& Family(const std::string& name, MetricType type, const std::string& help);
  void Add(const std::string& name, MetricType type, const std::string& help, Labels labels,
           double value);
  // Adds a copy of family `from` (if it has samples) named `to`, with label names renamed by
  // `rename` (names not in the map are kept) and values multiplied by `scale`.
  void Alias(const std::string& from, const std::string& to, const std::string& help,
             const std::map<std::string, std::string>& rename, double scale = 1.0);
  // Adds family `to` (type `type`) with one sample for each sample of family `from` for which
  // `rewrite(labels, &out_labels, &value)` returns true (value starts as the sample's). Nothing
  // is added when `from` has no samples or `rewrite` keeps none.
  using Rewrite = std::function<bool(const Labels& in, Labels* out, double* value)>;
  void Derive(const std::string& from, const std::string& to, MetricType type,
              const std::string& help, const Rewrite& rewrite);
  bool Has(const std::string& name) const;
  // The family `name`, nullptr when there is none.
  const MetricFamily* Find(const std::string& name) const;
  // The exposition text; families in the order they were first added.
  std::string Render() const;

 private:
  std::vector<MetricFamily> families_;
  std::map<std::string, size_t> index_;
};

// Formats a sample value: integers exactly, others with 17 significant digits, NaN and ±Inf as
// Prometheus spells them.
std::string FormatValue(double value);
// Escapes a label value (backslash, double quote, newline).
std::string EscapeLabelValue(const std::string& value);

// A thread-safe histogram with fixed upper bounds (seconds, for latencies).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  // Adds the histogram to `builder` as family `name`.
  void AddTo(MetricsBuilder& builder, const std::string& name, const std::string& help,
             const Labels& labels) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> buckets_;  // non-cumulative, one per bound plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace vgpu::node
