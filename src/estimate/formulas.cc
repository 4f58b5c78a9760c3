#include "estimate/formulas.h"

#include <algorithm>
#include <cmath>

namespace vgpu::estimate {

double BytesPerElement(WeightFormat format) {
  switch (format) {
    case WeightFormat::kFp32:
      return 4;
    case WeightFormat::kBf16:
      return 2;
    case WeightFormat::kFp8:
    case WeightFormat::kInt8:
      return 1;
    case WeightFormat::kInt4Group128:
      return 0.5 + (2.0 + 0.5) / 128.0;
    case WeightFormat::kNf4:
      return 0.5 + 1.0 / 64.0 + 4.0 / (64.0 * 256.0);
  }
  return 2;
}

double WeightBytes(double linear_params, double other_params, WeightFormat linear_format,
                   WeightFormat other_format) {
  return linear_params * BytesPerElement(linear_format) +
         other_params * BytesPerElement(other_format);
}

double OptimizerStateBytesPerParam(Optimizer optimizer, double state_bytes) {
  switch (optimizer) {
    case Optimizer::kAdamW:
    case Optimizer::kAdamWFused:
      return 2 * state_bytes;
    case Optimizer::kPagedAdamW:
      return 2 * 4.0;  // bitsandbytes keeps 32-bit states in fp32
    case Optimizer::kAdamW8bit:
    case Optimizer::kPagedAdamW8bit:
      return 2 * (1.0 + 4.0 / 2048.0);
    case Optimizer::kSgdMomentum:
      return state_bytes;
    case Optimizer::kSgd:
      return 0;
  }
  return 0;
}

ModelStates ZeroModelStates(double trainable_params, double weight_bytes, double grad_bytes,
                            double optimizer_bytes, int zero_stage, int dp) {
  const double n = std::max(dp, 1);
  ModelStates m;
  m.weights = trainable_params * weight_bytes / (zero_stage >= 3 ? n : 1);
  m.gradients = trainable_params * grad_bytes / (zero_stage >= 2 ? n : 1);
  m.optimizer = trainable_params * optimizer_bytes / (zero_stage >= 1 ? n : 1);
  return m;
}

double MixedPrecisionAdamBytesPerParam() { return 2 + 2 + (4 + 4 + 4); }

DeepSpeedEstimate DeepSpeedZero2(double total_params, int gpus_per_node, int nodes,
                                 bool cpu_offload, double buffer_factor) {
  const double total_gpus = double(nodes) * gpus_per_node;
  DeepSpeedEstimate e;
  if (cpu_offload) {
    e.gpu = 2 * total_params;
    e.cpu = total_params * std::max(4 * total_gpus, 16.0) * buffer_factor;
  } else {
    e.gpu = 2 * total_params + std::trunc(18 * total_params / total_gpus);
    e.cpu = total_params * 4 * gpus_per_node * buffer_factor;
  }
  return e;
}

DeepSpeedEstimate DeepSpeedZero3(double total_params, double largest_layer_params,
                                 int gpus_per_node, int nodes, bool cpu_offload,
                                 bool cpu_offload_params, bool zero_init, double buffer_factor) {
  const double total_gpus = double(nodes) * gpus_per_node;
  const double gpus_factor = 1.0 / nodes;
  const double largest_layer_memory = 4 * largest_layer_params;
  DeepSpeedEstimate e;
  if (cpu_offload) {
    if (cpu_offload_params) {
      e.gpu = largest_layer_memory;
      e.cpu = zero_init
                  ? total_params * 18 * gpus_factor * buffer_factor
                  : total_params * std::max(4.0 * gpus_per_node, 18 * gpus_factor) * buffer_factor;
    } else {
      e.gpu = largest_layer_memory + std::trunc(2 * total_params / total_gpus);
      e.cpu = zero_init
                  ? total_params * 16 * gpus_factor * buffer_factor
                  : total_params * std::max(4.0 * gpus_per_node, 16 * gpus_factor) * buffer_factor;
    }
  } else {
    e.gpu = largest_layer_memory + std::trunc(18 * total_params / total_gpus);
    e.cpu = zero_init ? largest_layer_params * 4 * gpus_per_node * buffer_factor
                      : total_params * 4 * gpus_per_node * buffer_factor;
  }
  return e;
}

int HeadsPerRank(int heads, int tp) { return std::max(1, heads / std::max(tp, 1)); }

int LayersPerStage(int layers, int pp) {
  const int p = std::max(pp, 1);
  return (layers + p - 1) / p;
}

double KorthikantiLayerBytes(double s, double b, double h, double a) {
  return s * b * h * (34 + 5 * a * s / h);
}

double KorthikantiLayerBytesTpSp(double s, double b, double h, double a, double t) {
  return s * b * h * (34 / t + 5 * a * s / (h * t));
}

double KorthikantiSelectiveLayerBytes(double s, double b, double h) { return 34 * s * b * h; }

double CheckpointedLayerBytes(double s, double b, double h) { return 2 * s * b * h; }

namespace {

// Bytes per element of the attention scores saved for the backward pass: the softmax output,
// with dropout its mask and output, and, when the softmax is computed in fp32, the 16-bit copy
// the next op reads.
double ScoreBytes(const LayerShape& x) {
  return x.softmax_bytes + (x.dropout ? 3 : (x.softmax_bytes > 2 ? 2 : 0));
}

}  // namespace

double LayerActivationBytes(const LayerShape& x, double s, double b, int tp) {
  const double t = std::max(tp, 1);
  const double sb = s * b;
  double bytes = 0;
  bytes += 2 * (2 * sb * x.hidden);                // the two norm inputs
  bytes += 2 * sb * x.hidden;                      // QKV projection input
  bytes += 2 * sb * (x.q_dim + 2 * x.kv_dim) / t;  // Q, K, V
  if (!x.flash_attention) {
    const double scores = x.heads * s * s * b / t;  // elements of the score matrices
    bytes += scores * ScoreBytes(x);
  }
  bytes += 2 * sb * x.q_dim / t;  // attention output (o-proj input)
  bytes += 2 * sb * x.hidden;     // MLP input
  const int mlp_tensors = (x.gated_mlp ? 3 : 2) - (x.compiled ? 1 : 0);
  bytes += mlp_tensors * 2 * sb * x.intermediate / t;
  if (x.mlp_dropout && x.dropout) bytes += sb * x.intermediate / t;  // the MLP's dropout mask
  if (x.dropout) bytes += 2 * sb * x.hidden;  // two dropout masks, 1 byte each
  return bytes;
}

double CrossAttentionActivationBytes(const LayerShape& x, double s_dec, double s_enc, double b,
                                     int tp) {
  const double t = std::max(tp, 1);
  double bytes = 2 * s_dec * b * x.hidden;    // the norm's input
  bytes += 2 * s_dec * b * x.q_dim / t;       // Q
  bytes += 2 * 2 * s_enc * b * x.kv_dim / t;  // K and V of the encoder's tokens
  if (!x.flash_attention) bytes += x.heads * s_dec * s_enc * b / t * ScoreBytes(x);
  bytes += 2 * s_dec * b * x.q_dim / t;          // attention output
  if (x.dropout) bytes += s_dec * b * x.hidden;  // its dropout mask
  return bytes;
}

double LossBackwardPeakBytes(double tokens, double vocab, int tp) {
  return tokens * vocab * 4 * 4 / std::max(tp, 1);
}

double HeldLogitsBytes(double tokens, double vocab, int tp) {
  return tokens * vocab * 4 / std::max(tp, 1);
}

LossBytes LossBytesPerLogit(LossKind kind, int chunks, bool compiled, bool held) {
  const double n = std::max(chunks, 1);
  const double logit = kind == LossKind::kFp32 ? 4 : 2;  // the logits' dtype as the loop has them
  const double kept = held ? logit : 0;
  if (compiled) return {kind == LossKind::kFp32 ? 8 : 2 + 2 / n, kept};
  if (kind == LossKind::kFp32) return {12 + kept, kept};
  return {std::max(6 + 4 / n, 4 + 8 / n + kept), kept};
}

double OptimizerStepTempBytes(Optimizer optimizer, double params, double state_bytes) {
  return optimizer == Optimizer::kAdamW ? params * state_bytes : 0;
}

double InBackwardGradientBytes(double largest_tensor_params, double grad_bytes) {
  return largest_tensor_params * grad_bytes;
}

FsdpGathered FsdpGatheredBytes(double root_params, double layer_params, double param_bytes,
                               bool trainable) {
  FsdpGathered g;
  g.forward_params = (root_params + 2 * layer_params) * param_bytes;
  g.backward_params = g.forward_params;
  g.backward_grads = trainable ? (root_params + layer_params) * param_bytes : 0;
  return g;
}

double LayerBackwardGradBytes(const LayerShape& shape, double s, double b, int tp) {
  return (shape.gated_mlp ? 3 : 2) * 2 * s * b * shape.intermediate / std::max(tp, 1);
}

double LoraAdapterParams(double d_in, double d_out, int rank) { return rank * (d_in + d_out); }

double KvPageBytes(int block_size, int kv_heads_per_gpu, int head_dim, double dtype_bytes) {
  return 2.0 * block_size * kv_heads_per_gpu * head_dim * dtype_bytes;
}

double MlaKvPageBytes(int block_size, int kv_lora_rank, int qk_rope_head_dim, double dtype_bytes) {
  return double(block_size) * (double(kv_lora_rank) + qk_rope_head_dim) * dtype_bytes;
}

int64_t SlidingWindowKvBlocks(int window, int max_num_batched_tokens, int max_model_len,
                              int block_size) {
  const int64_t tokens =
      std::min<int64_t>(int64_t(window) - 1 + max_num_batched_tokens, max_model_len);
  const int64_t b = std::max(block_size, 1);
  return (tokens + b - 1) / b + 1;
}

int64_t FullAttentionKvBlocks(int max_model_len, int block_size) {
  const int64_t b = std::max(block_size, 1);
  return (int64_t(max_model_len) + b - 1) / b;
}

double KvBytesPerToken(int layers_per_gpu, int kv_heads_per_gpu, int head_dim, double dtype_bytes) {
  return 2.0 * layers_per_gpu * kv_heads_per_gpu * head_dim * dtype_bytes;
}

double VllmKvBudget(double total_gpu_bytes, double gpu_memory_utilization, double weight_bytes,
                    double activation_peak_bytes, double non_torch_bytes) {
  return total_gpu_bytes * gpu_memory_utilization -
         (weight_bytes + activation_peak_bytes + non_torch_bytes);
}

int64_t VllmKvBlocks(double kv_budget_bytes, double page_bytes, int layers_per_gpu) {
  if (kv_budget_bytes <= 0 || page_bytes <= 0 || layers_per_gpu <= 0) return 0;
  return int64_t(std::floor(kv_budget_bytes / (page_bytes * layers_per_gpu)));
}

int64_t VllmKvTokens(double kv_budget_bytes, double page_bytes, int layers_per_gpu,
                     int block_size) {
  return VllmKvBlocks(kv_budget_bytes, page_bytes, layers_per_gpu) * block_size;
}

double CudaContextBytes() { return 512 * kMiB; }

double FrameworkOverheadBytes(double dynamic_bytes, bool multi_gpu) {
  return (multi_gpu ? 512 : 256) * kMiB + 0.05 * dynamic_bytes;
}

}  // namespace vgpu::estimate
