#include "estimate/architecture.h"

#include <algorithm>
#include <cctype>

namespace vgpu::estimate {

ParamCount ParamCounts(const Architecture& a) {
  const double h = a.hidden;
  const double q_dim = double(a.heads) * a.HeadDim();
  const double kv_dim = double(a.kv_heads) * a.HeadDim();
  ParamCount p;
  p.embedding = double(a.vocab) * h;
  if (a.learned_positions) p.embedding += double(a.max_positions + a.position_offset) * h;
  p.head = a.tied_embeddings ? 0 : double(a.vocab) * h;

  double linear = h * q_dim + 2 * h * kv_dim + q_dim * h;  // Q, K, V, O
  double other = a.attention_bias ? q_dim + 2 * kv_dim + (a.mlp_bias ? h : 0) : 0;
  const int mlp_matrices = a.gated_mlp ? 3 : 2;
  if (a.experts > 0) {
    const double expert = mlp_matrices * h * a.expert_intermediate;
    linear += (a.experts + a.shared_experts) * expert;
    other += h * a.experts;  // router, kept in 16 bits
  } else {
    linear += mlp_matrices * h * a.intermediate;
    if (a.mlp_bias) other += a.intermediate + h;
  }
  other += (a.layer_norm ? 4 : 2) * h;  // two norms per layer (LayerNorm: weight and bias)
  p.per_layer_linear = linear;
  p.per_layer_other = other;
  p.linear = linear * a.layers;
  p.other = other * a.layers + p.embedding + p.head + (a.layer_norm ? 2 : 1) * h;
  return p;
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
      Dense("mistral-7b", 32, 4096, 32, 8, 14336, 32000, 32768, false,
            Hf("mistralai/Mistral-7B-v0.1")),
      Moe(Dense("mixtral-8x7b", 32, 4096, 32, 8, 14336, 32000, 32768, false,
                Hf("mistralai/Mixtral-8x7B-v0.1")),
          8, 2, 14336),
      WithQkvBias(Dense("qwen2.5-0.5b", 24, 896, 14, 2, 4864, 151936, 32768, true,
                        Hf("Qwen/Qwen2.5-0.5B"))),
      WithQkvBias(Dense("qwen2.5-1.5b", 28, 1536, 12, 2, 8960, 151936, 32768, true,
                        Hf("Qwen/Qwen2.5-1.5B-Instruct"))),
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
    if (Normalize(a.name) == want) return a;
  }
  return std::nullopt;
}

}  // namespace vgpu::estimate
