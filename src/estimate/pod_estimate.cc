#include "estimate/pod_estimate.h"

#include <cmath>

#include "estimate/estimator.h"
#include "estimate/report.h"
#include "estimate/spec.h"

namespace vgpu::estimate {

Result<PodEstimate> EstimateForPod(const std::string& annotation,
                                   const nlohmann::json& containers) {
  auto bad = [](const std::string& why) {
    return Status::InvalidArgument(std::string(kEstimateAnnotation) + ": " + why);
  };
  auto spec = ParseSpec(annotation);
  if (!spec) return bad(spec.error().message());
  PodEstimate out;
  std::string want;
  if (auto it = spec->find("container"); it != spec->end()) {
    want = it->second;
    spec->erase(it);
  }
  if (!containers.is_array() || containers.empty()) return bad("the pod has no containers");
  bool found = false;
  for (size_t i = 0; i < containers.size(); ++i) {
    const nlohmann::json& c = containers[i];
    const std::string name = c.is_object() && c.contains("name") && c["name"].is_string()
                                 ? c["name"].get<std::string>()
                                 : "";
    if (want.empty() || name == want) {
      out.container_index = i;
      out.container_name = name;
      found = true;
      break;
    }
  }
  if (!found) return bad("no container named '" + want + "'");
  auto inputs = InputsFromSpec(*spec, /*allow_files=*/false);
  if (!inputs) return bad(inputs.error().message());
  const Estimate e = Compute(*inputs);
  const Placement p = Place(e);
  if (!p.gpu || !p.fits_gpu) return bad("the estimate does not fit: " + p.why);
  out.gpumem_mib = RequestMib(p);
  auto mib = [](double bytes) { return int64_t(std::ceil(bytes / kMiB)); };
  const Breakdown& b = e.per_gpu;
  nlohmann::json record = {
      {"model", inputs->arch.name},
      {"mode", ModeName(inputs->mode)},
      {"gpumem_mib", out.gpumem_mib},
      {"margin_percent", int(std::lround(inputs->margin * 100))},
      {"per_gpu_mib",
       {{"weights", mib(b.weights)},
        {"gradients", mib(b.gradients)},
        {"optimizer", mib(b.optimizer)},
        {"activations", mib(b.activations)},
        {"kv_cache", mib(b.kv_cache)},
        {"framework", mib(b.framework)},
        {"cuda_context", mib(b.cuda_context)}}},
      {"gpu", p.gpu->name},
      {"compute_percent", p.compute_percent},
      {"mig", p.mig ? nlohmann::json(p.mig->name) : nlohmann::json(nullptr)},
      {"gpus", e.gpus},
  };
  if (e.serve) record["kv_tokens_needed"] = e.serve->needed_tokens;
  out.record = record.dump();
  return out;
}

}  // namespace vgpu::estimate
