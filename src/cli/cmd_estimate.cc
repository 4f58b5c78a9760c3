// vgpu estimate: the GPU memory an LLM job needs per GPU, and the smallest vgpu slice and MIG
// profile that hold it (src/estimate/). The flags are the keys of the vgpu.io/estimate pod
// annotation (src/estimate/spec.h), so a command line and an annotation give the same answer.
// Exit 0 when the estimate fits (the GPU given or the smallest that holds it, the slice of
// --slice-memory, vLLM's start on them), 1 when it does not (the estimate is printed all the
// same, with the reason), 2 for bad input (unknown model, malformed config.json, a shape or
// size out of range, impossible parallel sizes, a sequence beyond the model's maximum).
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "estimate/report.h"
#include "estimate/spec.h"
#include "estimate/validation.h"

namespace vgpu::cli {

namespace {

struct FlagHelp {
  const char* key;
  const char* help;
};

constexpr FlagHelp kFlags[] = {
    {"model", "bundled model name (--list-models) or a Hugging Face config.json (or its folder)"},
    {"mode", "serve (vLLM), infer, full, lora or qlora [serve]"},
    {"dtype",
     "weights: bf16, fp16, fp32, fp8, int8, int4 (gptq/awq), nf4 [the checkpoint's: config.json's "
     "quantization_config or torch_dtype; bf16 when it names none]"},
    {"kv-dtype", "KV cache: auto, bf16, fp16, fp8 [auto]"},
    {"batch", "sequences per step (infer, training) [1]"},
    {"seq-len", "tokens per sequence (infer, training) [the model's maximum]"},
    {"target-len", "encoder-decoder models (t5, mt0): the decoder's tokens per sequence [seq-len]"},
    {"max-model-len", "serve: vLLM's max_model_len [the model's maximum]"},
    {"concurrent", "serve: sequences of max-model-len that must fit at once [1]"},
    {"gpu-memory-utilization", "serve: vLLM's gpu_memory_utilization [0.92]"},
    {"max-num-batched-tokens", "serve: tokens of vLLM's profile run [8192]"},
    {"max-num-seqs", "serve: vLLM's max_num_seqs [256]"},
    {"block-size", "serve: tokens per KV block [16]"},
    {"non-torch", "serve: memory outside PyTorch (NCCL, cuBLAS) [256MiB]"},
    {"optimizer",
     "adamw, adam, adamw-fused, adamw8bit, paged-adamw, paged-adamw8bit, sgd, sgd-momentum"},
    {"precision", "mixed (fp32 master weights and states) or pure (all in dtype) [mixed]"},
    {"zero", "ZeRO stage 0-3 [0]"},
    {"dp", "data-parallel size [1]"},
    {"tp", "tensor-parallel size [1]"},
    {"pp", "pipeline-parallel size [1]"},
    {"checkpointing", "activation checkpointing: none or full [none]"},
    {"flash-attention", "true or false [true]"},
    {"cpu-offload", "optimizer state (and ZeRO-3 weights) in host memory: true or false"},
    {"optimizer-in-backward",
     "the optimizer step fused into the backward pass (torchtune's optimizer_in_bwd): true or "
     "false [false]"},
    {"loss",
     "training loss: fp32 (one cross-entropy on fp32 logits) or chunked (torchtune's "
     "CEWithChunkedOutputLoss) [fp32]"},
    {"loss-chunks", "chunks of the chunked loss (torchtune's num_output_chunks) [8]"},
    {"logits-held",
     "the training loop keeps the logits until the step ends: true or false [true with "
     "--loss fp32, false with chunked, as torchtune's recipes]"},
    {"compile", "what torch.compile covers: none, model, loss or all [none]"},
    {"lora-rank", "LoRA rank [8]"},
    {"lora-targets", "qv (q and v projections) or all (every linear layer) [qv]"},
    {"gpu", "GPU model to check the fit on (--list-gpus) [the smallest that fits]"},
    {"slice-memory", "also check the fit on a vgpu slice of this size (e.g. 20GiB)"},
    {"margin", "headroom added to the request, percent [10]"},
};

}  // namespace

int RunEstimate(int argc, char** argv) {
  CLI::App app(
      "Estimates the GPU memory of an LLM job per GPU (weights, gradients, optimizer state, "
      "activations, KV cache, framework overhead, CUDA context), whether it fits a GPU, the "
      "KV-cache capacity of a vLLM server, and the smallest vgpu slice (memory and compute "
      "share) and MIG profile that hold it with a margin. The flags are the keys of the pod "
      "annotation vgpu.io/estimate (docs/estimate.md).\n"
      "Exit status: 0 when it fits (the GPU given or the smallest that holds it, the slice of "
      "--slice-memory, vLLM's start there), 1 when it does not (the estimate is printed with the "
      "reason), 2 for bad input.",
      "vgpu estimate");
  std::map<std::string, std::string> values;
  for (const FlagHelp& f : kFlags) {
    app.add_option("--" + std::string(f.key), values[f.key], f.help);
  }
  bool json = false, list_models = false, list_gpus = false;
  app.add_flag("--json", json, "print the estimate as JSON (bytes)");
  app.add_flag("--list-models", list_models, "list the bundled models and their sources");
  app.add_flag("--list-gpus", list_gpus, "list the known GPU models and MIG profiles");
  std::string validate;
  app.add_option("--validate", validate,
                 "check the estimator against a measured-points file "
                 "(tests/estimate/measured_points.json) and print the signed errors");
  if (auto code = ParseArgs(app, argc, argv)) return *code;

  if (list_models) {
    for (const estimate::Architecture& a : estimate::BundledArchitectures()) {
      std::printf("%-18s %6.2f B params, max %d tokens; %s\n", a.name.c_str(),
                  estimate::ParamCounts(a).Total() / 1e9, a.max_positions, a.source.c_str());
    }
    return kExitOk;
  }
  if (list_gpus) {
    for (const estimate::GpuModel& g : estimate::KnownGpus()) {
      std::string mig;
      for (const estimate::MigProfile& m : estimate::MigProfilesFor(g)) mig += " " + m.name;
      std::printf("%-10s %7.2f GiB, %3d SMs; MIG:%s\n", g.name.c_str(), g.memory / estimate::kGiB,
                  g.sms, mig.empty() ? " none" : mig.c_str());
    }
    return kExitOk;
  }
  if (!validate.empty()) {
    std::ifstream in(validate);
    std::stringstream text;
    text << in.rdbuf();
    if (!in) return ReportStatus("estimate", Status::InvalidArgument(validate + ": cannot read"));
    auto results = estimate::ValidatePoints(text.str());
    if (!results) return ReportStatus("estimate", results.error());
    std::fputs(estimate::RenderValidation(*results).c_str(), stdout);
    return kExitOk;
  }
  estimate::Spec spec;
  for (const auto& [key, value] : values) {
    if (app.count("--" + key) > 0) spec[key] = value;
  }
  auto inputs = estimate::InputsFromSpec(spec, /*allow_files=*/true);
  if (!inputs) return ReportStatus("estimate", inputs.error());
  const estimate::Estimate e = estimate::Compute(*inputs);
  const estimate::Placement p = estimate::Place(e);
  if (json) {
    std::printf("%s\n", estimate::ToJson(e, p).dump(2).c_str());
  } else {
    std::fputs(estimate::RenderTable(e, p).c_str(), stdout);
  }
  return estimate::Fits(e, p) ? kExitOk : kExitFailure;
}

}  // namespace vgpu::cli
