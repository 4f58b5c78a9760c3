#include "estimate/vllm_load.h"

#include <algorithm>
#include <cmath>

#include "estimate/caching_allocator.h"

namespace vgpu::estimate {

namespace {

// Allocates tensors in vLLM's construction order and keeps the running totals.
class Loader {
 public:
  Loader(WeightFormat linear, WeightFormat other) : linear_(linear), other_(other) {}

  void Linear(double elements) { Tensor(elements * BytesPerElement(linear_)); }
  void Other(double elements) { Tensor(elements * BytesPerElement(other_)); }
  void Padding(double elements) {
    const double bytes = elements * BytesPerElement(other_);
    load_.padding_bytes += int64_t(bytes);
  }

  // vLLM's _compute_cos_sin_cache for max_position x rotary_dim, then .to(model dtype).
  void Rotary(int64_t max_position, int64_t rotary_dim) {
    using Id = CachingAllocatorModel::BlockId;
    const int64_t half = rotary_dim / 2;
    const Id inv_freq = alloc_.Malloc(half * 4);
    const Id t = alloc_.Malloc(max_position * 4);
    const Id freqs = alloc_.Malloc(max_position * half * 4);
    const Id cos = alloc_.Malloc(max_position * half * 4);
    const Id sin = alloc_.Malloc(max_position * half * 4);
    const Id cache = alloc_.Malloc(max_position * rotary_dim * 4);
    for (Id id : {freqs, cos, sin, t, inv_freq}) alloc_.Free(id);  // the function returns
    const int64_t bytes = int64_t(max_position * rotary_dim * BytesPerElement(other_));
    alloc_.Malloc(bytes);
    alloc_.Free(cache);
    load_.tensor_bytes += bytes;
    load_.rotary_bytes += bytes;
  }

  VllmLoad Done() {
    load_.allocated_bytes = alloc_.AllocatedBytes();
    return load_;
  }

 private:
  void Tensor(double bytes) {
    const int64_t n = int64_t(std::ceil(bytes));
    if (n <= 0) return;
    alloc_.Malloc(n);
    load_.tensor_bytes += n;
  }

  WeightFormat linear_, other_;
  CachingAllocatorModel alloc_;
  VllmLoad load_;
};

struct Shape {
  double h, q, kv, inter, expert_inter;
  int64_t vocab_rank;
};

// Multi-head latent attention as vLLM's DeepseekV2MLAAttention builds it: the Q and latent
// down-projections replicated (fused_qkv_a_proj when q_lora_rank > 0, else q_proj split over
// tp and kv_a_proj_with_mqa), their norms, kv_b_proj and o_proj split over tp.
void MlaAttention(const Architecture& a, const Shape& s, int tp, Loader& l) {
  const double heads = double(a.heads) / tp;
  const double qk = double(a.qk_nope_head_dim) + a.qk_rope_head_dim;
  const double latent = double(a.kv_lora_rank) + a.qk_rope_head_dim;
  if (a.q_lora_rank > 0) {
    l.Linear((a.q_lora_rank + latent) * s.h);  // fused_qkv_a_proj
    l.Other(a.q_lora_rank);                    // q_a_layernorm
    l.Linear(heads * qk * a.q_lora_rank);      // q_b_proj
  } else {
    l.Linear(heads * qk * s.h);  // q_proj
    l.Linear(latent * s.h);      // kv_a_proj_with_mqa
  }
  l.Other(a.kv_lora_rank);                                                         // kv_a_layernorm
  l.Linear(heads * (double(a.qk_nope_head_dim) + a.v_head_dim) * a.kv_lora_rank);  // kv_b_proj
  l.Linear(s.h * heads * a.v_head_dim);                                            // o_proj
}

void Layer(const Architecture& a, const Shape& s, int tp, int index, bool first, Loader& l) {
  const double t = tp;
  if (a.Mla()) {
    MlaAttention(a, s, tp, l);
  } else {
    l.Linear((s.q + 2 * s.kv) * s.h);  // QKV
    if (a.attention_bias) l.Other(s.q + 2 * s.kv);
    l.Linear(s.q * s.h);  // o_proj
    if (a.mlp_bias) l.Other(s.h);
  }
  if (first && !a.learned_positions) l.Rotary(a.max_positions, a.RotaryDim());
  if (a.layer_norm) {  // OPT: self_attn_layer_norm between attention and MLP
    l.Other(s.h);
    l.Other(s.h);
  }
  const int matrices = a.gated_mlp ? 3 : 2;
  if (a.MoeLayer(index)) {
    l.Other(double(a.experts) * s.h);                                     // router
    l.Linear(double(a.experts) * (matrices - 1) * s.expert_inter * s.h);  // w13
    l.Linear(double(a.experts) * s.h * s.expert_inter);                   // w2
    if (a.shared_experts > 0) {
      const double shared = double(a.shared_experts) * a.expert_intermediate / t;
      l.Linear((matrices - 1) * shared * s.h);
      l.Linear(shared * s.h);
    }
  } else if (a.gated_mlp) {
    l.Linear(2 * s.inter * s.h);  // gate_up
    l.Linear(s.inter * s.h);      // down
  } else {
    l.Linear(s.inter * s.h);  // fc1
    if (a.mlp_bias) l.Other(s.inter);
    l.Linear(s.inter * s.h);  // fc2
    if (a.mlp_bias) l.Other(s.h);
  }
  l.Other(s.h);  // the (second) norm, replicated: RMSNorm's weight or LayerNorm's weight and bias
  l.Other(s.h);
}

VllmLoad Stage(const Architecture& a, const Shape& s, int tp, int first_layer, int layers,
               bool first_stage, bool last_stage, WeightFormat linear, WeightFormat other) {
  Loader l(linear, other);
  const double pad_rows = double(s.vocab_rank) - double(a.vocab) / tp;
  if (first_stage) {
    l.Other(double(s.vocab_rank) * s.h);
    l.Padding(pad_rows * s.h);
    if (a.learned_positions) l.Other(double(a.max_positions + a.position_offset) * s.h);
    if (a.layer_norm) {  // OPT's final LayerNorm is built before the layers
      l.Other(s.h);
      l.Other(s.h);
    }
  }
  for (int i = 0; i < layers; ++i) Layer(a, s, tp, first_layer + i, i == 0, l);
  if (last_stage) {
    if (!a.layer_norm) l.Other(s.h);  // final RMSNorm
    if (!a.tied_embeddings || !first_stage) {
      l.Other(double(s.vocab_rank) * s.h);
      l.Padding(pad_rows * s.h);
    }
  }
  return l.Done();
}

}  // namespace

int64_t VllmPaddedVocabPerRank(int64_t vocab, int tp) {
  const int64_t padded = (vocab + 63) / 64 * 64;
  const int64_t t = std::max(tp, 1);
  return (padded + t - 1) / t;
}

VllmLoad VllmLoadedWeights(const Architecture& a, int tp, int pp, WeightFormat linear_format,
                           WeightFormat other_format) {
  tp = std::max(tp, 1);
  pp = std::max(pp, 1);
  Shape s;
  s.h = a.hidden;
  s.q = double(a.heads / tp) * a.HeadDim();
  s.kv = double(HeadsPerRank(a.kv_heads, tp)) * a.HeadDim();
  s.inter = double(a.intermediate) / tp;
  s.expert_inter = double(a.expert_intermediate) / tp;
  s.vocab_rank = VllmPaddedVocabPerRank(a.vocab, tp);
  const int layers = LayersPerStage(a.layers, pp);
  if (pp == 1) return Stage(a, s, tp, 0, layers, true, true, linear_format, other_format);
  const int last_first = a.layers - layers;
  const VllmLoad first = Stage(a, s, tp, 0, layers, true, false, linear_format, other_format);
  const VllmLoad last =
      Stage(a, s, tp, last_first, layers, false, true, linear_format, other_format);
  return first.allocated_bytes >= last.allocated_bytes ? first : last;
}

}  // namespace vgpu::estimate
