// The memory formulas of `vgpu estimate`, one small pure function each, with the source it
// follows. All sizes are bytes (double: exact for every integer below 2^53, i.e. 8 PiB), counts
// are plain numbers. Nothing here reads a file or a clock.
//
// Sources (cited by the short names below):
// - [ZeRO]  Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
//           Models", SC'20, arXiv 1910.02054, §3: mixed-precision Adam keeps 2 (fp16 weights) +
//           2 (fp16 gradients) + 12 (fp32 master weights, momentum, variance) bytes per parameter.
// - [DS2]   DeepSpeed deepspeed/runtime/zero/stage_1_and_2.py,
// estimate_zero2_model_states_mem_needs.
// - [DS3]   DeepSpeed deepspeed/runtime/zero/stage3.py, estimate_zero3_model_states_mem_needs.
// - [KORT]  Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
//           MLSys'23, arXiv 2205.05198, §4: s·b·h·(34 + 5·a·s/h) bytes per layer in 16-bit.
// - [VLLM]  vLLM vllm/v1/kv_cache_interface.py (page size of full attention) and
//           vllm/config/cache.py + the worker's memory profile (the gpu_memory_utilization budget).
// - [QLORA] Dettmers et al., "QLoRA: Efficient Finetuning of Quantized LLMs", arXiv 2305.14314,
//           §2-3: NF4 blocks of 64 with an 8-bit absmax, double-quantised in blocks of 256.
// - [LORA]  Hu et al., "LoRA", arXiv 2106.09685: an adapter on a d×k matrix adds r·(d+k) params.
// - [TORCH] PyTorch: aten cross_entropy / log_softmax / nll_loss and their backward kernels;
//           torch/optim/adamw.py (foreach and fused implementations).
// - [FSDP]  torch.distributed.fsdp (FSDP1) FULL_SHARD: _runtime_utils.py (_post_forward_reshard,
//           backward prefetch), flat parameters (flat_param.py).
// - [TTUNE] torchtune (v0.1, 2024): torchtune/utils/memory.py register_optim_in_bwd_hooks, the
//           optimizer step fused into the backward pass (optimizer_in_bwd).
// - [TTCE]  torchtune torchtune/modules/loss/ce_chunked_output_loss.py (CEWithChunkedOutputLoss),
//           TransformerDecoder's chunked output and the recipes' `del logits` (pull request
//           #1390, 2024-08).
// - [COMPILE] PyTorch torch/_functorch/partitioners.py, min_cut_rematerialization_partition
//           (torch.compile's default partitioner): fusible pointwise ops are recomputed in the
//           backward pass instead of saving their outputs when that saves memory.
// - [BNB]   bitsandbytes 8-bit optimizers (Dettmers et al., arXiv 2110.02861): two int8 states per
//           parameter plus one fp32 absmax per block of 2048.
#pragma once

#include <cstdint>

namespace vgpu::estimate {

inline constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
inline constexpr double kMiB = 1024.0 * 1024.0;

// ---- Weights ----------------------------------------------------------------------------------

// How a tensor's elements are stored.
enum class WeightFormat {
  kFp32,
  kBf16,  // also fp16
  kFp8,
  kInt8,
  kInt4Group128,  // GPTQ/AWQ: 4-bit values, an fp16 scale and a 4-bit zero per group of 128
  kNf4,           // [QLORA] NF4 with double quantisation
};

// Bytes per element of `format`, its quantisation constants included:
// - int4 group 128 (GPTQ/AWQ checkpoints): 0.5 + (2 B scale + 0.5 B packed zero) / 128.
// - NF4 [QLORA §2]: 0.5 + 1 B absmax / 64 + 4 B fp32 second-level constant / (64·256)
//   (= 4 + 0.127 bits, the paper's figure for double quantisation).
double BytesPerElement(WeightFormat format);

// Weight memory of one GPU: the quantisable parameters (the linear layers of the blocks) in
// `linear_format`, the rest (embeddings, output head, norms) in `other_format`.
double WeightBytes(double linear_params, double other_params, WeightFormat linear_format,
                   WeightFormat other_format);

// ---- Training state (weights, gradients, optimizer) -------------------------------------------

enum class Optimizer {
  kAdamW,       // torch Adam/AdamW: two states per parameter in the state dtype (foreach step)
  kAdamWFused,  // the same with fused=True: the step needs no temporary
  kAdamW8bit,   // [BNB]: two int8 states + an fp32 absmax per 2048 elements per state
  kPagedAdamW,  // bitsandbytes paged AdamW: as kAdamW in fp32, in unified memory (may page out)
  kPagedAdamW8bit,
  kSgdMomentum,  // one state
  kSgd,          // no state
};

// Optimizer state bytes per trainable parameter, without a master copy. `state_bytes` is the
// dtype of the states of kAdamW / kSgdMomentum (4 for fp32, 2 for bf16 when the weights are bf16
// and there is no fp32 master copy, as plain torch.optim keeps states in the parameter's dtype).
double OptimizerStateBytesPerParam(Optimizer optimizer, double state_bytes);

// Per-GPU model states of training after [ZeRO] §5: weights `weight_bytes`, gradients
// `grad_bytes`, optimizer `optimizer_bytes` (master copy included) per trainable parameter, over
// `dp` data-parallel ranks. Stage 1 partitions the optimizer state, 2 also the gradients, 3 also
// the weights. `frozen_weight_bytes` (LoRA's base model) is partitioned at stage 3 only.
struct ModelStates {
  double weights = 0;
  double gradients = 0;
  double optimizer = 0;
};
ModelStates ZeroModelStates(double trainable_params, double weight_bytes, double grad_bytes,
                            double optimizer_bytes, int zero_stage, int dp);

// The bytes per parameter of mixed-precision Adam [ZeRO §3]: 2 + 2 + 12 = 16.
double MixedPrecisionAdamBytesPerParam();

// [DS2] estimate_zero2_model_states_mem_needs(total_params, num_gpus_per_node, num_nodes,
// cpu_offload, additional_buffer_factor): GPU = 2P + int(18P/N) without offload ("18 =
// 2_grads_16bit + 4_grads_32bit + 4_params_32bit + 8_optimizer_states_32bit"), 2P with it;
// CPU = P·4·gpus_per_node·buf without offload, P·max(4N, 16)·buf with it. N = nodes·gpus.
struct DeepSpeedEstimate {
  double gpu = 0;
  double cpu = 0;
};
DeepSpeedEstimate DeepSpeedZero2(double total_params, int gpus_per_node, int nodes,
                                 bool cpu_offload, double buffer_factor = 1.5);

// [DS3] estimate_zero3_model_states_mem_needs(total_params, largest_layer_params, gpus_per_node,
// nodes, cpu_offload, cpu_offload_params, zero_init, buffer_factor). L = largest layer.
// no offload: GPU 4L + int(18P/N); CPU (zero_init) 4L·gpus_per_node·buf, else 4P·gpus_per_node·buf
// optimizer offload: GPU 4L + int(2P/N); CPU 16P/nodes·buf (zero_init), else
//   P·max(4·gpus_per_node, 16/nodes)·buf
// params + optimizer offload: GPU 4L; CPU 18P/nodes·buf (zero_init), else
//   P·max(4·gpus_per_node, 18/nodes)·buf
DeepSpeedEstimate DeepSpeedZero3(double total_params, double largest_layer_params,
                                 int gpus_per_node, int nodes, bool cpu_offload,
                                 bool cpu_offload_params, bool zero_init,
                                 double buffer_factor = 1.5);

// ---- Parallelism ------------------------------------------------------------------------------

// Heads (or KV heads) one tensor-parallel rank holds: heads/tp when tp divides them; KV heads
// fewer than tp are replicated (vLLM, Megatron), so each rank holds max(1, kv/tp).
int HeadsPerRank(int heads, int tp);

// Layers of the fullest pipeline stage: ceil(layers / pp).
int LayersPerStage(int layers, int pp);

// ---- Activations ------------------------------------------------------------------------------

// [KORT] eq. (2): activations of one GPT layer (4h MLP, multi-head attention, dropout, 16-bit),
// no parallelism: s·b·h·(34 + 5·a·s/h) bytes.
double KorthikantiLayerBytes(double s, double b, double h, double a);
// [KORT] §4.2.2 with tensor and sequence parallelism t: s·b·h·(34/t + 5·a·s/(h·t)).
double KorthikantiLayerBytesTpSp(double s, double b, double h, double a, double t);
// [KORT] §5 selective recomputation (the attention-score part recomputed): 34·s·b·h.
double KorthikantiSelectiveLayerBytes(double s, double b, double h);
// [KORT] §5 full recomputation: only the layer input is kept, 2·s·b·h.
double CheckpointedLayerBytes(double s, double b, double h);

// The same accounting as [KORT] for the layer shapes of current models (own derivation, term by
// term as in [KORT] §4.1): 16-bit saved tensors of one layer for s tokens of b sequences.
//   norms: 2 inputs · 2sbh; QKV input 2sbh; Q 2·s·b·q_dim; K and V 2·s·b·kv_dim each;
//   scores (no FlashAttention): softmax output 2·a·s²·b, with dropout + mask a·s²·b + output
//   2·a·s²·b; attention output (o-proj input) 2·s·b·q_dim; MLP input 2sbh; MLP: non-gated
//   2·s·b·i (activation input) + 2·s·b·i (fc2 input), gated (SwiGLU) 3 · 2·s·b·i (gate, up,
//   product); dropout masks s·b·h after attention and after the MLP.
// With h=q_dim=kv_dim, i=4h, non-gated, dropout and no FlashAttention this is exactly [KORT]'s
// s·b·h·(34 + 5·a·s/h). `tp` divides the q/kv/i terms and the scores (Megatron TP, no SP).
//
// Two variations, for HF's T5 and for compiled models:
// - `softmax_bytes` 4 (T5: softmax(scores.float()).type_as(scores)): the saved softmax output
//   is fp32 and the 16-bit copy the next matmul reads (or the dropout's input) is 2 more bytes:
//   per score element softmax_bytes + (dropout ? 3 : 2), against [KORT]'s 2 + (dropout ? 3 : 0);
//   `mlp_dropout` (T5's dropout between the MLP's activation and its output projection) keeps a
//   1-byte mask of s·b·i.
// - `compiled` [COMPILE]: AOTAutograd's min-cut partitioner recomputes pointwise ops in the
//   backward pass instead of saving their outputs, so the MLP keeps the outputs of its input
//   projections only (gated: gate and up, 2 of the 3 s·b·i tensors; otherwise fc1's output,
//   1 of 2); the product (or the activation) is recomputed from them.
struct LayerShape {
  double hidden = 0;
  double q_dim = 0;   // heads · head_dim
  double kv_dim = 0;  // kv_heads · head_dim
  double heads = 0;
  double intermediate = 0;
  bool gated_mlp = false;
  bool dropout = false;
  bool flash_attention = false;
  double softmax_bytes = 2;
  bool mlp_dropout = false;
  bool compiled = false;
};
double LayerActivationBytes(const LayerShape& shape, double s, double b, int tp);

// The cross-attention of an encoder-decoder model's decoder layer (T5), saved for the backward
// pass, beyond LayerActivationBytes of the layer's self-attention and MLP at the decoder's
// s_dec tokens: its norm's input 2·s_dec·b·h, Q 2·s_dec·b·q_dim, K and V of the encoder's
// s_enc tokens 2·s_enc·b·kv_dim each, the scores of s_dec x s_enc per head (no FlashAttention;
// bytes as above), the attention output 2·s_dec·b·q_dim and, with dropout, a mask of s_dec·b·h.
// The encoder's output that K and V are computed from is one tensor for all layers and is not
// counted here. `tp` divides the q/kv terms and the scores.
double CrossAttentionActivationBytes(const LayerShape& shape, double s_dec, double s_enc, double b,
                                     int tp);

// ---- What coexists at the training peak ------------------------------------------------------
// A training step's peak is the largest of three moments, not the sum of everything
// (estimator.cc): the start of the backward pass (all saved activations and the loss), the end
// of the backward pass (all gradients, one layer recomputed) and the optimizer step. The terms:

// [TORCH] the loss at the start of the backward pass. cross_entropy is log_softmax + nll_loss
// on logits upcast to fp32 (torchtune's TransformerDecoder returns output(h).float(); HF's
// LlamaForCausalLM calls logits.float()): the fp32 logits the training loop still holds,
// log_softmax's saved output, nll_loss_backward's gradient of it and
// log_softmax_backward_data's gradient of the logits are alive together: 4 fp32 tensors of
// tokens x vocab, 16 bytes per logit. `tp` divides the vocabulary.
double LossBackwardPeakBytes(double tokens, double vocab, int tp);

// The fp32 logits a training loop keeps referenced until the step ends (torchtune's recipes hold
// `logits` through loss.backward() and optimizer.step()): 4 bytes per logit.
double HeldLogitsBytes(double tokens, double vocab, int tp);

// The loss by recipe, in bytes per logit (tokens x vocabulary / tp). `held`: the training loop
// keeps the logits referenced until the step ends (torchtune's recipes until mid-2024), or
// deletes them once the loss is computed (torchtune's since pull request #1390: "free logits
// otherwise it peaks backward memory"; HF's Trainer keeps only the loss).
// - kFp32: one cross_entropy on all logits upcast to fp32 (torchtune's output(h).float(), HF's
//   causal LMs). log_softmax saves its fp32 output; the backward pass adds nll_loss's and
//   log_softmax's fp32 gradients: 4 + 4 + 4, and 4 more when the fp32 logits are held: 16
//   (LossBackwardPeakBytes) and 4 held to the step's end (HeldLogitsBytes), or 12 and 0.
// - kChunked [TTCE]: torchtune's CEWithChunkedOutputLoss with N = num_output_chunks (8 in its
//   recipes). The model returns N chunks of 16-bit logits (output(chunk) for each chunk of h);
//   the loss upcasts one chunk at a time and cross_entropy saves the chunk's fp32 log_softmax
//   output. At the end of the forward pass the 16-bit logits (2), the saved fp32 outputs of all
//   chunks (4) and the last chunk's fp32 copy (4/N) are alive: 6 + 4/N; the backward pass of one
//   chunk adds nll_loss's and log_softmax's fp32 gradients (8/N) to the outputs still saved and,
//   when held, the 16-bit logits: 4 + 8/N (+ 2). The larger of the two; 2 held when held.
// - `compiled` [COMPILE][TTCE]: the loss compiled with its upcast (torchtune compiles
//   compute_cross_entropy, torchtitan its loss function) fuses the upcast, log_softmax and
//   nll_loss: no fp32 copy or log_softmax output is stored, the loss saves its input (and a
//   per-token statistic) and its backward writes the input's gradient in one kernel in the
//   input's dtype. kFp32: the fp32 logits it saved (4) + their gradient (4) = 8; kChunked: the
//   16-bit chunks (2) + one chunk's gradient (2/N). Held: the logits' 4 or 2 after it.
enum class LossKind { kFp32, kChunked };
struct LossBytes {
  double at_backward = 0;  // the most alive from the end of the forward pass to the loss's backward
  double held = 0;         // still alive at the end of the backward pass and at the step
};
LossBytes LossBytesPerLogit(LossKind kind, int chunks, bool compiled, bool held);

// [TORCH] torch.optim.Adam/AdamW's default multi-tensor step (_multi_tensor_adamw:
// exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)) allocates one more state's worth
// before the update: params x state bytes. Fused, 8-bit and paged steps update in place, SGD
// without weight decay too: 0.
double OptimizerStepTempBytes(Optimizer optimizer, double params, double state_bytes);

// [TTUNE] the optimizer step fused into the backward pass (torchtune's optimizer_in_bwd,
// register_optim_in_bwd_hooks; PyTorch's tutorial "How to save memory by fusing the optimizer
// step into the backward pass"): every parameter has its own optimizer, whose step() and
// zero_grad() run in the parameter's post-accumulate-grad hook, so a gradient is freed as soon as
// it is applied and no two parameters' gradients are alive together. The gradients held at any
// moment are bounded by those of the largest tensor: largest_tensor_params x grad bytes.
double InBackwardGradientBytes(double largest_tensor_params, double grad_bytes);

// [FSDP] FULL_SHARD with one unit per decoder layer and the root unit holding the embedding,
// final norm and head (torch/distributed/fsdp; torchtune wraps TransformerDecoderLayer): the
// root's unsharded flat parameter stays gathered from the forward through the backward pass
// (_post_forward_reshard does not free the root), one layer is gathered while it runs and the
// next is prefetched (limit_all_gathers, BACKWARD_PRE), and a trainable layer's unsharded
// gradient lives until its reduce-scatter, the root's until the end of the backward pass. The
// gathered copies are separate from the shards, which ZeroModelStates counts.
struct FsdpGathered {
  double forward_params = 0;   // root + two layers
  double backward_params = 0;  // root + two layers
  double backward_grads = 0;   // root + one layer (trainable only)
};
FsdpGathered FsdpGatheredBytes(double root_params, double layer_params, double param_bytes,
                               bool trainable);

// The gradients autograd holds while one layer's backward pass runs, beyond the layer's saved
// tensors: at the MLP's product, the gradient of the product and of its two factors (gated:
// 3 x 2·s·b·i bytes) or of fc2's input and fc1's output (2 x 2·s·b·i); `tp` divides i.
double LayerBackwardGradBytes(const LayerShape& shape, double s, double b, int tp);

// ---- LoRA / QLoRA -----------------------------------------------------------------------------

// [LORA] adapter parameters of rank r on a d_in×d_out matrix: r·(d_in + d_out).
double LoraAdapterParams(double d_in, double d_out, int rank);

// ---- KV cache and the vLLM budget -------------------------------------------------------------

// [VLLM] FullAttentionSpec.page_size_bytes: 2 (K and V) · block_size · num_kv_heads · head_size ·
// dtype bytes, for one layer on one GPU (num_kv_heads already divided by TP).
double KvPageBytes(int block_size, int kv_heads_per_gpu, int head_dim, double dtype_bytes);

// [VLLM] MLAAttentionSpec.page_size_bytes (multi-head latent attention, DeepSeek-V2/V3): one
// latent of kv_lora_rank plus the shared rotary key of qk_rope_head_dim per token, no separate
// K and V, and the same on every tensor-parallel rank (num_kv_heads is 1 under MLA):
// block_size · (kv_lora_rank + qk_rope_head_dim) · dtype bytes, for one layer.
double MlaKvPageBytes(int block_size, int kv_lora_rank, int qk_rope_head_dim, double dtype_bytes);

// [VLLM] SlidingWindowSpec.max_memory_usage_bytes / page_size: the blocks one sequence of a
// layer with a window of `window` tokens can hold at once. vLLM keeps the last window − 1
// computed tokens plus the newly scheduled ones, never more than max_model_len, and one block
// more because the window need not start at a block boundary:
// ceil(min(window − 1 + max_num_batched_tokens, max_model_len) / block_size) + 1.
int64_t SlidingWindowKvBlocks(int window, int max_num_batched_tokens, int max_model_len,
                              int block_size);

// [VLLM] FullAttentionSpec.max_memory_usage_bytes / page_size: ceil(max_model_len / block_size).
int64_t FullAttentionKvBlocks(int max_model_len, int block_size);

// KV bytes per token of one GPU: 2 · layers · kv_heads_per_gpu · head_dim · dtype bytes.
double KvBytesPerToken(int layers_per_gpu, int kv_heads_per_gpu, int head_dim, double dtype_bytes);

// [VLLM] the KV budget of one worker: total · gpu_memory_utilization − (weights + peak
// activation of the profile run + non-torch memory). Negative when nothing is left.
double VllmKvBudget(double total_gpu_bytes, double gpu_memory_utilization, double weight_bytes,
                    double activation_peak_bytes, double non_torch_bytes);

// [VLLM] the number of KV blocks the budget holds: floor(budget / (page bytes · layers)), and the
// KV capacity in tokens: blocks · block_size.
int64_t VllmKvBlocks(double kv_budget_bytes, double page_bytes, int layers_per_gpu);
int64_t VllmKvTokens(double kv_budget_bytes, double page_bytes, int layers_per_gpu, int block_size);

// ---- Fixed costs ------------------------------------------------------------------------------

// The CUDA context and module images a PyTorch process holds outside its allocator. Measured
// values are 300-600 MiB on A100/H100 with lazy module loading; 512 MiB is assumed.
double CudaContextBytes();

// Framework and workspace memory: cuBLAS/cuDNN workspaces and NCCL buffers (fixed 256 MiB per
// process, 512 MiB with more than one GPU) plus the caching allocator's fragmentation,
// assumed 5% of the dynamic memory (activations) it serves.
double FrameworkOverheadBytes(double dynamic_bytes, bool multi_gpu);

}  // namespace vgpu::estimate
