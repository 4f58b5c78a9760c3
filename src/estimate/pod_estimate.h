// PodEstimate: turns a pod's vgpu.io/estimate annotation into a GPU memory request, for the
// admission webhook.
//
// The annotation's value is the key=value list of spec.h (the long flags of `vgpu estimate`),
// plus one key of its own: container=<name>, the container that gets the request (default: the
// first of spec.containers). Example:
//   metadata:
//     annotations:
//       vgpu.io/estimate: "model=llama-3-8b,mode=serve,max-model-len=8192,concurrent=4"
// Config files cannot be named (the webhook reads no files): model must be a bundled name.
//
// The result: the container's index, the request in MiB (the estimate's required memory plus the
// margin, what <prefix>/gpumem takes) and a one-line JSON record for the pod's
// vgpu.io/estimate-result annotation (model, mode, gpumem_mib, per-GPU breakdown in MiB, GPU,
// compute share, MIG profile, KV tokens). Errors (InvalidArgument) say why the pod is refused:
// a malformed annotation, an unknown model or key, an impossible setup, a container that does
// not exist, or an estimate larger than every known GPU (or than the GPU the annotation names).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"

namespace vgpu::estimate {

inline constexpr const char* kEstimateAnnotation = "vgpu.io/estimate";
inline constexpr const char* kEstimateResultAnnotation = "vgpu.io/estimate-result";

struct PodEstimate {
  std::string container_list = "containers";
  size_t container_index = 0;
  std::string container_name;
  int64_t gpumem_mib = 0;
  std::string record;  // JSON, one line
};

// The estimate for `annotation` (the annotation's value) and the pod's spec.containers.
Result<PodEstimate> EstimateForPod(const std::string& annotation, const nlohmann::json& containers);

}  // namespace vgpu::estimate
