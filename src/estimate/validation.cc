#include "estimate/validation.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "estimate/estimator.h"
#include "estimate/spec.h"

namespace vgpu::estimate {

namespace {

using Json = nlohmann::json;

Result<double> Number(const Json& object, const char* key, const std::string& id) {
  if (!object.contains(key) || !object[key].is_number()) {
    return Status::InvalidArgument("point " + id + ": measured." + key + " is missing");
  }
  return object[key].get<double>();
}

}  // namespace

Result<std::vector<PointResult>> ValidatePoints(std::string_view json_text) {
  Json doc = Json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("points") ||
      !doc["points"].is_array()) {
    return Status::InvalidArgument("measured points: not a JSON object with a points array");
  }
  std::vector<PointResult> results;
  for (const Json& p : doc["points"]) {
    PointResult r;
    r.id = p.value("id", "?");
    r.kind = p.value("kind", "");
    r.fully_known = p.value("fully_known", true);
    if (p.contains("source") && p["source"].is_object()) r.source = p["source"].value("url", "");
    Spec spec;
    if (!p.contains("spec") || !p["spec"].is_object()) {
      return Status::InvalidArgument("point " + r.id + ": no spec");
    }
    for (const auto& [k, v] : p["spec"].items()) {
      spec[k] = v.is_string() ? v.get<std::string>() : v.dump();
    }
    auto inputs = InputsFromSpec(spec, false);
    if (!inputs) return Status::InvalidArgument("point " + r.id + ": " + inputs.error().message());
    const Json measured = p.value("measured", Json::object());
    const Estimate e = Compute(*inputs);
    if (r.kind == "weights") {
      auto m = Number(measured, "weights_gib", r.id);
      if (!m) return m.error();
      r.measured = *m;
      r.estimated = e.per_gpu.weights / kGiB;
      r.error = r.estimated / r.measured - 1;
      r.ok = std::fabs(r.error) <= 0.01;
    } else if (r.kind == "kv_tokens") {
      auto budget = Number(measured, "kv_budget_gib", r.id);
      auto tokens = Number(measured, "kv_tokens", r.id);
      if (!budget) return budget.error();
      if (!tokens) return tokens.error();
      const int layers = LayersPerStage(inputs->arch.layers, inputs->pp);
      r.measured = *tokens;
      r.estimated =
          double(VllmKvTokens(*budget * kGiB, e.serve->page_bytes, layers, inputs->block_size));
      r.error = r.estimated / r.measured - 1;
      r.ok = std::fabs(r.error) <= 0.02;
    } else if (r.kind == "fit") {
      auto total = Number(measured, "total_gib", r.id);
      if (!total) return total.error();
      if (!measured.contains("starts") || !measured["starts"].is_boolean()) {
        return Status::InvalidArgument("point " + r.id + ": measured.starts is missing");
      }
      r.measured = measured["starts"].get<bool>() ? 1 : 0;
      r.estimated = ServeOn(e, *total * kGiB).starts ? 1 : 0;
      r.error = r.estimated == r.measured ? 0 : 1;
      r.ok = r.error == 0;
    } else if (r.kind == "training_peak") {
      // measured.peak_gb (10^9 bytes) or peak_gib; measured.quantity "allocated"
      // (torch.cuda.max_memory_allocated: the tensors at the peak) or "reserved"
      // (max_memory_reserved: also workspaces and the allocator's fragmentation). Neither
      // counts the CUDA context. Compared in GiB.
      const bool gb = measured.contains("peak_gb");
      auto m = Number(measured, gb ? "peak_gb" : "peak_gib", r.id);
      if (!m) return m.error();
      r.measured = gb ? *m * 1e9 / kGiB : *m;
      const std::string quantity = measured.value("quantity", "reserved");
      if (quantity == "allocated") {
        r.estimated = e.allocated_peak / kGiB;
      } else if (quantity == "reserved") {
        r.estimated = (e.per_gpu.Total() - e.per_gpu.cuda_context) / kGiB;
      } else {
        return Status::InvalidArgument("point " + r.id +
                                       ": measured.quantity must be allocated "
                                       "or reserved, not '" +
                                       quantity + "'");
      }
      r.error = r.estimated / r.measured - 1;
      r.ok = std::fabs(r.error) <= 0.15;
    } else {
      return Status::InvalidArgument("point " + r.id + ": unknown kind '" + r.kind + "'");
    }
    results.push_back(std::move(r));
  }
  return results;
}

std::string RenderValidation(const std::vector<PointResult>& results) {
  std::string out =
      "| point | kind | known | estimate | measured | signed error | target |\n"
      "|---|---|---|---:|---:|---:|---|\n";
  char buf[512];
  for (const PointResult& r : results) {
    std::string est, mea, err;
    if (r.kind == "fit") {
      est = r.estimated > 0 ? "starts" : "fails";
      mea = r.measured > 0 ? "starts" : "fails";
      err = r.ok ? "right" : "wrong";
    } else {
      const bool tokens = r.kind == "kv_tokens";
      std::snprintf(buf, sizeof buf, tokens ? "%.0f" : "%.4f GiB", r.estimated);
      est = buf;
      std::snprintf(buf, sizeof buf, tokens ? "%.0f" : "%.4f GiB", r.measured);
      mea = buf;
      std::snprintf(buf, sizeof buf, "%+.2f%%", r.error * 100);
      err = buf;
    }
    const char* target = r.kind == "weights"     ? "1%"
                         : r.kind == "kv_tokens" ? "2%"
                         : r.kind == "fit"       ? "right"
                                                 : "15%";
    std::snprintf(buf, sizeof buf, "| %s | %s | %s | %s | %s | %s | %s %s |\n", r.id.c_str(),
                  r.kind.c_str(), r.fully_known ? "yes" : "partly", est.c_str(), mea.c_str(),
                  err.c_str(), target, r.ok ? "met" : "missed");
    out += buf;
  }
  return out;
}

}  // namespace vgpu::estimate
