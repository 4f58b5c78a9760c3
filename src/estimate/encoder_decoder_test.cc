// Encoder-decoder models (T5, mT5/mT0, Flan-T5): parameters, the config reader, what each mode
// counts, and what is refused.
#include <gtest/gtest.h>

#include <string>

#include "estimate/estimator.h"
#include "estimate/hf_config.h"
#include "estimate/spec.h"

namespace vgpu::estimate {
namespace {

double Params(const char* name) { return ParamCounts(*FindArchitecture(name)).Total(); }

TEST(EncoderDecoder, ParameterCountsOfPublishedCheckpoints) {
  // The checkpoints' own counts (Hugging Face's safetensors metadata; PEFT's
  // print_trainable_parameters prints the same "all params" less the adapters, below).
  EXPECT_EQ(Params("t5-small"), 60506624.0);
  EXPECT_EQ(Params("t5-base"), 222903552.0);
  EXPECT_EQ(Params("flan-t5-base"), 247577856.0);
  EXPECT_EQ(Params("mt0-small"), 300176768.0);
  EXPECT_EQ(Params("mt0-base"), 582401280.0);
  EXPECT_EQ(Params("mt0-large"), 1229581312.0);
  EXPECT_NEAR(Params("mt0-xxl") / 1e9, 12.92, 0.01);
}

TEST(EncoderDecoder, LoraAdaptersOnEveryAttention) {
  // PEFT's LoRA on q and v reaches the encoder's self-attention and the decoder's self- and
  // cross-attention. "trainable params: 18874368 || all params: 11154206720" for Flan-T5-XXL,
  // r 16 (https://www.philschmid.de/fine-tune-flan-t5-peft); t5-small, r 8: 294,912.
  auto xxl = InputsFromSpec(
      {{"model", "flan-t5-xxl"}, {"mode", "lora"}, {"lora-rank", "16"}, {"seq-len", "512"}}, false);
  ASSERT_TRUE(xxl.has_value()) << xxl.error().message();
  const Estimate e = Compute(*xxl);
  EXPECT_EQ(e.trainable_params, 18874368.0);
  EXPECT_EQ(e.params.Total() + e.trainable_params, 11154206720.0);
  auto small = InputsFromSpec({{"model", "t5-small"}, {"mode", "lora"}}, false);
  EXPECT_EQ(Compute(*small).trainable_params, 294912.0);
}

constexpr const char* kMt0BaseConfig = R"({
  "architectures": ["MT5ForConditionalGeneration"],
  "d_ff": 2048,
  "d_kv": 64,
  "d_model": 768,
  "dropout_rate": 0.1,
  "feed_forward_proj": "gated-gelu",
  "is_encoder_decoder": true,
  "model_type": "mt5",
  "num_decoder_layers": 12,
  "num_heads": 12,
  "num_layers": 12,
  "relative_attention_num_buckets": 32,
  "tie_word_embeddings": false,
  "torch_dtype": "float32",
  "vocab_size": 250112
})";

TEST(EncoderDecoder, ReadsT5Configs) {
  auto a = ParseHfConfig(kMt0BaseConfig, "mt0-base/config.json");
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(a->encoder_layers, 12);
  EXPECT_EQ(a->layers, 12);
  EXPECT_EQ(ParamCounts(*a).Total(), Params("mt0-base"));
  EXPECT_EQ(a->format, WeightFormat::kFp32);  // mT0's checkpoints are fp32
  // Other encoder-decoder families are refused, not read as decoder-only.
  auto bart = ParseHfConfig(R"({"model_type": "bart", "is_encoder_decoder": true,
      "num_hidden_layers": 12, "hidden_size": 768, "num_attention_heads": 12,
      "intermediate_size": 3072, "vocab_size": 50265})",
                            "bart/config.json");
  ASSERT_FALSE(bart.has_value());
  EXPECT_NE(bart.error().message().find("model_type \"bart\" is not modelled"), std::string::npos)
      << bart.error().message();
  auto huge = ParseHfConfig(R"({"model_type": "t5", "num_layers": 100000000, "d_model": 512,
      "num_heads": 8, "d_ff": 2048, "vocab_size": 32128})",
                            "t5/config.json");
  ASSERT_FALSE(huge.has_value());
  EXPECT_NE(huge.error().message().find("key 'num_layers': 100000000 is more than 4096"),
            std::string::npos)
      << huge.error().message();
}

TEST(EncoderDecoder, TrainingCountsBothStacksAndTheDecoderLoss) {
  // mT0-base, 512 encoder and 128 decoder tokens, batch 8, no checkpointing.
  auto in = InputsFromSpec({{"model", "mt0-base"},
                            {"mode", "full"},
                            {"batch", "8"},
                            {"seq-len", "512"},
                            {"target-len", "128"},
                            {"precision", "pure"}},
                           false);
  ASSERT_TRUE(in.has_value()) << in.error().message();
  EXPECT_FALSE(in->flash_attention);  // T5's position bias: scores are computed explicitly
  const Estimate e = Compute(*in);
  // The loss is over the decoder's 8 x 128 tokens of a 250112-token vocabulary: 16 B each.
  const double loss = 8.0 * 128 * 250112 * 16;
  // Saved: 12 encoder layers at 512 tokens, 12 decoder layers at 128 with cross-attention to
  // the 512 encoder tokens, and the encoder's output.
  LayerShape shape;
  shape.hidden = 768;
  shape.q_dim = shape.kv_dim = 768;
  shape.heads = 12;
  shape.intermediate = 2048;
  shape.gated_mlp = true;
  shape.dropout = true;
  shape.softmax_bytes = 4;
  shape.mlp_dropout = true;
  const double saved = 12 * LayerActivationBytes(shape, 512, 8, 1) +
                       12 * (LayerActivationBytes(shape, 128, 8, 1) +
                             CrossAttentionActivationBytes(shape, 128, 512, 8, 1)) +
                       2.0 * 512 * 8 * 768;
  EXPECT_DOUBLE_EQ(e.saved_activations, saved);
  EXPECT_DOUBLE_EQ(e.moments[0], e.states.weights + e.states.optimizer + saved + loss);
  // A longer target costs more; the encoder's length alone does not change the loss.
  auto longer = *in;
  longer.target_len = 256;
  EXPECT_GT(Compute(longer).moments[0], e.moments[0]);
}

TEST(EncoderDecoder, InferenceCachesSelfAndCrossAttention) {
  // HF generate: each of the 12 decoder layers caches K and V of the 128 decoder tokens and of
  // the 512 encoder tokens: 2 x 768 x 2 B per token and layer.
  auto in = InputsFromSpec(
      {{"model", "mt0-base"}, {"mode", "infer"}, {"seq-len", "512"}, {"target-len", "128"}}, false);
  ASSERT_TRUE(in.has_value()) << in.error().message();
  EXPECT_EQ(Compute(*in).per_gpu.kv_cache, 2.0 * 768 * 2 * 12 * (128 + 512));
}

TEST(EncoderDecoder, WhatIsRefused) {
  auto message = [](Spec spec) {
    auto in = InputsFromSpec(spec, false);
    return in.has_value() ? std::string() : in.error().message();
  };
  EXPECT_NE(message({{"model", "mt0-base"}}).find("vLLM does not serve"), std::string::npos);
  EXPECT_NE(message({{"model", "mt0-base"}, {"mode", "full"}, {"pp", "2"}})
                .find("pipeline parallelism is not modelled"),
            std::string::npos);
  EXPECT_NE(message({{"model", "llama-3-8b"}, {"mode", "full"}, {"target-len", "128"}})
                .find("--target-len applies to encoder-decoder models"),
            std::string::npos);
  // Relative positions do not bound the length: 4096 tokens for a model of n_positions 512.
  EXPECT_EQ(message({{"model", "t5-base"}, {"mode", "full"}, {"seq-len", "4096"}}), "");
}

}  // namespace
}  // namespace vgpu::estimate
