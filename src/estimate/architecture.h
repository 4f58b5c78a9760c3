// Architecture: the shape of a decoder-only transformer, as far as memory needs it, and the
// bundled table of well-known models (each row with the source of its numbers).
//
// ParamCounts() counts the parameters from the shape (no checkpoint is read): embeddings, output
// head (none when tied), per layer the attention projections (+ biases when attention_bias),
// the MLP (gated: gate, up, down; otherwise fc1, fc2 with biases for GPT-style models), MoE
// experts and router, norms (LayerNorm has a bias). `linear` is the part a weight quantisation
// (GPTQ/AWQ/NF4) applies to: the linear layers of the blocks; `other` stays in 16 bits.
#pragma once

#include <algorithm>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

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
  std::string source;  // where the numbers come from

  int HeadDim() const { return head_dim > 0 ? head_dim : hidden / std::max(heads, 1); }
};

struct ParamCount {
  double linear = 0;  // per-layer linear weights, all layers
  double other = 0;   // embeddings, head, norms, biases
  double embedding = 0;
  double head = 0;
  double per_layer_linear = 0;
  double per_layer_other = 0;
  double Total() const { return linear + other; }
};
ParamCount ParamCounts(const Architecture& arch);

// The bundled table, and a case-insensitive lookup by name (also without the organisation
// prefix: "meta-llama/Meta-Llama-3-8B" and "llama-3-8b" both match "llama-3-8b").
std::span<const Architecture> BundledArchitectures();
std::optional<Architecture> FindArchitecture(std::string_view name);

}  // namespace vgpu::estimate
