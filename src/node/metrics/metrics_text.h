// The Prometheus text exposition format (version 0.0.4), written by hand: metric families with
// HELP and TYPE lines, samples with escaped label values, histograms with cumulative buckets.
//
// A family is named by a MetricDef (name, type, help); the node daemon's are the constants of
// node/metrics/metrics_catalog.h, the one list of what /metrics can carry. Families are collected
// first and rendered at the end so that every sample of a family is contiguous (promtool rejects
// interleaved families). Derived families (another family, labels and values rewritten by a
// function) copy a family's samples, which is how HAMi's and dcgm-exporter's metric names are
// offered next to ours.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace vgpu::node {

using Labels = std::vector<std::pair<std::string, std::string>>;

// The value of label `key` in `l`; "" when `l` has no such label.
std::string LabelValue(const Labels& l, std::string_view key);

// kUntyped: "# TYPE name untyped", for a name another exporter chose that promtool's lint
// rules would reject as a gauge (a "_count" suffix).
enum class MetricType { kGauge, kCounter, kHistogram, kUntyped };

struct MetricSample {
  std::string suffix;  // "" or, for histograms, "_bucket" / "_sum" / "_count"
  Labels labels;
  double value = 0;
};

// What a family is: its name, type and HELP text. Constants of static storage (the strings are
// not copied until a family is rendered).
struct MetricDef {
  const char* name;
  MetricType type;
  const char* help;
};

struct MetricFamily {
  std::string name;
  MetricType type = MetricType::kGauge;
  std::string help;
  std::vector<MetricSample> samples;
};

class MetricsBuilder {
 public:
  void Add(const MetricDef& def, Labels labels, double value);
  // Adds family `to` with one sample for each sample of family `from` for which
  // `rewrite(labels, &out_labels, &value)` returns true (value starts as the sample's). Nothing
  // is added when `from` has no samples or `rewrite` keeps none.
  using Rewrite = std::function<bool(const Labels& in, Labels* out, double* value)>;
  void Derive(const MetricDef& from, const MetricDef& to, const Rewrite& rewrite);
  // The family `def`, nullptr when it has no sample.
  const MetricFamily* Find(const MetricDef& def) const;
  // The families with samples, in the order they were first added.
  std::vector<std::string> Names() const;
  // The exposition text; families in the order they were first added.
  std::string Render() const;

 private:
  friend class Histogram;
  // Returns the family `def`, creating it on first use.
  MetricFamily& Family(const MetricDef& def);

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
  // Adds the histogram to `builder` as family `def` (of type kHistogram).
  void AddTo(MetricsBuilder& builder, const MetricDef& def, const Labels& labels) const;
  uint64_t count() const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> buckets_;  // non-cumulative, one per bound plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace vgpu::node
