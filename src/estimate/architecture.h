// Architecture: the shape of a decoder-only transformer, as far as memory needs it, and the
// bundled table of well-known models (each row with the source of its numbers).
//
// ParamCounts() counts the parameters from the shape (no checkpoint is read): embeddings, output
// head (none when tied), per layer the attention projections (+ biases when attention_bias),
// the MLP (gated: gate, up, down; otherwise fc1, fc2 with biases for GPT-style models), MoE
// experts and router, norms (LayerNorm has a bias). `linear` is the part a weight quantisation
// (GPTQ/AWQ/NF4) applies to: the linear layers of the blocks; `other` stays in 16 bits.
//
// Multi-head latent attention (DeepSeek-V2/V3, kv_lora_rank > 0; arXiv 2405.04434 §2.1): Q is
// projected directly (q_lora_rank 0) or through a rank-q_lora_rank bottleneck with its norm;
// one latent of kv_lora_rank plus a shared rotary key of qk_rope_head_dim per token is what is
// cached; kv_b_proj expands the latent to per-head keys (qk_nope_head_dim) and values
// (v_head_dim); o_proj maps heads x v_head_dim back. MoE models may keep their first
// `dense_layers` layers dense (first_k_dense_replace).
// Sliding windows (Mistral-7B-v0.1, Gemma-2/3): a layer with a window of `sliding_window`
// tokens attends to (and caches) only the last window tokens; which layers slide is given by
// `sliding_layers` (one flag per layer; from layer_types), or else by `sliding_pattern` (p > 0:
// layer i is global when (i + 1) % p == 0, as Gemma-2 (p = 2) and Gemma-3 (p = 6) do), or else
// every layer slides.
//
// Encoder-decoder models (T5, mT5/mT0; encoder_layers > 0): `layers` are the decoder's; every
// decoder layer adds cross-attention (Q from the decoder, K and V from the encoder's output, O)
// and a third norm; both stacks share the embedding; the first layer of each stack holds T5's
// relative position bias (relative_buckets x heads); attention scores are computed explicitly
// (the bias rules out FlashAttention) with the softmax in fp32 (HF modeling_t5.py).
//
// The checkpoint's weight format (`format`, the default of --dtype) comes from config.json
// (hf_config.h: quantization_config, torch_dtype / dtype) or from the bundled row (DeepSeek-V3's
// published checkpoint is FP8). `format_error` is set when the config names a format the
// estimator does not model; the estimate then needs an explicit --dtype.
//
// CheckShape() refuses a shape outside the ranges of kShapeLimits (each field named by its
// config.json key), so an absurd config is refused at once instead of being computed.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "estimate/formulas.h"

namespace vgpu::estimate {

struct Architecture {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;  // 0: hidden / heads
  int intermediate = 0;
  int vocab = 0;
  int max_positions = 0;  // the model's maximum sequence length
  bool tied_embeddings = false;
  bool gated_mlp = true;           // SwiGLU (Llama, Mistral, Qwen); false: GeLU fc1/fc2 (GPT, OPT)
  bool attention_bias = false;     // Q/K/V biases (Qwen2, OPT, GPT-2)
  bool mlp_bias = false;           // fc1/fc2 biases (OPT, GPT-2)
  bool layer_norm = false;         // LayerNorm with bias; false: RMSNorm
  bool learned_positions = false;  // learned position table of max_positions (+ offset) rows
  int position_offset = 0;         // OPT keeps 2 extra position rows
  int experts = 0;                 // MoE routed experts; 0 = dense
  int experts_per_token = 0;
  int expert_intermediate = 0;
  int shared_experts = 0;
  int dense_layers = 0;  // MoE: the first layers stay dense (first_k_dense_replace)
  // MLA (0 = standard attention)
  int kv_lora_rank = 0;
  int q_lora_rank = 0;  // 0: Q projected directly
  int qk_rope_head_dim = 0;
  int qk_nope_head_dim = 0;
  int v_head_dim = 0;
  // sliding windows (0 = none)
  int sliding_window = 0;
  int sliding_pattern = 0;
  std::vector<bool> sliding_layers;  // empty: from sliding_pattern
  // encoder-decoder (0 = decoder-only)
  int encoder_layers = 0;
  int relative_buckets = 0;  // T5's relative attention buckets (0: none)
  bool dropout = false;      // trained with dropout (T5's dropout_rate 0.1)
  // the checkpoint
  WeightFormat format = WeightFormat::kBf16;
  std::string format_source;  // where `format` comes from; "" when nothing says (bf16 assumed)
  std::string format_error;   // a format the config names that is not modelled
  std::string source;         // where the numbers come from

  int HeadDim() const { return head_dim > 0 ? head_dim : hidden / std::max(heads, 1); }
  bool Mla() const { return kv_lora_rank > 0; }
  // The dimension the rotary embedding covers (MLA: only the rope part of the key).
  int RotaryDim() const { return Mla() ? qk_rope_head_dim : HeadDim(); }
  bool SlidingLayer(int layer) const;
  int SlidingLayerCount() const;
  bool MoeLayer(int layer) const { return experts > 0 && layer >= dense_layers; }
  bool EncoderDecoder() const { return encoder_layers > 0; }
};

// The largest value each shape field may take, named by its config.json key. Published models
// stay far below (the largest have 126 layers, a 262144-token vocabulary, 384 experts, 10M
// positions); beyond these the estimate would only be slow, not informative.
struct ShapeLimit {
  const char* key;
  int Architecture::*field;
  int max;
};
std::span<const ShapeLimit> ShapeLimits();
// InvalidArgument naming the first field beyond its limit: "num_hidden_layers is 100000000, more
// than 4096".
Status CheckShape(const Architecture& arch);

struct ParamCount {
  double linear = 0;  // per-layer linear weights, all layers
  double other = 0;   // embeddings, head, norms, biases
  double embedding = 0;
  double head = 0;
  double per_layer_linear = 0;  // of the largest layer
  double per_layer_other = 0;
  // The largest single weight tensor: the embedding (vocab x hidden) or a layer's largest matrix.
  double largest_tensor = 0;
  double Total() const { return linear + other; }
};
ParamCount ParamCounts(const Architecture& arch);

// The bundled table, and a case-insensitive lookup by name (also without the organisation
// prefix: "meta-llama/Meta-Llama-3-8B" and "llama-3-8b" both match "llama-3-8b").
std::span<const Architecture> BundledArchitectures();
std::optional<Architecture> FindArchitecture(std::string_view name);

}  // namespace vgpu::estimate
