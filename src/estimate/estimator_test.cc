// The architecture table, the config.json reader and the estimator's bookkeeping.
#include "estimate/estimator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "estimate/hf_config.h"
#include "estimate/spec.h"

namespace vgpu::estimate {
namespace {

TEST(Architectures, EveryRowHasASourceAndAValidShape) {
  for (const Architecture& a : BundledArchitectures()) {
    EXPECT_FALSE(a.source.empty()) << a.name;
    EXPECT_EQ(a.heads % a.kv_heads, 0) << a.name;
    Inputs in;
    in.arch = a;
    if (a.EncoderDecoder()) in.mode = Mode::kInfer;  // vLLM does not serve them
    EXPECT_TRUE(Validate(in).ok()) << a.name << ": " << Validate(in).message();
  }
  EXPECT_TRUE(FindArchitecture("meta-llama/Llama-2-7b-hf").has_value());
  EXPECT_TRUE(FindArchitecture("Qwen/Qwen2.5-7B-Instruct").has_value());
  EXPECT_FALSE(FindArchitecture("no-such-model").has_value());
}

TEST(Architectures, ParameterCountsOfKnownModels) {
  // Parameter counts the model cards state: Llama-2-7B 6,738,415,616; Mistral-7B 7,241,732,096;
  // Qwen2.5-7B 7.61 B; OPT-125m 125,239,296; Llama-3-70B 70.55 B.
  EXPECT_EQ(ParamCounts(*FindArchitecture("llama-2-7b")).Total(), 6738415616.0);
  EXPECT_EQ(ParamCounts(*FindArchitecture("mistral-7b")).Total(), 7241732096.0);
  EXPECT_NEAR(ParamCounts(*FindArchitecture("qwen2.5-7b")).Total() / 1e9, 7.62, 0.01);
  EXPECT_EQ(ParamCounts(*FindArchitecture("opt-125m")).Total(), 125239296.0);
  EXPECT_NEAR(ParamCounts(*FindArchitecture("llama-3-70b")).Total() / 1e9, 70.55, 0.01);
}

constexpr const char* kLlamaConfig = R"({
  "architectures": ["LlamaForCausalLM"],
  "hidden_size": 4096,
  "intermediate_size": 14336,
  "max_position_embeddings": 8192,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "tie_word_embeddings": false,
  "vocab_size": 128256
})";

TEST(HfConfig, ReadsTheSameShapeAsTheTable) {
  auto a = ParseHfConfig(kLlamaConfig, "config.json");
  ASSERT_TRUE(a.has_value()) << a.error().message();
  EXPECT_EQ(ParamCounts(*a).Total(), ParamCounts(*FindArchitecture("llama-3-8b")).Total());
  EXPECT_EQ(a->max_positions, 8192);
}

TEST(HfConfig, MalformedFilesNameFileKeyAndLine) {
  auto broken =
      ParseHfConfig("{\n  \"hidden_size\": 4096,\n  \"vocab_size\": ,\n}", "m/config.json");
  ASSERT_FALSE(broken.has_value());
  EXPECT_NE(broken.error().message().find("m/config.json:3: not valid JSON"), std::string::npos)
      << broken.error().message();

  std::string wrong = kLlamaConfig;
  wrong.replace(wrong.find("4096"), 4, "\"4096\"");
  auto typed = ParseHfConfig(wrong, "config.json");
  ASSERT_FALSE(typed.has_value());
  EXPECT_NE(typed.error().message().find("config.json:3: key 'hidden_size': expected a positive "
                                         "integer, found \"4096\""),
            std::string::npos)
      << typed.error().message();

  std::string missing = kLlamaConfig;
  missing.replace(missing.find("\"vocab_size\""), 12, "\"vocab\"");
  auto absent = ParseHfConfig(missing, "config.json");
  ASSERT_FALSE(absent.has_value());
  EXPECT_NE(absent.error().message().find("key 'vocab_size': missing"), std::string::npos);

  std::string gqa = kLlamaConfig;
  gqa.replace(gqa.find("\"num_key_value_heads\": 8"), 24, "\"num_key_value_heads\": 7");
  auto heads = ParseHfConfig(gqa, "config.json");
  ASSERT_FALSE(heads.has_value());
  EXPECT_NE(heads.error().message().find("config.json:9: key 'num_key_value_heads'"),
            std::string::npos)
      << heads.error().message();

  EXPECT_FALSE(ParseHfConfig("[1, 2]", "x.json").has_value());
  EXPECT_FALSE(ReadHfConfig("/nonexistent/config.json").has_value());
}

Inputs Llama8b(Mode mode) {
  Inputs in;
  in.arch = *FindArchitecture("llama-3-8b");
  in.mode = mode;
  return in;
}

TEST(Estimator, RejectsImpossibleSetups) {
  Inputs in = Llama8b(Mode::kServe);
  in.tp = 3;
  EXPECT_NE(Validate(in).message().find("does not divide the 32 attention heads"),
            std::string::npos);
  in = Llama8b(Mode::kServe);
  in.max_model_len = 9000;
  EXPECT_NE(Validate(in).message().find("beyond the maximum of 8192"), std::string::npos);
  in = Llama8b(Mode::kFull);
  in.pp = 33;
  EXPECT_NE(Validate(in).message().find("more than the 32 layers"), std::string::npos);
  in = Llama8b(Mode::kFull);
  in.zero_stage = 4;
  EXPECT_FALSE(Validate(in).ok());
  in = Llama8b(Mode::kServe);
  in.gpu_memory_utilization = 1.5;
  EXPECT_FALSE(Validate(in).ok());
}

TEST(Estimator, TrainingStatesFollowZeroAndParallelism) {
  Inputs in = Llama8b(Mode::kFull);
  in.seq_len = 2048;
  const Estimate one = Compute(in);
  const double p = ParamCounts(in.arch).Total();
  auto sum = [](const ModelStates& m) { return m.weights + m.gradients + m.optimizer; };
  EXPECT_DOUBLE_EQ(sum(one.states), 16 * p);
  in.zero_stage = 3;
  in.dp = 8;
  const Estimate z3 = Compute(in);
  EXPECT_DOUBLE_EQ(sum(z3.states), 2 * p);  // 16 bytes over 8 ranks
  // FSDP's gathered root (embedding, head, final norm) and two layers come on top while the
  // passes run: at the start of the backward pass, with no gradients yet.
  const double layer = 2.5 * 4096.0 * 4096 + 3 * 4096.0 * 14336 + 2 * 4096;  // QKVO, MLP, norms
  const double root = 2 * 128256.0 * 4096 + 4096;
  EXPECT_DOUBLE_EQ(z3.moments[0], z3.states.weights + z3.states.optimizer + (root + 2 * layer) * 2 +
                                      z3.saved_activations +
                                      LossBackwardPeakBytes(2048, 128256, 1));
  in.zero_stage = 0;
  in.dp = 1;
  in.tp = 2;
  const Estimate tp2 = Compute(in);
  EXPECT_LT(tp2.states.weights, one.states.weights * 0.51);
  EXPECT_LT(tp2.saved_activations, one.saved_activations);
  // Full checkpointing keeps much less; FlashAttention off adds the s² scores.
  in.tp = 1;
  in.checkpointing = Checkpointing::kFull;
  EXPECT_LT(Compute(in).saved_activations, one.saved_activations / 10);
  in.checkpointing = Checkpointing::kNone;
  in.flash_attention = false;
  EXPECT_GT(Compute(in).saved_activations, one.saved_activations * 1.5);
}

// The peak is the largest of the three moments of a step, and the breakdown is that moment's.
TEST(Estimator, TrainingPeakIsTheLargestMoment) {
  Inputs in = Llama8b(Mode::kFull);
  in.seq_len = 2048;
  in.precision = Precision::kPure;
  in.checkpointing = Checkpointing::kFull;
  const Estimate e = Compute(in);
  const double p = ParamCounts(in.arch).Total();
  EXPECT_DOUBLE_EQ(e.allocated_peak, std::max({e.moments[0], e.moments[1], e.moments[2]}));
  EXPECT_DOUBLE_EQ(e.allocated_peak, e.per_gpu.weights + e.per_gpu.gradients + e.per_gpu.optimizer +
                                         e.per_gpu.activations);
  // Pure bf16 AdamW on one GPU: 2 + 2 + 4 bytes per parameter; the foreach step adds one
  // state (2 bytes) and the held fp32 logits: the step is the peak here.
  const double held = HeldLogitsBytes(2048, 128256, 1);
  EXPECT_DOUBLE_EQ(e.moments[2], 10 * p + held);
  EXPECT_DOUBLE_EQ(e.allocated_peak, e.moments[2]);
  in.optimizer = Optimizer::kAdamWFused;
  EXPECT_DOUBLE_EQ(Compute(in).moments[2], 8 * p + held);
}

// The optimizer step fused into the backward pass (torchtune's optimizer_in_bwd): the start of
// the backward pass is unchanged, but the gradients never exist all at once; at the end of the
// backward pass only the largest tensor's (the 128256 x 4096 embedding) bounds them, and no
// separate step follows. Outside training the flag is refused.
TEST(Estimator, OptimizerInBackwardHoldsOneGradientAtATime) {
  Inputs in = Llama8b(Mode::kFull);
  in.seq_len = 2048;
  in.precision = Precision::kPure;
  in.checkpointing = Checkpointing::kFull;
  const Estimate stored = Compute(in);
  in.optimizer_in_backward = true;
  const Estimate fused = Compute(in);
  const double p = ParamCounts(in.arch).Total();
  EXPECT_DOUBLE_EQ(ParamCounts(in.arch).largest_tensor, 128256.0 * 4096);
  EXPECT_DOUBLE_EQ(fused.moments[0], stored.moments[0]);
  const double largest = 128256.0 * 4096;
  // All gradients (2 bytes) replaced by one tensor's, plus one AdamW state of it (foreach step).
  EXPECT_DOUBLE_EQ(fused.moments[1], stored.moments[1] - 2 * p + 2 * largest + 2 * largest);
  EXPECT_DOUBLE_EQ(fused.moments[2], 2 * p + 4 * p + HeldLogitsBytes(2048, 128256, 1));
  EXPECT_LT(fused.allocated_peak, stored.allocated_peak);
  // Over ZeRO-2 the tensor's gradient and its step's state are partitioned like the rest.
  in.zero_stage = 2;
  in.dp = 4;
  const Estimate fused_z2 = Compute(in);
  in.optimizer_in_backward = false;
  const Estimate stored_z2 = Compute(in);
  EXPECT_DOUBLE_EQ(fused_z2.moments[1],
                   stored_z2.moments[1] - 2 * p / 4 + 2 * largest / 4 + 2 * largest / 4);
  Inputs serve = Llama8b(Mode::kServe);
  serve.optimizer_in_backward = true;
  EXPECT_NE(Validate(serve).message().find("applies to training"), std::string::npos);
  // The annotation key: true/false, anything else named with its key.
  auto parsed = InputsFromSpec({{"model", "llama-3-8b"},
                                {"mode", "full"},
                                {"seq-len", "2048"},
                                {"optimizer-in-backward", "true"}},
                               false);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().message();
  EXPECT_TRUE(parsed->optimizer_in_backward);
  auto bad = InputsFromSpec(
      {{"model", "llama-3-8b"}, {"mode", "full"}, {"optimizer-in-backward", "sometimes"}}, false);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("optimizer-in-backward"), std::string::npos);
}

TEST(Estimator, ActivationsDoNotScaleWithTheParameterCount) {
  Inputs in = Llama8b(Mode::kFull);
  in.seq_len = 2048;
  Inputs big = in;
  big.arch.vocab *= 4;  // 1.6 B more parameters, same layers
  EXPECT_DOUBLE_EQ(Compute(in).saved_activations, Compute(big).saved_activations);
}

TEST(Estimator, LoraAndQloraFreezeTheBase) {
  Inputs in = Llama8b(Mode::kLora);
  in.seq_len = 2048;
  const Estimate lora = Compute(in);
  // q and v of 32 layers, rank 8: 8·(4096+4096) + 8·(4096+1024) per layer.
  EXPECT_DOUBLE_EQ(lora.trainable_params, 32.0 * (8 * 8192 + 8 * 5120));
  in.mode = Mode::kQlora;
  const Estimate qlora = Compute(in);
  EXPECT_LT(qlora.per_gpu.weights, lora.per_gpu.weights * 0.4);
  EXPECT_GT(qlora.per_gpu.weights, lora.per_gpu.weights * 0.25);
}

TEST(Estimator, ServeBudgetAndPlacement) {
  Inputs in = Llama8b(Mode::kServe);
  in.gpu = FindGpu("h100-80gb");
  in.gpu_memory_utilization = 0.9;
  const Estimate e = Compute(in);
  ASSERT_TRUE(e.serve.has_value());
  EXPECT_EQ(e.serve->bytes_per_token, 131072);
  EXPECT_TRUE(e.serve->starts);
  const double expected_budget =
      in.gpu->memory * 0.9 - e.per_gpu.weights - e.per_gpu.activations - e.per_gpu.framework;
  EXPECT_DOUBLE_EQ(e.serve->budget, expected_budget);
  EXPECT_EQ(e.serve->capacity_tokens, int64_t(expected_budget / (2 * kMiB)) * 16);
  // The request is what vLLM needs for one 8192-token sequence, divided by the utilisation.
  const Placement p = Place(e);
  EXPECT_TRUE(p.fits_gpu);
  EXPECT_NEAR(p.request / kGiB,
              (e.per_gpu.weights + e.per_gpu.activations + e.per_gpu.framework + 8192.0 * 131072) *
                  1.1 / 0.9 / kGiB,
              0.01);
  ASSERT_TRUE(p.mig.has_value());
  EXPECT_EQ(p.mig->name, "3g.40gb");  // about 21 GiB: more than the 20 GB profiles
  EXPECT_EQ(p.compute_percent, 30);
  // A 4090 cannot hold a 70B model.
  Inputs big = in;
  big.arch = *FindArchitecture("llama-3-70b");
  big.gpu = FindGpu("rtx-4090");
  const Estimate no = Compute(big);
  EXPECT_FALSE(no.serve->starts);
  EXPECT_NE(no.serve->why_not.find("no memory left"), std::string::npos);
  EXPECT_FALSE(Place(no).fits_gpu);
  big.gpu.reset();
  EXPECT_FALSE(Place(Compute(big)).gpu.has_value());  // 141 GB of weights: no single GPU
}

}  // namespace
}  // namespace vgpu::estimate
