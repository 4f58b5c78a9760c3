#include "node/metrics_text.h"

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

MetricFamily& MetricsBuilder::Family(const std::string& name, MetricType type,
                                     const std::string& help) {
  auto it = index_.find(name);
  if (it != index_.end()) return families_[it->second];
  index_[name] = families_.size();
  families_.push_back(MetricFamily{name, type, help, {}});
  return families_.back();
}

void MetricsBuilder::Add(const std::string& name, MetricType type, const std::string& help,
                         Labels labels, double value) {
  Family(name, type, help).samples.push_back(MetricSample{"", std::move(labels), value});
}

void MetricsBuilder::Alias(const std::string& from, const std::string& to, const std::string& help,
                           const std::map<std::string, std::string>& rename, double scale) {
  auto it = index_.find(from);
  if (it == index_.end()) return;
  Derive(from, to, families_[it->second].type, help, [&](const Labels& in, Labels* out, double* v) {
    *out = in;
    for (auto& [k, value] : *out) {
      auto r = rename.find(k);
      if (r != rename.end()) k = r->second;
    }
    *v *= scale;
    return true;
  });
}

void MetricsBuilder::Derive(const std::string& from, const std::string& to, MetricType type,
                            const std::string& help, const Rewrite& rewrite) {
  auto it = index_.find(from);
  if (it == index_.end()) return;
  MetricFamily derived{to, type, help, {}};
  for (const MetricSample& s : families_[it->second].samples) {
    MetricSample out{s.suffix, {}, s.value};
    if (rewrite(s.labels, &out.labels, &out.value)) derived.samples.push_back(std::move(out));
  }
  if (derived.samples.empty()) return;
  index_[to] = families_.size();
  families_.push_back(std::move(derived));
}

bool MetricsBuilder::Has(const std::string& name) const { return index_.count(name) > 0; }

const MetricFamily* MetricsBuilder::Find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &families_[it->second];
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

void Histogram::AddTo(MetricsBuilder& builder, const std::string& name, const std::string& help,
                      const Labels& labels) const {
  std::lock_guard<std::mutex> lock(mu_);
  MetricFamily& f = builder.Family(name, MetricType::kHistogram, help);
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
