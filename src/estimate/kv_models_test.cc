// The KV cache of multi-head latent attention (DeepSeek-V2/V3) and of sliding-window layers
// (Mistral-7B-v0.1, Gemma-2), against values computed by hand from vLLM's KV specs
// (vllm/v1/kv_cache_interface.py) and the models' config.json.
#include <gtest/gtest.h>

#include "estimate/estimator.h"
#include "estimate/hf_config.h"

namespace vgpu::estimate {
namespace {

Inputs Serve(const char* model, int max_model_len) {
  Inputs in;
  in.arch = *FindArchitecture(model);
  in.max_model_len = max_model_len;
  return in;
}

TEST(MlaKvCache, OneLatentAndOneRopeKeyPerTokenAndLayer) {
  // MLAAttentionSpec: 16 tokens x (512 + 64) x 2 bytes = 18432 bytes a block and layer.
  EXPECT_EQ(MlaKvPageBytes(16, 512, 64, 2), 18432);
  // DeepSeek-V3, 61 layers: 61 x 576 x 2 = 70272 bytes per token, where full multi-head K and V
  // of 128 heads x 128 would take 2 x 61 x 128 x 128 x 2 = 3997696 (57 times more).
  Inputs in = Serve("deepseek-v3", 32768);
  in.tp = 8;
  const Estimate e = Compute(in);
  ASSERT_TRUE(e.serve.has_value());
  EXPECT_EQ(e.serve->page_bytes, 18432);
  EXPECT_EQ(e.serve->bytes_per_token, 70272);  // the latent is not split over TP ranks
  // One 32768-token sequence: 2048 blocks x 61 layers x 18432 bytes.
  EXPECT_EQ(e.per_gpu.kv_cache, 2048.0 * 61 * 18432);
  // DeepSeek-V2-Lite, 27 layers, fp8 KV: 27 x 576 x 1 = 15552 bytes per token.
  Inputs lite = Serve("deepseek-v2-lite", 4096);
  lite.kv_dtype_bytes = 1;
  EXPECT_EQ(Compute(lite).serve->bytes_per_token, 15552);
}

TEST(MlaKvCache, ParameterCountsOfTheDeepSeekRows) {
  // DeepSeek-V3 reports 671 B parameters (without the multi-token-prediction module), of which
  // 37 B are active; V2-Lite 15.7 B.
  EXPECT_NEAR(ParamCounts(*FindArchitecture("deepseek-v3")).Total() / 1e9, 671, 1);
  EXPECT_NEAR(ParamCounts(*FindArchitecture("deepseek-v2-lite")).Total() / 1e9, 15.7, 0.1);
}

TEST(SlidingWindowKvCache, BlocksOfAWindowAsVllmCountsThem) {
  // ceil(min(4096 - 1 + 8192, 32768) / 16) + 1 = 768 + 1.
  EXPECT_EQ(SlidingWindowKvBlocks(4096, 8192, 32768, 16), 769);
  // The window never holds more than max_model_len, plus the one block of misalignment.
  EXPECT_EQ(SlidingWindowKvBlocks(4096, 8192, 4096, 16), 257);
  EXPECT_EQ(FullAttentionKvBlocks(4096, 16), 256);
  EXPECT_EQ(FullAttentionKvBlocks(4097, 16), 257);
}

TEST(SlidingWindowKvCache, MistralKeepsOnlyTheWindow) {
  // Mistral-7B-v0.1: every layer slides over 4096 tokens. Page 2 x 16 x 8 x 128 x 2 = 65536.
  const Estimate e = Compute(Serve("mistral-7b", 32768));
  EXPECT_EQ(e.serve->page_bytes, 65536);
  EXPECT_EQ(e.per_gpu.kv_cache, 65536.0 * 32 * 769);  // not 65536 x 32 x 2048
  // v0.3 has no window: the whole 32768 tokens.
  EXPECT_EQ(Compute(Serve("mistral-7b-v0.3", 32768)).per_gpu.kv_cache, 65536.0 * 32 * 2048);
  // Plain inference keeps min(seq, window) tokens per layer: 4096 x 32 x (2 x 8 x 128 x 2).
  Inputs infer = Serve("mistral-7b", 0);
  infer.mode = Mode::kInfer;
  infer.seq_len = 32768;
  EXPECT_EQ(Compute(infer).per_gpu.kv_cache, 4096.0 * 32 * 4096);
}

TEST(SlidingWindowKvCache, Gemma2SlidesOnEveryOtherLayer) {
  const Architecture g = *FindArchitecture("gemma-2-9b");
  EXPECT_TRUE(g.SlidingLayer(0));
  EXPECT_FALSE(g.SlidingLayer(1));
  EXPECT_EQ(g.SlidingLayerCount(), 21);
  // Page 2 x 16 x 8 x 256 x 2 = 131072. max_model_len 8192, max_num_batched_tokens 2048:
  // 21 global layers x 512 blocks + 21 sliding x (ceil(min(4095 + 2048, 8192) / 16) + 1 = 385).
  Inputs in = Serve("gemma-2-9b", 8192);
  in.max_num_batched_tokens = 2048;
  const Estimate e = Compute(in);
  EXPECT_EQ(e.serve->page_bytes, 131072);
  EXPECT_EQ(e.per_gpu.kv_cache, 131072.0 * (21 * 512 + 21 * 385));
  // vLLM starts when the budget holds that one sequence (check_enough_kv_cache_memory).
  const double one = 131072.0 * (21 * 512 + 21 * 385);
  EXPECT_FALSE(
      ServeOn(e, (e.per_gpu.weights + e.per_gpu.activations + e.per_gpu.framework + one * 0.99) /
                     in.gpu_memory_utilization)
          .starts);
  EXPECT_TRUE(
      ServeOn(e, (e.per_gpu.weights + e.per_gpu.activations + e.per_gpu.framework + one * 1.01) /
                     in.gpu_memory_utilization)
          .starts);
}

constexpr const char* kDeepSeekConfig = R"({
  "model_type": "deepseek_v2",
  "hidden_size": 2048, "intermediate_size": 10944, "moe_intermediate_size": 1408,
  "num_hidden_layers": 27, "num_attention_heads": 16, "num_key_value_heads": 16,
  "n_routed_experts": 64, "n_shared_experts": 2, "num_experts_per_tok": 6,
  "first_k_dense_replace": 1, "kv_lora_rank": 512, "q_lora_rank": null,
  "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
  "vocab_size": 102400, "max_position_embeddings": 163840, "tie_word_embeddings": false
})";

TEST(HfConfig, ReadsMlaAndSlidingWindowKeys) {
  auto d = ParseHfConfig(kDeepSeekConfig, "ds/config.json");
  ASSERT_TRUE(d.has_value()) << d.error().message();
  EXPECT_EQ(ParamCounts(*d).Total(), ParamCounts(*FindArchitecture("deepseek-v2-lite")).Total());
  EXPECT_TRUE(d->Mla());
  EXPECT_EQ(d->RotaryDim(), 64);

  auto gemma = ParseHfConfig(R"({"model_type": "gemma2", "hidden_size": 3584,
    "intermediate_size": 14336, "num_hidden_layers": 42, "num_attention_heads": 16,
    "num_key_value_heads": 8, "head_dim": 256, "vocab_size": 256000,
    "max_position_embeddings": 8192, "sliding_window": 4096, "tie_word_embeddings": true})",
                             "g/config.json");
  ASSERT_TRUE(gemma.has_value()) << gemma.error().message();
  EXPECT_EQ(gemma->SlidingLayerCount(), 21);

  // layer_types wins over the pattern; Qwen2 ignores its window unless use_sliding_window.
  auto typed = ParseHfConfig(R"({"hidden_size": 64, "intermediate_size": 128,
    "num_hidden_layers": 3, "num_attention_heads": 4, "vocab_size": 100,
    "sliding_window": 16,
    "layer_types": ["full_attention", "sliding_attention", "sliding_attention"]})",
                             "t/config.json");
  ASSERT_TRUE(typed.has_value()) << typed.error().message();
  EXPECT_FALSE(typed->SlidingLayer(0));
  EXPECT_TRUE(typed->SlidingLayer(2));
  auto qwen = ParseHfConfig(R"({"model_type": "qwen2", "hidden_size": 64,
    "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
    "vocab_size": 100, "sliding_window": 32768, "use_sliding_window": false})",
                            "q/config.json");
  ASSERT_TRUE(qwen.has_value());
  EXPECT_EQ(qwen->sliding_window, 0);
}

TEST(HfConfig, BadLayerTypesNameTheKeyAndLine) {
  auto bad = ParseHfConfig(
      "{\"hidden_size\": 64, \"intermediate_size\": 128, \"num_hidden_layers\": 2,\n"
      "\"num_attention_heads\": 4, \"vocab_size\": 100, \"sliding_window\": 16,\n"
      "\"layer_types\": [\"full_attention\", \"local\"]}",
      "b/config.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("b/config.json:3: key 'layer_types'"), std::string::npos)
      << bad.error().message();
  auto short_list = ParseHfConfig(
      R"({"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
      "num_attention_heads": 4, "vocab_size": 100, "sliding_window": 16,
      "layer_types": ["full_attention"]})",
      "s/config.json");
  ASSERT_FALSE(short_list.has_value());
  EXPECT_NE(short_list.error().message().find("1 entries for 2 layers"), std::string::npos);
  auto mla = ParseHfConfig(R"({"hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
      "kv_lora_rank": 32, "qk_nope_head_dim": 16, "v_head_dim": 16})",
                           "m/config.json");
  ASSERT_FALSE(mla.has_value());
  EXPECT_NE(mla.error().message().find("key 'qk_rope_head_dim': missing"), std::string::npos)
      << mla.error().message();
}

}  // namespace
}  // namespace vgpu::estimate
