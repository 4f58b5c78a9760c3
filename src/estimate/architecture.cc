#include "estimate/architecture.h"

#include <algorithm>
#include <cctype>

namespace vgpu::estimate {

bool Architecture::SlidingLayer(int layer) const {
  if (sliding_window <= 0) return false;
  if (!sliding_layers.empty()) {
    return layer >= 0 && layer < int(sliding_layers.size()) && sliding_layers[size_t(layer)];
  }
  if (sliding_pattern > 0) return (layer + 1) % sliding_pattern != 0;
  return true;
}

int Architecture::SlidingLayerCount() const {
  int n = 0;
  for (int i = 0; i < layers; ++i) n += SlidingLayer(i);
  return n;
}

namespace {

// Attention parameters of one layer: Q/K/V/O, or MLA's projections (vLLM deepseek_v2.py,
// HF modeling_deepseek.py): q (direct, or q_a + its norm + q_b), kv_a_proj_with_mqa
// (h -> kv_lora_rank + rope), its norm, kv_b_proj (kv_lora_rank -> heads x (nope + v)), o_proj.
void AttentionParams(const Architecture& a, double* linear, double* other) {
  const double h = a.hidden;
  if (a.Mla()) {
    const double qk = double(a.qk_nope_head_dim) + a.qk_rope_head_dim;
    const double heads = a.heads;
    if (a.q_lora_rank > 0) {
      *linear += h * a.q_lora_rank + double(a.q_lora_rank) * heads * qk;
      *other += a.q_lora_rank;  // q_a_layernorm
    } else {
      *linear += h * heads * qk;
    }
    *linear += h * (double(a.kv_lora_rank) + a.qk_rope_head_dim);
    *other += a.kv_lora_rank;  // kv_a_layernorm
    *linear += double(a.kv_lora_rank) * heads * (double(a.qk_nope_head_dim) + a.v_head_dim);
    *linear += heads * a.v_head_dim * h;
    return;
  }
  const double q_dim = double(a.heads) * a.HeadDim();
  const double kv_dim = double(a.kv_heads) * a.HeadDim();
  *linear += h * q_dim + 2 * h * kv_dim + q_dim * h;  // Q, K, V, O
  if (a.attention_bias) *other += q_dim + 2 * kv_dim + (a.mlp_bias ? h : 0);
}

// One block's parameters: attention (twice in a decoder layer of an encoder-decoder model:
// self- and cross-attention), the MLP (or experts), the norms (a third for cross-attention).
void LayerParams(const Architecture& a, int layer, bool cross_attention, double* linear,
                 double* other) {
  const double h = a.hidden;
  const int mlp_matrices = a.gated_mlp ? 3 : 2;
  AttentionParams(a, linear, other);
  if (cross_attention) AttentionParams(a, linear, other);
  if (a.MoeLayer(layer)) {
    const double expert = mlp_matrices * h * a.expert_intermediate;
    *linear += (a.experts + a.shared_experts) * expert;
    *other += h * a.experts;  // router, kept in 16 bits
  } else {
    *linear += mlp_matrices * h * a.intermediate;
    if (a.mlp_bias) *other += a.intermediate + h;
  }
  // Two norms per layer (three with cross-attention); LayerNorm has a weight and a bias.
  *other += (cross_attention ? 3 : 2) * (a.layer_norm ? 2 : 1) * h;
}

}  // namespace

ParamCount ParamCounts(const Architecture& a) {
  const double h = a.hidden;
  ParamCount p;
  p.embedding = double(a.vocab) * h;
  if (a.learned_positions) p.embedding += double(a.max_positions + a.position_offset) * h;
  p.head = a.tied_embeddings ? 0 : double(a.vocab) * h;

  double linear_all = 0, other_all = 0;
  // The encoder's layers (encoder-decoder models), then the decoder's; the per-layer figures
  // are those of the largest layer.
  const bool cross = a.EncoderDecoder();
  for (int i = 0; i < a.encoder_layers + a.layers; ++i) {
    double linear = 0, other = 0;
    const bool decoder = i >= a.encoder_layers;
    LayerParams(a, decoder ? i - a.encoder_layers : i, decoder && cross, &linear, &other);
    linear_all += linear;
    other_all += other;
    if (linear + other > p.per_layer_linear + p.per_layer_other) {
      p.per_layer_linear = linear;
      p.per_layer_other = other;
    }
  }
  // T5's relative position bias: buckets x heads in the first layer of each stack.
  other_all += (cross ? 2.0 : 1.0) * a.relative_buckets * a.heads;
  p.largest_tensor = std::max({double(a.vocab) * h, h * a.intermediate, h * a.expert_intermediate,
                               h * a.heads * a.HeadDim()});
  p.linear = linear_all;
  // The final norm (one per stack).
  p.other = other_all + p.embedding + p.head + (cross ? 2 : 1) * (a.layer_norm ? 2 : 1) * h;
  return p;
}

std::span<const ShapeLimit> ShapeLimits() {
  static constexpr ShapeLimit kLimits[] = {
      {"num_hidden_layers", &Architecture::layers, 4096},
      {"hidden_size", &Architecture::hidden, 1 << 17},
      {"num_attention_heads", &Architecture::heads, 4096},
      {"num_key_value_heads", &Architecture::kv_heads, 4096},
      {"head_dim", &Architecture::head_dim, 4096},
      {"intermediate_size", &Architecture::intermediate, 1 << 20},
      {"vocab_size", &Architecture::vocab, 1 << 22},
      {"max_position_embeddings", &Architecture::max_positions, 1 << 27},
      {"position offset", &Architecture::position_offset, 1 << 16},
      {"num_local_experts", &Architecture::experts, 4096},
      {"num_experts_per_tok", &Architecture::experts_per_token, 4096},
      {"moe_intermediate_size", &Architecture::expert_intermediate, 1 << 20},
      {"n_shared_experts", &Architecture::shared_experts, 256},
      {"first_k_dense_replace", &Architecture::dense_layers, 4096},
      {"kv_lora_rank", &Architecture::kv_lora_rank, 1 << 16},
      {"q_lora_rank", &Architecture::q_lora_rank, 1 << 16},
      {"qk_rope_head_dim", &Architecture::qk_rope_head_dim, 4096},
      {"qk_nope_head_dim", &Architecture::qk_nope_head_dim, 4096},
      {"v_head_dim", &Architecture::v_head_dim, 4096},
      {"sliding_window", &Architecture::sliding_window, 1 << 27},
      {"sliding_window_pattern", &Architecture::sliding_pattern, 4096},
      {"num_layers (encoder)", &Architecture::encoder_layers, 4096},
      {"relative_attention_num_buckets", &Architecture::relative_buckets, 4096},
  };
  return kLimits;
}

Status CheckShape(const Architecture& a) {
  for (const ShapeLimit& l : ShapeLimits()) {
    const int v = a.*l.field;
    if (v < 0 || v > l.max) {
      return Status::InvalidArgument("model " + a.name + ": " + l.key + " is " + std::to_string(v) +
                                     ", " +
                                     (v < 0 ? "below 0" : "more than " + std::to_string(l.max)) +
                                     " (the most the estimator takes)");
    }
  }
  return Status::Ok();
}

namespace {

Architecture Dense(std::string name, int layers, int hidden, int heads, int kv_heads,
                   int intermediate, int vocab, int max_positions, bool tied, std::string source) {
  Architecture a;
  a.name = std::move(name);
  a.layers = layers;
  a.hidden = hidden;
  a.heads = heads;
  a.kv_heads = kv_heads;
  a.intermediate = intermediate;
  a.vocab = vocab;
  a.max_positions = max_positions;
  a.tied_embeddings = tied;
  a.source = std::move(source);
  return a;
}

Architecture WithHeadDim(Architecture a, int head_dim) {
  a.head_dim = head_dim;
  return a;
}

Architecture WithQkvBias(Architecture a) {
  a.attention_bias = true;
  return a;
}

Architecture GptStyle(Architecture a, int position_offset) {
  a.gated_mlp = false;
  a.attention_bias = true;
  a.mlp_bias = true;
  a.layer_norm = true;
  a.learned_positions = true;
  a.position_offset = position_offset;
  return a;
}

Architecture Moe(Architecture a, int experts, int per_token, int expert_intermediate) {
  a.experts = experts;
  a.experts_per_token = per_token;
  a.expert_intermediate = expert_intermediate;
  return a;
}

Architecture Mla(Architecture a, int kv_lora_rank, int q_lora_rank, int qk_rope, int qk_nope,
                 int v_head_dim) {
  a.kv_lora_rank = kv_lora_rank;
  a.q_lora_rank = q_lora_rank;
  a.qk_rope_head_dim = qk_rope;
  a.qk_nope_head_dim = qk_nope;
  a.v_head_dim = v_head_dim;
  return a;
}

Architecture WithSharedExperts(Architecture a, int shared, int dense_layers) {
  a.shared_experts = shared;
  a.dense_layers = dense_layers;
  return a;
}

Architecture Sliding(Architecture a, int window, int pattern) {
  a.sliding_window = window;
  a.sliding_pattern = pattern;
  return a;
}

Architecture WithFormat(Architecture a, WeightFormat format, std::string source) {
  a.format = format;
  a.format_source = std::move(source);
  return a;
}

// T5 (v1.0: ReLU MLP, tied embeddings) and T5 v1.1 / mT5 / mT0 / Flan-T5 (gated GeLU, untied):
// `layers` encoder and as many decoder layers, d_model, d_kv, heads, d_ff; 32 relative position
// buckets, dropout 0.1, no biases, RMSNorm-style T5LayerNorm (HF T5Config, modeling_t5.py).
// max_positions is the default length only (T5's n_positions 512): relative positions do not
// bound the length.
Architecture T5(std::string name, int layers, int d_model, int d_kv, int heads, int d_ff, int vocab,
                bool gated, std::string source) {
  Architecture a;
  a.name = std::move(name);
  a.layers = a.encoder_layers = layers;
  a.hidden = d_model;
  a.head_dim = d_kv;
  a.heads = a.kv_heads = heads;
  a.intermediate = d_ff;
  a.vocab = vocab;
  a.max_positions = 512;
  a.tied_embeddings = !gated;
  a.gated_mlp = gated;
  a.relative_buckets = 32;
  a.dropout = true;
  a.source = std::move(source);
  return a;
}

std::string Hf(std::string_view repo) {
  return "https://huggingface.co/" + std::string(repo) + "/blob/main/config.json";
}

std::vector<Architecture> MakeTable() {
  const std::string tt_llama2 =
      "; torchtune torchtune/models/llama2/_model_builders.py (same shape)";
  const std::string tt_llama3 =
      "; torchtune torchtune/models/llama3_1/_model_builders.py (8B: 32 layers, 32 heads, 8 kv, "
      "4096, 14336; 70B: 80/64/8/8192/28672)";
  return {
      Dense("llama-2-7b", 32, 4096, 32, 32, 11008, 32000, 4096, false,
            Hf("meta-llama/Llama-2-7b-hf") + tt_llama2),
      Dense("llama-2-13b", 40, 5120, 40, 40, 13824, 32000, 4096, false,
            Hf("meta-llama/Llama-2-13b-hf") + tt_llama2),
      Dense("llama-2-70b", 80, 8192, 64, 8, 28672, 32000, 4096, false,
            Hf("meta-llama/Llama-2-70b-hf") + tt_llama2),
      Dense("llama-3-8b", 32, 4096, 32, 8, 14336, 128256, 8192, false,
            Hf("meta-llama/Meta-Llama-3-8B") + tt_llama3),
      Dense("llama-3-70b", 80, 8192, 64, 8, 28672, 128256, 8192, false,
            Hf("meta-llama/Meta-Llama-3-70B") + tt_llama3),
      Dense("llama-3.1-8b", 32, 4096, 32, 8, 14336, 128256, 131072, false,
            Hf("meta-llama/Llama-3.1-8B") + tt_llama3),
      Dense("llama-3.1-70b", 80, 8192, 64, 8, 28672, 128256, 131072, false,
            Hf("meta-llama/Llama-3.1-70B") + tt_llama3),
      WithHeadDim(Dense("llama-3.2-1b", 16, 2048, 32, 8, 8192, 128256, 131072, true,
                        Hf("meta-llama/Llama-3.2-1B")),
                  64),
      WithHeadDim(Dense("llama-3.2-3b", 28, 3072, 24, 8, 8192, 128256, 131072, true,
                        Hf("meta-llama/Llama-3.2-3B")),
                  128),
      Sliding(Dense("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768, false,
                    Hf("mistralai/Mistral-7B-v0.1") + " (sliding_window 4096 on every layer)"),
              4096, 0),
      Dense("mistral-7b-v0.3", 32, 4096, 32, 8, 14336, 32768, 32768, false,
            Hf("mistralai/Mistral-7B-v0.3") + " (sliding_window null)"),
      WithHeadDim(Sliding(Dense("gemma-2-9b", 42, 3584, 16, 8, 14336, 256000, 8192, true,
                                Hf("google/gemma-2-9b") +
                                    " (sliding_window 4096 on every other layer, from layer 0; "
                                    "HF Gemma2DecoderLayer: is_sliding = not layer_idx % 2)"),
                          4096, 2),
                  256),
      Mla(WithSharedExperts(
              Moe(Dense("deepseek-v2-lite", 27, 2048, 16, 16, 10944, 102400, 163840, false,
                        Hf("deepseek-ai/DeepSeek-V2-Lite") +
                            " (MLA kv_lora_rank 512, qk_rope 64, qk_nope 128, v 128, no q_lora; "
                            "64 routed + 2 shared experts of 1408, first layer dense)"),
                  64, 6, 1408),
              2, 1),
          512, 0, 64, 128, 128),
      WithFormat(
          Mla(WithSharedExperts(
                  Moe(Dense("deepseek-v3", 61, 7168, 128, 128, 18432, 129280, 163840, false,
                            Hf("deepseek-ai/DeepSeek-V3") +
                                " (MLA kv_lora_rank 512, q_lora_rank 1536, qk_rope 64, qk_nope "
                                "128, v 128; 256 routed + 1 shared expert of 2048, first 3 layers "
                                "dense; the multi-token-prediction layer is not loaded)"),
                      256, 8, 2048),
                  1, 3),
              512, 1536, 64, 128, 128),
          WeightFormat::kFp8,
          "the published checkpoint: config.json quantization_config quant_method fp8 (e4m3, "
          "weight_block_size [128, 128])"),
      Moe(Dense("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, false,
                Hf("mistralai/Mixtral-8x7B-v0.1")),
          8, 2, 14336),
      WithQkvBias(Dense("qwen2.5-0.5b", 24, 896, 14, 2, 4864, 151936, 32768, true,
                        Hf("Qwen/Qwen2.5-0.5B"))),
      WithQkvBias(Dense("qwen2.5-1.5b", 28, 1536, 12, 2, 8960, 151936, 32768, true,
                        Hf("Qwen/Qwen2.5-1.5B-Instruct"))),
      WithQkvBias(Dense("qwen2.5-3b", 36, 2048, 16, 2, 11008, 151936, 32768, true,
                        Hf("Qwen/Qwen2.5-3B-Instruct"))),
      WithQkvBias(Dense("qwen2.5-7b", 28, 3584, 28, 4, 18944, 152064, 32768, false,
                        Hf("Qwen/Qwen2.5-7B-Instruct"))),
      WithQkvBias(Dense("qwen2.5-14b", 48, 5120, 40, 8, 13824, 152064, 131072, false,
                        Hf("deepseek-ai/DeepSeek-R1-Distill-Qwen-14B") +
                            " (Qwen2.5-14B shape, 131072 positions)")),
      WithHeadDim(
          Dense("qwen3-8b", 36, 4096, 32, 8, 12288, 151936, 40960, false, Hf("Qwen/Qwen3-8B")),
          128),
      WithHeadDim(Dense("deepseek-r1-0528-qwen3-8b", 36, 4096, 32, 8, 12288, 151936, 131072, false,
                        Hf("deepseek-ai/DeepSeek-R1-0528-Qwen3-8B") +
                            " (Qwen3-8B shape, 131072 positions)"),
                  128),
      Moe(WithHeadDim(Dense("qwen3-235b-a22b", 94, 4096, 64, 4, 12288, 151936, 40960, false,
                            Hf("Qwen/Qwen3-235B-A22B")),
                      128),
          128, 8, 1536),
      GptStyle(Dense("opt-125m", 12, 768, 12, 12, 3072, 50272, 2048, true, Hf("facebook/opt-125m")),
               2),
      GptStyle(Dense("gpt2", 12, 768, 12, 12, 3072, 50257, 1024, true, Hf("openai-community/gpt2")),
               0),
      T5("t5-small", 6, 512, 64, 8, 2048, 32128, false, Hf("google-t5/t5-small")),
      T5("t5-base", 12, 768, 64, 12, 3072, 32128, false, Hf("google-t5/t5-base")),
      T5("t5-large", 24, 1024, 64, 16, 4096, 32128, false, Hf("google-t5/t5-large")),
      T5("flan-t5-base", 12, 768, 64, 12, 2048, 32128, true, Hf("google/flan-t5-base")),
      T5("flan-t5-large", 24, 1024, 64, 16, 2816, 32128, true, Hf("google/flan-t5-large")),
      T5("flan-t5-xl", 24, 2048, 64, 32, 5120, 32128, true, Hf("google/flan-t5-xl")),
      T5("flan-t5-xxl", 24, 4096, 64, 64, 10240, 32128, true, Hf("google/flan-t5-xxl")),
      T5("mt0-small", 8, 512, 64, 6, 1024, 250112, true, Hf("bigscience/mt0-small")),
      T5("mt0-base", 12, 768, 64, 12, 2048, 250112, true, Hf("bigscience/mt0-base")),
      T5("mt0-large", 24, 1024, 64, 16, 2816, 250112, true, Hf("bigscience/mt0-large")),
      T5("mt0-xl", 24, 2048, 64, 32, 5120, 250112, true, Hf("bigscience/mt0-xl")),
      T5("mt0-xxl", 24, 4096, 64, 64, 10240, 250112, true, Hf("bigscience/mt0-xxl")),
  };
}

std::string Normalize(std::string_view name) {
  std::string s(name);
  if (auto slash = s.rfind('/'); slash != std::string::npos) s = s.substr(slash + 1);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s.rfind("meta-", 0) == 0) s = s.substr(5);
  for (bool changed = true; changed;) {
    changed = false;
    for (std::string_view suffix : {"-hf", "-instruct", "-chat", "-v0.1", "-fp8"}) {
      if (s.size() > suffix.size() && s.ends_with(suffix)) {
        s.resize(s.size() - suffix.size());
        changed = true;
      }
    }
  }
  return s;
}

}  // namespace

std::span<const Architecture> BundledArchitectures() {
  static const std::vector<Architecture> kTable = MakeTable();
  return kTable;
}

std::optional<Architecture> FindArchitecture(std::string_view name) {
  const std::string want = Normalize(name);
  for (const Architecture& a : BundledArchitectures()) {
    if (Normalize(a.name) != want) continue;
    Architecture found = a;
    // "Qwen/Qwen3-235B-A22B-FP8": the publisher's FP8 checkpoint of the model.
    std::string lower(name);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return std::tolower(c); });
    if (lower.ends_with("-fp8") && found.format != WeightFormat::kFp8) {
      found.format = WeightFormat::kFp8;
      found.format_source = "the name " + std::string(name) + " (an FP8 checkpoint)";
    }
    return found;
  }
  return std::nullopt;
}

}  // namespace vgpu::estimate
