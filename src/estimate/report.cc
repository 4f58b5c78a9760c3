#include "estimate/report.h"

#include <cmath>
#include <cstdio>

namespace vgpu::estimate {

namespace {

std::string Fmt(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string Line(const char* label, double bytes) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "  %-22s %10.2f GiB\n", label, bytes / kGiB);
  return buf;
}

}  // namespace

int64_t RequestMib(const Placement& p) { return int64_t(std::ceil(p.request / kMiB)); }

std::string RenderTable(const Estimate& e, const Placement& p) {
  const Inputs& in = e.inputs;
  std::string out;
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s, %s, %d GPU(s) (dp %d, tp %d, pp %d); per GPU",
                in.arch.name.c_str(), ModeName(in.mode).c_str(), e.gpus, in.dp, in.tp, in.pp);
  out += buf;
  // A training breakdown is what is alive at the peak moment, not every term at once.
  out += e.peak_moment >= 0 ? " at the peak, " + e.peak_name + ":\n" : std::string(":\n");
  const Breakdown& b = e.per_gpu;
  out += Line("weights", b.weights);
  if (in.mode != Mode::kServe && in.mode != Mode::kInfer) {
    out += Line("gradients", b.gradients);
    out += Line("optimizer state", b.optimizer);
  }
  out += Line("activations", b.activations);
  out += Line(in.mode == Mode::kServe ? "KV cache (needed)" : "KV cache", b.kv_cache);
  out += Line(in.mode == Mode::kServe ? "non-torch" : "framework/workspace", b.framework);
  out += Line("CUDA context", b.cuda_context);
  out += Line("total", b.Total());
  if (in.mode == Mode::kServe) {
    out += Line("required (/ utilisation)", e.required);
  }
  if (e.host_bytes > 0) out += Line("host memory", e.host_bytes);
  if (e.peak_moment >= 0) {
    std::snprintf(buf, sizeof buf,
                  "model states per GPU: weights %.2f, gradients %.2f, optimizer state "
                  "%.2f GiB; the three moments %.2f, %.2f, %.2f GiB\n",
                  e.states.weights / kGiB, e.states.gradients / kGiB, e.states.optimizer / kGiB,
                  e.moments[0] / kGiB, e.moments[1] / kGiB, e.moments[2] / kGiB);
    out += buf;
  }
  if (e.serve) {
    const ServeResult& s = *e.serve;
    std::snprintf(buf, sizeof buf, "KV cache: %.0f B per token, %lld tokens needed (%d x %d)\n",
                  s.bytes_per_token, static_cast<long long>(s.needed_tokens), in.concurrent,
                  in.max_model_len > 0 ? in.max_model_len : in.arch.max_positions);
    out += buf;
    if (in.gpu || in.slice_memory > 0) {
      const std::string where =
          in.slice_memory > 0 ? Fmt("a slice of %.2f GiB", in.slice_memory / kGiB) : in.gpu->name;
      std::snprintf(buf, sizeof buf, "on %s: KV budget %.2f GiB = %lld tokens; vLLM %s\n",
                    where.c_str(), s.budget / kGiB, static_cast<long long>(s.capacity_tokens),
                    s.starts ? "starts" : ("does not start: " + s.why_not).c_str());
      out += buf;
    }
  }
  if (p.gpu && p.fits_gpu) {
    std::snprintf(buf, sizeof buf,
                  "fits %s: slice of %lld MiB (%.2f GiB, margin %.0f%%) and %d%% compute; MIG %s\n",
                  p.gpu->name.c_str(), static_cast<long long>(RequestMib(p)), p.request / kGiB,
                  in.margin * 100, p.compute_percent,
                  p.mig ? p.mig->name.c_str() : "none fits (or no MIG on this GPU)");
    out += buf;
  } else {
    out += "does not fit: " + p.why + "\n";
  }
  if (p.fits_slice) {
    std::snprintf(buf, sizeof buf, "slice of %.2f GiB: %s\n", in.slice_memory / kGiB,
                  *p.fits_slice ? "fits" : "too small for the request");
    out += buf;
  }
  out += "assumptions:\n";
  for (const std::string& a : e.assumptions) out += "  - " + a + "\n";
  out += "  - model source: " + in.arch.source + "\n";
  return out;
}

nlohmann::json ToJson(const Estimate& e, const Placement& p) {
  using nlohmann::json;
  const Breakdown& b = e.per_gpu;
  json j = {
      {"model", e.inputs.arch.name},
      {"mode", ModeName(e.inputs.mode)},
      {"gpus", e.gpus},
      {"params", e.params.Total()},
      {"trainable_params", e.trainable_params},
      {"per_gpu",
       {{"weights", b.weights},
        {"gradients", b.gradients},
        {"optimizer", b.optimizer},
        {"activations", b.activations},
        {"kv_cache", b.kv_cache},
        {"framework", b.framework},
        {"cuda_context", b.cuda_context},
        {"total", b.Total()}}},
      {"required", e.required},
      {"host", e.host_bytes},
      {"assumptions", e.assumptions},
      {"source", e.inputs.arch.source},
  };
  if (e.serve) {
    json s = {{"page_bytes", e.serve->page_bytes},
              {"bytes_per_token", e.serve->bytes_per_token},
              {"needed_tokens", e.serve->needed_tokens},
              {"sequence_bytes", e.serve->sequence_bytes}};
    if (e.inputs.gpu || e.inputs.slice_memory > 0) {
      s["budget"] = e.serve->budget;
      s["kv_tokens"] = e.serve->capacity_tokens;
      s["starts"] = e.serve->starts;
      s["why_not"] = e.serve->why_not;
    }
    j["serve"] = s;
  }
  if (e.allocated_peak > 0) {
    j["training"] = {{"allocated_peak", e.allocated_peak},
                     {"start_of_backward", e.moments[0]},
                     {"end_of_backward", e.moments[1]},
                     {"optimizer_step", e.moments[2]},
                     {"peak_moment", MomentKey(e.peak_moment)},
                     {"model_states",
                      {{"weights", e.states.weights},
                       {"gradients", e.states.gradients},
                       {"optimizer", e.states.optimizer}}}};
    // per_gpu is the breakdown at that moment.
    j["per_gpu_at"] = MomentKey(e.peak_moment);
  }
  j["fits"] = Fits(e, p);
  json pl = {{"request", p.request}, {"fits", p.gpu.has_value() && p.fits_gpu}};
  pl["gpu"] = p.gpu ? json(p.gpu->name) : json(nullptr);
  pl["compute_percent"] = p.compute_percent;
  pl["mig"] = p.mig ? json(p.mig->name) : json(nullptr);
  pl["why"] = p.why;
  if (p.fits_slice) pl["fits_slice"] = *p.fits_slice;
  j["placement"] = pl;
  j["gpumem_mib"] = RequestMib(p);
  return j;
}

}  // namespace vgpu::estimate
