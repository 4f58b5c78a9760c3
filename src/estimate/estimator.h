// Estimator: the per-GPU memory of one LLM job from its architecture and setup, built from the
// formulas of formulas.h, with the assumptions it made listed; and the smallest vgpu slice and
// MIG profile that hold it.
//
// Modes:
// - serve: vLLM's memory model. The instance takes total · gpu_memory_utilization; weights, the
//   profiled activation peak (a forward pass of max_num_batched_tokens tokens) and non-torch
//   memory come first, the KV cache gets the rest, in blocks of block_size tokens. It starts only
//   when the budget is positive and one max_model_len sequence fits (vLLM's own check). The
//   memory a slice needs is (weights + activations + non-torch + KV of `concurrent` sequences of
//   max_model_len) / gpu_memory_utilization, since vLLM sizes itself from what the slice reports.
// - infer: plain forward passes / generation (Hugging Face style): weights, the KV cache of
//   batch · seq tokens, one layer's transient activations at prefill, last-token logits.
// - full, lora, qlora: training. Weights, gradients and optimizer state of the trainable
//   parameters over ZeRO stage and data-parallel size; LoRA/QLoRA freeze the base model (bf16 or
//   NF4) and train r·(d_in+d_out) adapter parameters per targeted matrix; activations of the
//   layers of the fullest pipeline stage (no checkpointing, or only the layer inputs plus one
//   layer recomputed), and the loss over the vocabulary.
// Encoder-decoder models (T5, mT0) run in infer and the training modes, not in serve (vLLM does
// not serve them): the encoder's seq_len tokens and the decoder's target_len tokens per
// sequence; the loss is over the decoder's tokens.
// Every mode adds framework/workspace overhead and the CUDA context.
//
// Training recipes: `loss` (torchtune's chunked cross-entropy or one fp32 cross-entropy) and
// `compile` (torch.compile on the model, on the loss, or both) change what is saved
// (formulas.h LossBytesPerLogit and LayerShape::compiled).
//
// Validate() rejects impossible setups (exit 2 in the CLI) with the reason, a shape beyond
// architecture.h's limits among them.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "estimate/architecture.h"
#include "estimate/formulas.h"
#include "estimate/gpus.h"

namespace vgpu::estimate {

enum class Mode { kServe, kInfer, kFull, kLora, kQlora };
enum class Checkpointing { kNone, kFull };
// What torch.compile covers: nothing, the model's layers, the loss function, or both.
enum class Compile { kNone, kModel, kLoss, kAll };
enum class Precision {
  kMixed,  // 16-bit weights and gradients, fp32 master weights and optimizer states [ZeRO]
  kPure,   // everything in the weights' dtype (torchtune's default: bf16 throughout)
};

struct Inputs {
  Architecture arch;
  Mode mode = Mode::kServe;
  WeightFormat weights = WeightFormat::kBf16;
  std::string weights_source;  // where `weights` came from when not given: the checkpoint
  double kv_dtype_bytes = 2;
  int batch = 1;
  int seq_len = 0;     // 0: the model's maximum (infer/training); encoder-decoder: the encoder's
  int target_len = 0;  // encoder-decoder: the decoder's tokens per sequence (0: seq_len)
  // serve
  int max_model_len = 0;  // 0: the model's maximum
  int concurrent = 1;     // sequences of max_model_len that must fit at once
  double gpu_memory_utilization = 0.92;
  int max_num_batched_tokens = 8192;
  int max_num_seqs = 256;
  int block_size = 16;
  double non_torch_bytes = 0.25 * kGiB;
  // training
  Optimizer optimizer = Optimizer::kAdamW;
  Precision precision = Precision::kMixed;
  int zero_stage = 0;
  Checkpointing checkpointing = Checkpointing::kNone;
  bool flash_attention = true;
  bool cpu_offload = false;  // optimizer state (and, with ZeRO-3, the weights) in host memory
  // The optimizer step fused into the backward pass (torchtune's optimizer_in_bwd): each
  // gradient is freed once applied, so the gradients never all exist at once.
  bool optimizer_in_backward = false;
  LossKind loss = LossKind::kFp32;
  int loss_chunks = 8;  // kChunked: torchtune's num_output_chunks
  // The loop keeps the logits until the step ends; unset: yes for kFp32 (torchtune's recipes
  // before the chunked loss), no for kChunked (torchtune's recipes delete them).
  std::optional<bool> logits_held;
  Compile compile = Compile::kNone;
  int lora_rank = 8;
  bool lora_all_linear = false;  // false: q and v projections only (PEFT's and torchtune's default)
  // parallelism
  int dp = 1, tp = 1, pp = 1;
  // where it should run
  std::optional<GpuModel> gpu;
  double slice_memory = 0;  // > 0: also check the fit on a slice of this many bytes
  double margin = 0.10;     // headroom added to the request
};

Status Validate(const Inputs& in);

struct Breakdown {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
  double activations = 0;
  double kv_cache = 0;
  double framework = 0;
  double cuda_context = 0;
  double Total() const {
    return weights + gradients + optimizer + activations + kv_cache + framework + cuda_context;
  }
};

struct ServeResult {
  double page_bytes = 0;       // one layer, one block
  double bytes_per_token = 0;  // all layers of this GPU
  int64_t needed_tokens = 0;   // concurrent · max_model_len
  double sequence_bytes = 0;   // KV of one max_model_len sequence (sliding layers: the window)
  // On the given slice, else on the given GPU (when one is given):
  double budget = 0;  // KV budget
  int64_t capacity_tokens = 0;
  bool starts = false;  // vLLM would start: budget > 0 and one max_model_len sequence fits
  std::string why_not;
};

struct Estimate {
  Inputs inputs;
  ParamCount params;
  double trainable_params = 0;
  Breakdown per_gpu;    // what one GPU needs
  double required = 0;  // the memory a slice must have (serve: divided by utilisation)
  // Training: the tensors alive at the peak moment, what torch.cuda.max_memory_allocated()
  // reports (no workspaces, fragmentation or CUDA context).
  double allocated_peak = 0;
  ModelStates states;            // training: weights, gradients, optimizer held per GPU (sharded)
  double saved_activations = 0;  // training: the layers' saved tensors, without the loss
  std::array<double, 3> moments{};  // training: start of backward, end of backward, step
  int peak_moment = -1;             // training: the index of the largest moment
  std::string peak_name;            // training: what that moment is ("the start of ...")
  double host_bytes = 0;            // offloaded or paged state in host memory
  std::optional<ServeResult> serve;
  std::vector<std::string> assumptions;
  int gpus = 1;  // dp · tp · pp
};

Estimate Compute(const Inputs& in);

// The serve KV capacity of a GPU with `total_bytes` of memory.
ServeResult ServeOn(const Estimate& e, double total_bytes);

// The smallest vgpu slice and MIG profile for an estimate.
struct Placement {
  double request = 0;  // required · (1 + margin), rounded up to whole MiB
  std::optional<GpuModel> gpu;
  bool fits_gpu = false;
  int compute_percent = 0;  // the memory share of the GPU, rounded up to 5%
  std::optional<MigProfile> mig;
  std::string why;                 // when it does not fit
  std::optional<bool> fits_slice;  // with Inputs::slice_memory: request <= the slice
};
Placement Place(const Estimate& e);

// Whether the estimate fits where it was asked to run: the GPU (given or the smallest that
// holds it), the slice of Inputs::slice_memory, and, serving on a given GPU or slice, vLLM
// starts there. `vgpu estimate` exits 1 when it does not.
bool Fits(const Estimate& e, const Placement& p);

// The key of a training moment in JSON: start_of_backward, end_of_backward, optimizer_step.
const char* MomentKey(int moment);

std::string ModeName(Mode m);
std::string FormatName(WeightFormat f);
std::string CompileName(Compile c);

}  // namespace vgpu::estimate
