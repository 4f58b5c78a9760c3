// The two renderings of an estimate: a readable table (breakdown, fit, KV capacity, the slice
// and MIG profile, the assumptions) and JSON for scripts. Sizes in the JSON are bytes; the
// table prints GiB.
//
// JSON: {"model", "mode", "gpus", "params", "trainable_params", "per_gpu": {"weights",
// "gradients", "optimizer", "activations", "kv_cache", "framework", "cuda_context", "total"},
// "required", "host", "serve": {"page_bytes", "bytes_per_token", "needed_tokens", and on a GPU
// "budget", "kv_tokens", "starts", "why_not"}, "placement": {"request", "gpu", "fits",
// "fits_slice" (with slice-memory),
// "compute_percent", "mig", "why"}, "gpumem_mib", "fits" (Fits(): the GPU, the slice and, serving
// on a given GPU or slice, vLLM's start), "assumptions": [...]; training adds "training":
// {"allocated_peak", "start_of_backward", "end_of_backward", "optimizer_step", "peak_moment",
// "model_states": {"weights", "gradients", "optimizer"}} and "per_gpu_at" (the moment per_gpu
// is taken at: per_gpu is what is alive then, model_states what is held through the step).
// The table's training header names that moment ("per GPU at the peak, the start of the
// backward pass ...").

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
