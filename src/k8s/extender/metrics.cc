#include "k8s/extender/metrics.h"

#include <cstdio>

namespace vgpu::k8s {

std::string_view VerbName(Verb v) {
  switch (v) {
    case Verb::kFilter:
      return "filter";
    case Verb::kPrioritize:
      return "prioritize";
    case Verb::kBind:
      return "bind";
  }
  return "unknown";
}

std::string_view BindOutcomeName(BindOutcome o) {
  switch (o) {
    case BindOutcome::kBound:
      return "bound";
    case BindOutcome::kNoRoom:
      return "no_room";
    case BindOutcome::kApiError:
      return "api_error";
    case BindOutcome::kUnknown:
      return "unknown";
    case BindOutcome::kBadRequest:
      return "bad_request";
  }
  return "unknown";
}

void LatencyHistogram::Observe(std::chrono::nanoseconds d) {
  const double s = static_cast<double>(d.count()) * 1e-9;
  size_t i = 0;
  while (i < kBounds.size() && s > kBounds[i]) ++i;
  counts_[i].fetch_add(1, std::memory_order_relaxed);
  sum_ns_.fetch_add(static_cast<uint64_t>(d.count()), std::memory_order_relaxed);
  count_.fetch_add(1, std::memory_order_relaxed);
}

void LatencyHistogram::Render(std::string* out, std::string_view name,
                              std::string_view labels) const {
  uint64_t cumulative = 0;
  const std::string bucket = std::string(name) + "_bucket";
  const std::string sep = labels.empty() ? "" : ",";
  for (size_t i = 0; i <= kBounds.size(); ++i) {
    cumulative += counts_[i].load(std::memory_order_relaxed);
    char le[32];
    if (i < kBounds.size()) {
      std::snprintf(le, sizeof le, "%g", kBounds[i]);
    } else {
      std::snprintf(le, sizeof le, "+Inf");
    }
    RenderSample(out, bucket, std::string(labels) + sep + "le=\"" + le + "\"",
                 static_cast<double>(cumulative));
  }
  RenderSample(out, std::string(name) + "_sum", labels,
               static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) * 1e-9);
  RenderSample(out, std::string(name) + "_count", labels,
               static_cast<double>(count_.load(std::memory_order_relaxed)));
}

void ExtenderMetrics::Record(Verb v, bool ok, std::chrono::nanoseconds d) {
  const auto i = static_cast<size_t>(v);
  (ok ? requests_ok : requests_error)[i].fetch_add(1, std::memory_order_relaxed);
  latency[i].Observe(d);
}

void ExtenderMetrics::Render(std::string* out) const {
  RenderHeader(out, "vgpu_scheduler_requests_total", "counter",
               "Extender requests by verb and result.");
  for (int v = 0; v < kNumVerbs; ++v) {
    const std::string verb = "verb=\"" + std::string(VerbName(static_cast<Verb>(v))) + "\"";
    RenderSample(out, "vgpu_scheduler_requests_total", verb + ",result=\"ok\"",
                 static_cast<double>(requests_ok[static_cast<size_t>(v)].load()));
    RenderSample(out, "vgpu_scheduler_requests_total", verb + ",result=\"error\"",
                 static_cast<double>(requests_error[static_cast<size_t>(v)].load()));
  }
  RenderHeader(out, "vgpu_scheduler_request_duration_seconds", "histogram",
               "Time to answer an extender request, by verb.");
  for (int v = 0; v < kNumVerbs; ++v) {
    latency[static_cast<size_t>(v)].Render(
        out, "vgpu_scheduler_request_duration_seconds",
        "verb=\"" + std::string(VerbName(static_cast<Verb>(v))) + "\"");
  }
  RenderHeader(out, "vgpu_scheduler_filtered_nodes_total", "counter",
               "Nodes judged by the filter verb, by outcome.");
  RenderSample(out, "vgpu_scheduler_filtered_nodes_total", "result=\"feasible\"",
               static_cast<double>(nodes_feasible.load()));
  RenderSample(out, "vgpu_scheduler_filtered_nodes_total", "result=\"failed\"",
               static_cast<double>(nodes_failed.load()));
  RenderSample(out, "vgpu_scheduler_filtered_nodes_total", "result=\"unresolvable\"",
               static_cast<double>(nodes_unresolvable.load()));
  RenderSample(out, "vgpu_scheduler_filtered_nodes_total", "result=\"narrowed\"",
               static_cast<double>(nodes_narrowed.load()));
  RenderHeader(out, "vgpu_scheduler_binds_total", "counter",
               "Bind verb outcomes: bound, no_room (the node filled up meanwhile), api_error, "
               "unknown (the API server did not answer; settled later), bad_request.");
  for (int o = 0; o < kNumBindOutcomes; ++o) {
    RenderSample(out, "vgpu_scheduler_binds_total",
                 "result=\"" + std::string(BindOutcomeName(static_cast<BindOutcome>(o))) + "\"",
                 static_cast<double>(binds[static_cast<size_t>(o)].load()));
  }
}

}  // namespace vgpu::k8s
