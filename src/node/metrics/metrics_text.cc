#include "node/metrics/metrics_text.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace vgpu::node {

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::floor(value) && std::fabs(value) < 9.007199254740992e15) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(value));
    return buf;
  }
  // The shortest form that reads back as the same double.
  char buf[40];
  for (int precision = 6; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (std::strtod(buf, nullptr) == value) break;
  }
  return buf;
}

std::string LabelValue(const Labels& l, std::string_view key) {
  for (const auto& [k, v] : l) {
    if (k == key) return v;
  }
  return "";
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

namespace {

std::string EscapeHelp(const std::string& help) {
  std::string out;
  for (char c : help) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

const char* TypeName(MetricType t) {
  switch (t) {
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kCounter:
      return "counter";
    case MetricType::kHistogram:
      return "histogram";
    case MetricType::kUntyped:
      return "untyped";
  }
  return "untyped";
}

}  // namespace

MetricFamily& MetricsBuilder::Family(const MetricDef& def) {
  auto it = index_.find(def.name);
  if (it != index_.end()) return families_[it->second];
  index_[def.name] = families_.size();
  families_.push_back(MetricFamily{def.name, def.type, def.help, {}});
  return families_.back();
}

void MetricsBuilder::Add(const MetricDef& def, Labels labels, double value) {
  Family(def).samples.push_back(MetricSample{"", std::move(labels), value});
}

void MetricsBuilder::Derive(const MetricDef& from, const MetricDef& to, const Rewrite& rewrite) {
  const MetricFamily* source = Find(from);
  if (source == nullptr) return;
  std::vector<MetricSample> derived;
  for (const MetricSample& s : source->samples) {
    MetricSample out{s.suffix, {}, s.value};
    if (rewrite(s.labels, &out.labels, &out.value)) derived.push_back(std::move(out));
  }
  if (derived.empty()) return;
  MetricFamily& f = Family(to);  // may move `source`
  for (MetricSample& s : derived) f.samples.push_back(std::move(s));
}

const MetricFamily* MetricsBuilder::Find(const MetricDef& def) const {
  auto it = index_.find(def.name);
  if (it == index_.end() || families_[it->second].samples.empty()) return nullptr;
  return &families_[it->second];
}

std::vector<std::string> MetricsBuilder::Names() const {
  std::vector<std::string> out;
  for (const MetricFamily& f : families_) {
    if (!f.samples.empty()) out.push_back(f.name);
  }
  return out;
}

std::string MetricsBuilder::Render() const {
  std::string out;
  for (const MetricFamily& f : families_) {
    if (f.samples.empty()) continue;
    out += "# HELP " + f.name + " " + EscapeHelp(f.help) + "\n";
    out += "# TYPE " + f.name + " " + TypeName(f.type) + "\n";
    for (const MetricSample& s : f.samples) {
      out += f.name + s.suffix;
      if (!s.labels.empty()) {
        out += "{";
        for (size_t i = 0; i < s.labels.size(); ++i) {
          if (i > 0) out += ",";
          out += s.labels[i].first + "=\"" + EscapeLabelValue(s.labels[i].second) + "\"";
        }
        out += "}";
      }
      out += " " + FormatValue(s.value) + "\n";
    }
  }
  return out;
}

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), buckets_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++buckets_[i];
  sum_ += value;
  ++count_;
}

uint64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

void Histogram::AddTo(MetricsBuilder& builder, const MetricDef& def, const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  MetricFamily& f = builder.Family(def);
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += buckets_[i];
    Labels l = labels;
    l.emplace_back("le", i < bounds_.size() ? FormatValue(bounds_[i]) : "+Inf");
    f.samples.push_back({"_bucket", std::move(l), static_cast<double>(cumulative)});
  }
  f.samples.push_back({"_sum", labels, sum_});
  f.samples.push_back({"_count", labels, static_cast<double>(count_)});
}

}  // namespace vgpu::node
