// The two renderings of an estimate: a readable table (breakdown, fit, KV capacity, the slice
// and MIG profile, the assumptions) and JSON for scripts. Sizes in the JSON are bytes; the
// table prints GiB.
//
// JSON: {"model", "mode", "gpus", "params", "trainable_params", "per_gpu": {"weights",
// "gradients", "optimizer", "activations", "kv_cache", "framework", "cuda_context", "total"},
// "required", "host", "serve": {"page_bytes", "bytes_per_token", "needed_tokens", and on a GPU
// "budget", "kv_tokens", "starts", "why_not"}, "placement": {"request", "gpu", "fits",
// "fits_slice" (with slice-memory),
// "compute_percent", "mig", "why"}, "gpumem_mib", "assumptions": [...]}.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "estimate/estimator.h"

namespace vgpu::estimate {

std::string RenderTable(const Estimate& e, const Placement& p);
nlohmann::json ToJson(const Estimate& e, const Placement& p);
// The request in MiB (the unit of <prefix>/gpumem).
int64_t RequestMib(const Placement& p);

}  // namespace vgpu::estimate
