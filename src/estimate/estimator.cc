#include "estimate/estimator.h"

#include "estimate/vllm_load.h"
#include "mig/profiles.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace vgpu::estimate {

namespace {

std::string Fmt(const char* fmt, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, fmt, a, b, c);
  return buf;
}

bool Training(Mode m) { return m == Mode::kFull || m == Mode::kLora || m == Mode::kQlora; }

int EffectiveMaxModelLen(const Inputs& in) {
  return in.max_model_len > 0 ? in.max_model_len : in.arch.max_positions;
}
int EffectiveSeqLen(const Inputs& in) {
  return in.seq_len > 0 ? in.seq_len : in.arch.max_positions;
}

LayerShape ShapeOf(const Architecture& a, bool flash, bool compiled = false) {
  LayerShape s;
  s.hidden = a.hidden;
  if (a.Mla()) {
    // The up-projected per-head Q/K (nope + rope) and V (v_head_dim); K and V averaged.
    const double qk = double(a.qk_nope_head_dim) + a.qk_rope_head_dim;
    s.q_dim = a.heads * qk;
    s.kv_dim = a.heads * (qk + a.v_head_dim) / 2;
  } else {
    s.q_dim = double(a.heads) * a.HeadDim();
    s.kv_dim = double(a.kv_heads) * a.HeadDim();
  }
  s.heads = a.heads;
  s.intermediate =
      a.experts > 0 ? double(a.expert_intermediate) * a.experts_per_token : double(a.intermediate);
  s.gated_mlp = a.gated_mlp;
  // Current decoder-only recipes train without dropout; T5 keeps its dropout_rate.
  s.dropout = a.dropout;
  s.flash_attention = flash;
  if (a.EncoderDecoder()) {
    s.softmax_bytes = 4;  // HF T5: softmax(scores.float()).type_as(scores)
    s.mlp_dropout = true;
  }
  s.compiled = compiled;
  return s;
}

bool CompilesModel(Compile c) { return c == Compile::kModel || c == Compile::kAll; }
bool CompilesLoss(Compile c) { return c == Compile::kLoss || c == Compile::kAll; }

// The KV page of one layer on one GPU (vLLM's block of block_size tokens): MLA's latent, or K
// and V of the KV heads this rank holds.
double LayerPageBytes(const Inputs& in) {
  const Architecture& a = in.arch;
  if (a.Mla()) {
    return MlaKvPageBytes(in.block_size, a.kv_lora_rank, a.qk_rope_head_dim, in.kv_dtype_bytes);
  }
  return KvPageBytes(in.block_size, HeadsPerRank(a.kv_heads, in.tp), a.HeadDim(),
                     in.kv_dtype_bytes);
}

// KV bytes one token adds to one layer in a Hugging Face style cache (infer mode): K and V of
// the rank's KV heads; for MLA the up-projected per-head keys and values (HF's DeepSeek code
// caches those, not the latent).
double LayerTokenBytes(const Inputs& in) {
  const Architecture& a = in.arch;
  if (a.Mla()) {
    const double heads = double(a.heads) / std::max(in.tp, 1);
    return heads * (double(a.qk_nope_head_dim) + a.qk_rope_head_dim + a.v_head_dim) *
           in.kv_dtype_bytes;
  }
  return KvBytesPerToken(1, HeadsPerRank(a.kv_heads, in.tp), a.HeadDim(), in.kv_dtype_bytes);
}

// Sliding and global layers of the pipeline stage with the most global layers.
void StageLayerKinds(const Inputs& in, int* global, int* sliding) {
  const int per_stage = LayersPerStage(in.arch.layers, in.pp);
  *global = -1;
  *sliding = 0;
  for (int first = 0; first < in.arch.layers; first += per_stage) {
    int g = 0, w = 0;
    for (int i = first; i < std::min(first + per_stage, in.arch.layers); ++i) {
      (in.arch.SlidingLayer(i) ? w : g) += 1;
    }
    if (g > *global) {
      *global = g;
      *sliding = w;
    }
  }
}

// The transient activations of one no-grad forward of `tokens` tokens through one layer: the
// residual stream and the norm output, plus the larger of the attention projections and the
// MLP's intermediate tensors (all 16-bit), divided by tp where Megatron splits them.
double ForwardTransientBytes(const Architecture& a, double tokens, int tp) {
  const LayerShape s = ShapeOf(a, true);
  const double t = std::max(tp, 1);
  const double attention = (2 * s.q_dim + 2 * s.kv_dim) / t;
  const double mlp = (s.gated_mlp ? 3 : 2) * s.intermediate / t;
  return 2 * tokens * (2 * s.hidden + std::max(attention, mlp));
}

// Eager attention's score matrices of one layer in a no-grad forward (Hugging Face's eager
// attention and T5 upcast the softmax): the 16-bit scores, the fp32 softmax and its 16-bit copy,
// 8 bytes per element of heads x queries x keys x batch.
double EagerScoreBytes(const Architecture& a, double queries, double keys, double batch, int tp) {
  return 8 * double(a.heads) / std::max(tp, 1) * queries * keys * batch;
}

// Weights of the fullest pipeline stage on one TP rank. The first stage holds the embedding, the
// last the head and final norm; with pp = 1 both.
void StageWeights(const Inputs& in, const ParamCount& p, double* linear, double* other) {
  const int layers = LayersPerStage(in.arch.layers, in.pp);
  const double t = std::max(in.tp, 1);
  const double final_norm = (in.arch.layer_norm ? 2 : 1) * double(in.arch.hidden);
  // One stage holds all layers exactly; of several, the fullest is bounded by its layer count
  // times the largest layer.
  const double blocks_linear = in.pp > 1 ? layers * p.per_layer_linear / t : p.linear / t;
  const double blocks_other = in.pp > 1 ? layers * p.per_layer_other / t
                                        : (p.other - p.embedding - p.head - final_norm) / t;
  const double ends =
      in.pp > 1 ? std::max(p.embedding, p.head + final_norm) : p.embedding + p.head + final_norm;
  *linear = blocks_linear;
  *other = blocks_other + ends / t;
}

// Adapter parameters of one attention: q and v, or all four projections.
double LoraAttentionParams(const Inputs& in) {
  const Architecture& a = in.arch;
  const double h = a.hidden, q = double(a.heads) * a.HeadDim(),
               kv = double(a.kv_heads) * a.HeadDim();
  double p = LoraAdapterParams(h, q, in.lora_rank) + LoraAdapterParams(h, kv, in.lora_rank);
  if (in.lora_all_linear) {
    p += LoraAdapterParams(h, kv, in.lora_rank) + LoraAdapterParams(q, h, in.lora_rank);
  }
  return p;
}

// Adapter parameters of one layer: its attention (a decoder layer of an encoder-decoder model
// has two: self- and cross-attention) and, on every linear layer, the MLP's matrices.
double LoraParamsPerLayer(const Inputs& in, bool cross_attention = false) {
  const Architecture& a = in.arch;
  double p = LoraAttentionParams(in) * (cross_attention ? 2 : 1);
  if (in.lora_all_linear) {
    const double i = a.experts > 0 ? a.expert_intermediate : a.intermediate;
    const double experts = a.experts > 0 ? a.experts : 1;
    p += experts * (a.gated_mlp ? 3 : 2) * LoraAdapterParams(a.hidden, i, in.lora_rank);
  }
  return p;
}

// Adapter parameters of every layer of a stage: the encoder's and the decoder's layers of an
// encoder-decoder model.
double LoraParams(const Inputs& in, int decoder_layers) {
  return LoraParamsPerLayer(in) * in.arch.encoder_layers +
         LoraParamsPerLayer(in, in.arch.EncoderDecoder()) * decoder_layers;
}

}  // namespace

std::string ModeName(Mode m) {
  switch (m) {
    case Mode::kServe:
      return "serve";
    case Mode::kInfer:
      return "infer";
    case Mode::kFull:
      return "full";
    case Mode::kLora:
      return "lora";
    case Mode::kQlora:
      return "qlora";
  }
  return "?";
}

std::string FormatName(WeightFormat f) {
  switch (f) {
    case WeightFormat::kFp32:
      return "fp32";
    case WeightFormat::kBf16:
      return "bf16";
    case WeightFormat::kFp8:
      return "fp8";
    case WeightFormat::kInt8:
      return "int8";
    case WeightFormat::kInt4Group128:
      return "int4";
    case WeightFormat::kNf4:
      return "nf4";
  }
  return "?";
}

std::string CompileName(Compile c) {
  switch (c) {
    case Compile::kNone:
      return "none";
    case Compile::kModel:
      return "model";
    case Compile::kLoss:
      return "loss";
    case Compile::kAll:
      return "all";
  }
  return "?";
}

const char* MomentKey(int moment) {
  static constexpr const char* kKeys[] = {"start_of_backward", "end_of_backward", "optimizer_step"};
  return moment >= 0 && moment < 3 ? kKeys[moment] : "";
}

Status Validate(const Inputs& in) {
  const Architecture& a = in.arch;
  auto bad = [](std::string m) { return Status::InvalidArgument(std::move(m)); };
  if (Status shape = CheckShape(a); !shape.ok()) return shape;
  if (a.layers <= 0 || a.hidden <= 0 || a.heads <= 0 || a.kv_heads <= 0 || a.vocab <= 0) {
    return bad("model " + a.name +
               ": layers, hidden size, heads, kv heads and vocabulary must "
               "all be positive");
  }
  if (a.heads % a.kv_heads != 0) {
    return bad("model " + a.name + ": " + std::to_string(a.heads) +
               " attention heads are not a "
               "multiple of " +
               std::to_string(a.kv_heads) + " kv heads");
  }
  if (in.tp < 1 || in.pp < 1 || in.dp < 1) return bad("parallel sizes must be at least 1");
  if (a.heads % in.tp != 0) {
    return bad("tensor parallel size " + std::to_string(in.tp) + " does not divide the " +
               std::to_string(a.heads) + " attention heads of " + a.name);
  }
  if (a.kv_heads % in.tp != 0 && in.tp % a.kv_heads != 0) {
    return bad("tensor parallel size " + std::to_string(in.tp) + " and the " +
               std::to_string(a.kv_heads) + " kv heads of " + a.name +
               ": one must divide the other");
  }
  if (in.pp > a.layers) {
    return bad("pipeline parallel size " + std::to_string(in.pp) + " is more than the " +
               std::to_string(a.layers) + " layers of " + a.name);
  }
  if (in.zero_stage < 0 || in.zero_stage > 3) return bad("ZeRO stage must be 0, 1, 2 or 3");
  if (in.zero_stage > 0 && !Training(in.mode)) return bad("ZeRO applies to training modes only");
  if (in.dp > 1 && !Training(in.mode)) {
    return bad("data parallel size applies to training; serve replicas are separate instances");
  }
  if (a.EncoderDecoder()) {
    if (in.mode == Mode::kServe) {
      return bad("model " + a.name +
                 " is an encoder-decoder model, which vLLM does not serve: give --mode infer "
                 "(Hugging Face generate) or a training mode");
    }
    if (in.pp > 1) {
      return bad("pipeline parallelism is not modelled for the encoder-decoder model " + a.name);
    }
  } else if (in.target_len > 0) {
    return bad("--target-len applies to encoder-decoder models (t5, mt0); " + a.name +
               " is decoder-only");
  }
  if (!Training(in.mode) && (in.loss != LossKind::kFp32 || in.compile != Compile::kNone)) {
    return bad("--loss and --compile apply to training (--mode full, lora or qlora)");
  }
  if (in.loss_chunks < 1) return bad("--loss-chunks must be at least 1");
  if (in.batch < 1) return bad("batch size must be at least 1");
  if (in.seq_len < 0 || in.max_model_len < 0 || in.target_len < 0) {
    return bad("sequence length must be positive");
  }
  // T5's relative positions do not bound the length; its max_positions is the default only.
  const int max_len = a.EncoderDecoder() ? 0 : a.max_positions;
  if (max_len > 0 && in.seq_len > max_len) {
    return bad("sequence length " + std::to_string(in.seq_len) + " is beyond the maximum of " +
               std::to_string(max_len) + " of " + a.name);
  }
  if (max_len > 0 && in.max_model_len > max_len) {
    return bad("max model length " + std::to_string(in.max_model_len) +
               " is beyond the maximum "
               "of " +
               std::to_string(max_len) + " of " + a.name);
  }
  if (in.mode == Mode::kServe && EffectiveMaxModelLen(in) <= 0) {
    return bad("model " + a.name + " gives no maximum length: give --max-model-len");
  }
  if (in.mode != Mode::kServe && EffectiveSeqLen(in) <= 0) {
    return bad("model " + a.name + " gives no maximum length: give --seq-len");
  }
  if (!(in.gpu_memory_utilization > 0 && in.gpu_memory_utilization <= 1)) {
    return bad("gpu_memory_utilization must be in (0, 1]");
  }
  if (in.concurrent < 1) return bad("concurrent sequences must be at least 1");
  if (in.block_size < 1 || in.max_num_batched_tokens < 1 || in.max_num_seqs < 1) {
    return bad("block size, max-num-batched-tokens and max-num-seqs must be at least 1");
  }
  if ((in.mode == Mode::kLora || in.mode == Mode::kQlora) && in.lora_rank < 1) {
    return bad("LoRA rank must be at least 1");
  }
  if (in.mode == Mode::kQlora && in.weights != WeightFormat::kNf4 &&
      in.weights != WeightFormat::kBf16) {
    return bad("qlora keeps the base model in nf4; --dtype " + FormatName(in.weights) +
               " does not apply");
  }
  if (in.mode == Mode::kFull && in.weights != WeightFormat::kBf16 &&
      in.weights != WeightFormat::kFp32) {
    return bad("full fine-tuning trains bf16/fp16 or fp32 weights, not " + FormatName(in.weights) +
               (in.weights_source.empty()
                    ? std::string(" (quantised weights are trained with qlora)")
                    : " (the checkpoint's format, from " + in.weights_source +
                          "; give --dtype bf16 for a 16-bit copy, or train adapters with lora)"));
  }
  if (in.cpu_offload && !Training(in.mode)) return bad("--cpu-offload applies to training");
  if (in.optimizer_in_backward && !Training(in.mode)) {
    return bad("--optimizer-in-backward applies to training");
  }
  if (!(in.margin >= 0 && in.margin < 10)) return bad("margin must be in [0, 10)");
  if (in.gpu && in.slice_memory > in.gpu->memory) {
    return bad("a slice of " + Fmt("%.2f GiB", in.slice_memory / kGiB) + " is larger than the " +
               Fmt("%.2f GiB", in.gpu->memory / kGiB) + " of " + in.gpu->name);
  }
  return Status();
}

Estimate Compute(const Inputs& in) {
  Estimate e;
  e.inputs = in;
  const Architecture& a = in.arch;
  e.params = ParamCounts(a);
  e.gpus = in.dp * in.tp * in.pp;
  auto& as = e.assumptions;
  Breakdown& b = e.per_gpu;
  const int layers = LayersPerStage(a.layers, in.pp);

  double linear = 0, other = 0;
  StageWeights(in, e.params, &linear, &other);
  const WeightFormat linear_format = in.mode == Mode::kQlora ? WeightFormat::kNf4 : in.weights;
  const WeightFormat other_format =
      in.weights == WeightFormat::kFp32 ? WeightFormat::kFp32 : WeightFormat::kBf16;
  const double weight_bytes = WeightBytes(linear, other, linear_format, other_format);
  as.push_back(
      Fmt("parameters: %.4g B in total (counted from the architecture)", e.params.Total() / 1e9));
  as.push_back(
      "weights: block linear layers in " + FormatName(linear_format) +
      ", embeddings/head/norms in " + FormatName(other_format) +
      (in.weights_source.empty() ? "" : " (the checkpoint's format: " + in.weights_source + ")") +
      (in.tp > 1 || in.pp > 1 ? "; split over tensor and pipeline ranks (fullest stage)" : ""));
  if (a.EncoderDecoder()) {
    as.push_back(
        Fmt("encoder-decoder: %.0f encoder and %.0f decoder layers", a.encoder_layers, a.layers) +
        (in.mode == Mode::kServe
             ? std::string()
             : Fmt(", %.0f encoder and %.0f decoder tokens per "
                   "sequence",
                   EffectiveSeqLen(in), in.target_len > 0 ? in.target_len : EffectiveSeqLen(in))) +
        (in.flash_attention ? "" : "; attention scores stored (T5's position bias)"));
  }

  if (in.mode == Mode::kServe) {
    // What vLLM logs as its weights: the allocator's blocks of the tensors in vLLM's order,
    // with the padded vocabulary and the rotary cache (vllm_load.h).
    const VllmLoad load = VllmLoadedWeights(a, in.tp, in.pp, linear_format, other_format);
    b.weights = double(load.allocated_bytes);
    as.push_back(Fmt("vLLM weights: %.4f GiB of tensors (rotary cache %.1f MiB, vocabulary "
                     "padding %.1f MiB)",
                     load.tensor_bytes / kGiB, load.rotary_bytes / kMiB,
                     load.padding_bytes / kMiB) +
                 Fmt(" counted as %.4f GiB of caching-allocator blocks", b.weights / kGiB));
    b.activations = ForwardTransientBytes(a, in.max_num_batched_tokens, in.tp) +
                    double(in.max_num_seqs) * a.vocab / in.tp * 4 * 2;
    b.framework = in.non_torch_bytes;
    b.cuda_context = CudaContextBytes();
    ServeResult s;
    s.page_bytes = LayerPageBytes(in);
    s.bytes_per_token = s.page_bytes / in.block_size * layers;
    s.needed_tokens = int64_t(in.concurrent) * EffectiveMaxModelLen(in);
    int global = 0, sliding = 0;
    StageLayerKinds(in, &global, &sliding);
    const int max_len = EffectiveMaxModelLen(in);
    s.sequence_bytes =
        s.page_bytes *
        (double(global) * FullAttentionKvBlocks(max_len, in.block_size) +
         double(sliding) * SlidingWindowKvBlocks(a.sliding_window, in.max_num_batched_tokens,
                                                 max_len, in.block_size));
    b.kv_cache = s.sequence_bytes * in.concurrent;
    e.required =
        std::max((b.weights + b.activations + b.framework + b.kv_cache) / in.gpu_memory_utilization,
                 b.cuda_context / std::max(1e-9, 1 - in.gpu_memory_utilization));
    e.required = std::max(e.required, b.Total());
    e.serve = s;
    as.push_back(
        Fmt("vLLM: gpu_memory_utilization %.2f of what the GPU or slice reports; "
            "activation peak profiled at max_num_batched_tokens %.0f and max_num_seqs %.0f",
            in.gpu_memory_utilization, in.max_num_batched_tokens, in.max_num_seqs));
    as.push_back(a.Mla() ? Fmt("KV cache: %.0f B per token per GPU (MLA: layers x (kv_lora_rank + "
                               "qk_rope_head_dim) x %.0f B, the same on every rank), blocks of "
                               "%.0f tokens",
                               s.bytes_per_token, in.kv_dtype_bytes, in.block_size)
                         : Fmt("KV cache: %.0f B per token per GPU (2 x layers x kv heads x head "
                               "dim x %.0f B), blocks of %.0f tokens",
                               s.bytes_per_token, in.kv_dtype_bytes, in.block_size));
    if (sliding > 0) {
      as.push_back(Fmt("sliding window of %.0f tokens on %.0f layers: a sequence keeps at most "
                       "window - 1 + max_num_batched_tokens tokens there",
                       a.sliding_window, sliding) +
                   Fmt(" (%.0f global layers)", global));
    }
    as.push_back(Fmt("non-torch memory %.2f GiB; CUDA context %.2f GiB outside the budget",
                     in.non_torch_bytes / kGiB, b.cuda_context / kGiB));
    if (in.slice_memory > 0) {
      e.serve = ServeOn(e, in.slice_memory);
    } else if (in.gpu) {
      e.serve = ServeOn(e, in.gpu->memory);
    }
    return e;
  }

  const double s = EffectiveSeqLen(in);
  const double batch = in.batch;
  if (in.mode == Mode::kInfer) {
    b.weights = weight_bytes;
    int global = 0, sliding = 0;
    StageLayerKinds(in, &global, &sliding);
    const double window_tokens = a.sliding_window > 0 ? std::min<double>(s, a.sliding_window) : s;
    if (a.EncoderDecoder()) {
      // Each decoder layer caches its self-attention's K and V of the decoder's tokens and its
      // cross-attention's K and V of the encoder's tokens.
      const double s_dec = in.target_len > 0 ? in.target_len : s;
      b.kv_cache = LayerTokenBytes(in) * batch * layers * (s_dec + s);
    } else {
      b.kv_cache = LayerTokenBytes(in) * batch * (global * s + sliding * window_tokens);
    }
    b.activations = ForwardTransientBytes(a, s * batch, in.tp) + batch * a.vocab * 4.0 / in.tp;
    if (!in.flash_attention) b.activations += EagerScoreBytes(a, s, s, batch, in.tp);
    b.framework = FrameworkOverheadBytes(b.activations + b.kv_cache, e.gpus > 1);
    b.cuda_context = CudaContextBytes();
    e.required = b.Total();
    as.push_back(
        "infer: KV cache of batch x seq tokens, one layer's transient activations at "
        "prefill, logits of the last token only");
    return e;
  }

  // Training.
  const bool adapters = in.mode == Mode::kLora || in.mode == Mode::kQlora;
  const double param_bytes = in.weights == WeightFormat::kFp32 ? 4 : 2;
  const bool master = in.precision == Precision::kMixed && param_bytes == 2;
  const double state_bytes = master ? 4 : param_bytes;
  const double optimizer_bytes =
      OptimizerStateBytesPerParam(in.optimizer, state_bytes) + (master ? 4 : 0);
  const bool paged =
      in.optimizer == Optimizer::kPagedAdamW || in.optimizer == Optimizer::kPagedAdamW8bit;
  double trainable = 0;
  if (adapters) {
    trainable = LoraParams(in, layers) / in.tp;
    e.trainable_params = LoraParams(in, a.layers);
  } else {
    trainable = linear + other;
    e.trainable_params = e.params.Total();
  }
  ModelStates m =
      ZeroModelStates(trainable, param_bytes, param_bytes, optimizer_bytes, in.zero_stage, in.dp);
  if (adapters) {
    const double frozen = weight_bytes / (in.zero_stage >= 3 ? in.dp : 1);
    m.weights += frozen;
  }
  if (in.cpu_offload) {
    e.host_bytes += m.optimizer;
    m.optimizer = 0;
    if (in.zero_stage >= 3) {
      const double layer = (e.params.per_layer_linear + e.params.per_layer_other) / in.tp;
      const double on_gpu = 2 * layer * param_bytes;  // the layer in use and the next, prefetched
      e.host_bytes += std::max(0.0, m.weights - on_gpu);
      m.weights = std::min(m.weights, on_gpu);
    }
    as.push_back(
        "CPU offload: optimizer state" +
        std::string(in.zero_stage >= 3 ? " and weights (two layers stay on the GPU)" : "") +
        " in host memory");
  }
  if (paged && !in.cpu_offload) {
    e.host_bytes += m.optimizer;
    as.push_back(
        Fmt("paged optimizer: its %.2f GiB of state are in unified memory and page out "
            "to the host under pressure; not counted in the request",
            m.optimizer / kGiB));
    m.optimizer = 0;
  }
  // FSDP / ZeRO-3 gathers units while they run (FsdpGatheredBytes).
  FsdpGathered gathered;
  if (in.zero_stage >= 3 && in.dp > 1 && !in.cpu_offload) {
    const double t = std::max(in.tp, 1);
    const double root = (e.params.embedding + e.params.head + a.hidden) / t;
    const double layer = (e.params.per_layer_linear + e.params.per_layer_other) / t;
    const double bytes =
        adapters ? weight_bytes / std::max(e.params.Total() / t, 1.0) : param_bytes;
    gathered = FsdpGatheredBytes(root, layer, bytes, !adapters);
    as.push_back(Fmt("FSDP full sharding: the root unit (embedding, head: %.4g M parameters) stays "
                     "gathered through forward and backward, one layer of %.4g M runs gathered "
                     "with the next prefetched",
                     root / 1e6, layer / 1e6) +
                 (adapters ? "" : "; their unsharded gradients live until reduce-scatter"));
  }

  // Activations: the layers' saved tensors (all, or only the checkpointed inputs plus the one
  // layer recomputed at a time in the backward pass) and the loss. A compiled model saves less
  // between a layer's forward and backward passes; a recomputed layer is counted as eager.
  // Encoder-decoder: the encoder's layers at s tokens, the decoder's at target_len with their
  // cross-attention, and the encoder's output that every cross-attention reads; the backward
  // pass ends in the encoder's first layer; the loss is over the decoder's tokens.
  const bool ckpt = in.checkpointing == Checkpointing::kFull;
  const LayerShape shape = ShapeOf(a, in.flash_attention);
  const LayerShape kept = ShapeOf(a, in.flash_attention, CompilesModel(in.compile));
  const double s_dec = a.EncoderDecoder() && in.target_len > 0 ? in.target_len : s;
  // The layer that ends the backward pass (the first), eager.
  const double one_layer = LayerActivationBytes(shape, s, batch, in.tp);
  const double checkpoint = CheckpointedLayerBytes(s, batch, a.hidden);
  double saved = 0;
  if (a.EncoderDecoder()) {
    const double enc = ckpt ? checkpoint : LayerActivationBytes(kept, s, batch, in.tp);
    const double dec = ckpt ? CheckpointedLayerBytes(s_dec, batch, a.hidden)
                            : LayerActivationBytes(kept, s_dec, batch, in.tp) +
                                  CrossAttentionActivationBytes(kept, s_dec, s, batch, in.tp);
    saved = a.encoder_layers * enc + layers * dec + 2 * s * batch * a.hidden;
  } else {
    saved = layers * (ckpt ? checkpoint : LayerActivationBytes(kept, s, batch, in.tp));
  }
  const double tokens = s_dec * batch;
  const bool logits_held = in.logits_held.value_or(in.loss == LossKind::kFp32);
  const LossBytes per_logit =
      LossBytesPerLogit(in.loss, in.loss_chunks, CompilesLoss(in.compile), logits_held);
  const double logits = tokens * a.vocab / std::max(in.tp, 1);
  const double loss = logits * per_logit.at_backward;
  const double held = logits * per_logit.held;
  const double step_temp =
      in.cpu_offload ? 0
                     : OptimizerStepTempBytes(
                           in.optimizer, trainable / (in.zero_stage >= 1 ? in.dp : 1), state_bytes);

  // With the step fused into the backward pass (InBackwardGradientBytes) one tensor's gradient
  // is alive at a time, and its step's temporary; no gradients remain for a separate step.
  const bool in_backward = in.optimizer_in_backward;
  double end_gradients = m.gradients, end_step_temp = 0;
  if (in_backward) {
    const double grad_div = in.zero_stage >= 2 ? in.dp : 1;
    const double largest = e.params.largest_tensor / std::max(in.tp, 1);
    end_gradients = std::min(m.gradients, InBackwardGradientBytes(largest, param_bytes) / grad_div);
    end_step_temp = in.cpu_offload ? 0
                                   : OptimizerStepTempBytes(in.optimizer,
                                                            std::min(trainable, largest) /
                                                                (in.zero_stage >= 1 ? in.dp : 1),
                                                            state_bytes);
  }

  // The three moments of a step; the peak is the largest.
  struct Moment {
    const char* name;
    double weights, gradients, optimizer, activations;
    double Sum() const { return weights + gradients + optimizer + activations; }
  };
  const Moment moments[] = {
      {"the start of the backward pass (saved activations and the loss)",
       m.weights + gathered.forward_params, 0, m.optimizer, saved + loss},
      {in_backward ? "the end of the backward pass (one tensor's gradient being applied, the first "
                     "layer recomputed)"
                   : "the end of the backward pass (all gradients, the first layer recomputed)",
       m.weights + gathered.backward_params, end_gradients + gathered.backward_grads,
       m.optimizer + end_step_temp,
       held + (ckpt ? checkpoint + one_layer : LayerActivationBytes(kept, s, batch, in.tp)) +
           LayerBackwardGradBytes(shape, s, batch, in.tp)},
      {in_backward ? "the end of the step (the optimizer ran in the backward pass)"
                   : "the optimizer step",
       m.weights, in_backward ? 0 : m.gradients, m.optimizer + (in_backward ? 0 : step_temp), held},
  };
  e.states = m;
  // With the step in the backward pass, no more than one tensor's gradient is ever held.
  if (in_backward) e.states.gradients = end_gradients;
  e.saved_activations = saved;
  for (size_t i = 0; i < 3; ++i) e.moments[i] = moments[i].Sum();
  const Moment* peak = &moments[0];
  for (const Moment& mo : moments) {
    if (mo.Sum() > peak->Sum()) peak = &mo;
  }
  e.peak_moment = int(peak - moments);
  e.peak_name = peak->name;
  b.weights = peak->weights;
  b.gradients = peak->gradients;
  b.optimizer = peak->optimizer;
  b.activations = peak->activations;
  e.allocated_peak = peak->Sum();
  b.framework = FrameworkOverheadBytes(b.activations, e.gpus > 1);
  b.cuda_context = CudaContextBytes();
  e.required = b.Total();
  as.push_back(std::string("peak at ") + peak->name +
               Fmt("; the three moments: %.2f, %.2f, %.2f GiB", moments[0].Sum() / kGiB,
                   moments[1].Sum() / kGiB, moments[2].Sum() / kGiB));
  if (in.loss == LossKind::kFp32) {
    as.push_back(Fmt("loss: one cross-entropy on fp32 logits of %.0f tokens x the vocabulary, "
                     "%.0f B per logit at the start of the backward pass, ",
                     tokens, per_logit.at_backward) +
                 Fmt("%.0f B held until the step ends", per_logit.held) +
                 (CompilesLoss(in.compile) ? " (compiled with its upcast)" : ""));
  } else {
    as.push_back(Fmt("loss: torchtune's chunked cross-entropy, %.0f chunks of 16-bit logits of "
                     "%.0f tokens x the vocabulary, ",
                     in.loss_chunks, tokens) +
                 Fmt("%.3g B per logit at the start of the backward pass, %.0f B held after it",
                     per_logit.at_backward, per_logit.held) +
                 (CompilesLoss(in.compile) ? " (compiled with its upcast)" : ""));
  }
  if (CompilesModel(in.compile)) {
    as.push_back(
        std::string("torch.compile on the model: the MLPs keep their input projections' outputs "
                    "and recompute the rest in the backward pass") +
        (ckpt ? "; with full checkpointing only the layer inputs are kept, so no change" : ""));
  }
  if (in_backward) {
    as.push_back(
        Fmt("optimizer in the backward pass: each gradient is freed once applied; at most one "
            "tensor's, %.2f GiB, is alive",
            end_gradients / kGiB));
  } else if (step_temp > 0) {
    as.push_back(
        Fmt("optimizer step: torch's foreach AdamW allocates %.2f GiB more (one "
            "state); adamw-fused does not",
            step_temp / kGiB));
  }
  as.push_back(std::string(master ? "mixed precision: 16-bit weights and gradients, fp32 master "
                                    "weights and optimizer states"
                                  : "pure precision: weights, gradients and optimizer states in "
                                    "the weights' dtype") +
               Fmt(" (%.4g B of optimizer state per trainable parameter)", optimizer_bytes));
  if (in.zero_stage > 0 || in.dp > 1) {
    as.push_back(Fmt("ZeRO stage %.0f over %.0f data-parallel ranks", in.zero_stage, in.dp));
  }
  if (adapters) {
    as.push_back(Fmt("LoRA rank %.0f on ", in.lora_rank) +
                 std::string(in.lora_all_linear ? "every linear layer" : "q and v") +
                 Fmt(": %.4g M trainable parameters", e.trainable_params / 1e6));
  }
  as.push_back(std::string("activations: ") +
               (in.checkpointing == Checkpointing::kFull
                    ? "full checkpointing (2·s·b·h per layer + one layer recomputed)"
                    : "no checkpointing") +
               (in.flash_attention ? ", FlashAttention (no s² score term)"
                                   : ", attention scores stored (a·s²·b terms)") +
               ", loss on fp32 logits; no dropout");
  as.push_back(
      "framework: 256 MiB of workspaces (512 MiB with several GPUs) + 5% allocator "
      "fragmentation of the activations; CUDA context 512 MiB");
  return e;
}

ServeResult ServeOn(const Estimate& e, double total_bytes) {
  ServeResult s = e.serve.value_or(ServeResult{});
  const Inputs& in = e.inputs;
  const int layers = LayersPerStage(in.arch.layers, in.pp);
  s.budget = VllmKvBudget(total_bytes, in.gpu_memory_utilization, e.per_gpu.weights,
                          e.per_gpu.activations, e.per_gpu.framework);
  s.capacity_tokens = VllmKvTokens(s.budget, s.page_bytes, layers, in.block_size);
  const int max_len = EffectiveMaxModelLen(in);
  if (s.budget <= 0) {
    s.starts = false;
    s.why_not = Fmt("no memory left for the KV cache (%.2f GiB over the budget)", -s.budget / kGiB);
  } else if (s.budget < s.sequence_bytes) {
    // vLLM's check_enough_kv_cache_memory: one max_model_len sequence must fit.
    s.starts = false;
    s.why_not = Fmt("max model length %.0f needs %.2f GiB of KV cache, more than the ", max_len,
                    s.sequence_bytes / kGiB) +
                Fmt("%.2f GiB budget (%.0f tokens)", s.budget / kGiB, double(s.capacity_tokens));
  } else {
    s.starts = true;
  }
  return s;
}

bool Fits(const Estimate& e, const Placement& p) {
  if (!p.gpu || !p.fits_gpu) return false;
  if (p.fits_slice && !*p.fits_slice) return false;
  const bool placed_serve = e.serve && (e.inputs.gpu || e.inputs.slice_memory > 0);
  return !placed_serve || e.serve->starts;
}

Placement Place(const Estimate& e) {
  Placement p;
  p.request = std::ceil(e.required * (1 + e.inputs.margin) / kMiB) * kMiB;
  if (e.inputs.slice_memory > 0) p.fits_slice = p.request <= e.inputs.slice_memory;
  if (e.inputs.gpu) {
    p.gpu = e.inputs.gpu;
  } else {
    for (const GpuModel& g : KnownGpus()) {
      if (g.memory >= p.request && (!p.gpu || g.memory < p.gpu->memory)) p.gpu = g;
    }
  }
  if (!p.gpu) {
    p.why = Fmt("%.2f GiB per GPU is more than any known GPU holds (largest %.2f GiB)",
                p.request / kGiB, LargestGpuMemory() / kGiB);
    return p;
  }
  p.fits_gpu = p.request <= p.gpu->memory;
  if (!p.fits_gpu) {
    p.why = Fmt("%.2f GiB per GPU is more than the %.2f GiB of ", p.request / kGiB,
                p.gpu->memory / kGiB) +
            p.gpu->name;
    return p;
  }
  p.compute_percent =
      std::clamp(int(std::ceil(p.request / p.gpu->memory * 100 / 5 - 1e-9)) * 5, 5, 100);
  if (const mig::ModelTable* table =
          p.gpu->mig_table.empty() ? nullptr : mig::ModelByKey(p.gpu->mig_table)) {
    const std::vector<int> fitting = table->Fitting(int64_t(std::ceil(p.request / kMiB)));
    if (!fitting.empty()) {
      const mig::Profile& q = table->profiles[fitting.front()];
      p.mig = MigProfile{std::string(q.name), double(q.memory_mib) * kMiB, q.compute_slices};
    }
  }
  return p;
}

}  // namespace vgpu::estimate
