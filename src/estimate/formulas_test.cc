// The formulas against the published reference numbers they follow.
#include "estimate/formulas.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "estimate/architecture.h"

namespace vgpu::estimate {
namespace {

// DeepSpeed prints its estimates as "%.2fGB" of bytes / 2^30.
std::string AsPrinted(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", bytes / kGiB);
  return buf;
}

// estimate_zero3_model_states_mem_needs_all_live(t5-small, 1 GPU, 1 node), as printed in
// https://blog.csdn.net/u012327567/article/details/132278598 ("60M total params, 16M largest
// layer params"). t5-small: 60,506,624 parameters; the largest layer is the shared embedding,
// 32128 x 512 = 16,449,536.
TEST(DeepSpeed, Zero3ReproducesThePrintedT5SmallTable) {
  const double p = 60506624, l = 32128.0 * 512;
  struct Row {
    bool offload, offload_params, zero_init;
    const char* cpu;
    const char* gpu;
  } rows[] = {
      {true, true, true, "1.52", "0.06"},   {true, true, false, "1.52", "0.06"},
      {true, false, true, "1.35", "0.17"},  {true, false, false, "1.35", "0.17"},
      {false, false, true, "0.09", "1.08"}, {false, false, false, "0.34", "1.08"},
  };
  for (const Row& r : rows) {
    const DeepSpeedEstimate e =
        DeepSpeedZero3(p, l, 1, 1, r.offload, r.offload_params, r.zero_init);
    EXPECT_EQ(AsPrinted(e.cpu), r.cpu) << r.offload << r.offload_params << r.zero_init;
    EXPECT_EQ(AsPrinted(e.gpu), r.gpu) << r.offload << r.offload_params << r.zero_init;
  }
}

TEST(DeepSpeed, Zero2IsTwentyBytesPerParameterOnOneGpu) {
  // stage_1_and_2.py: gpu = 2P + int(18P / N) without offload; 2P with it.
  const double p = 7e9;
  EXPECT_EQ(DeepSpeedZero2(p, 1, 1, false).gpu, 20 * p);
  EXPECT_EQ(DeepSpeedZero2(p, 8, 1, false).gpu, 2 * p + 18 * p / 8);
  EXPECT_EQ(DeepSpeedZero2(p, 8, 2, true).gpu, 2 * p);
  EXPECT_EQ(DeepSpeedZero2(p, 8, 2, true).cpu, p * 64 * 1.5);  // max(4·16, 16)
  EXPECT_EQ(DeepSpeedZero2(p, 2, 1, true).cpu, p * 16 * 1.5);  // max(4·2, 16)
  EXPECT_EQ(DeepSpeedZero2(p, 4, 1, false).cpu, p * 4 * 4 * 1.5);
}

TEST(Zero, StagesPartitionWhatThePaperSays) {
  // [ZeRO] Figure 1: 7.5 B parameters, N_d = 64, K = 12: baseline 120 GB, P_os 31.4 GB,
  // P_os+g 16.6 GB, P_os+g+p 1.9 GB (decimal GB).
  const double psi = 7.5e9;
  auto total = [&](int stage) {
    const ModelStates m = ZeroModelStates(psi, 2, 2, 12, stage, 64);
    return (m.weights + m.gradients + m.optimizer) / 1e9;
  };
  EXPECT_DOUBLE_EQ(total(0), 120);
  EXPECT_NEAR(total(1), 31.4, 0.05);
  EXPECT_NEAR(total(2), 16.6, 0.05);
  EXPECT_NEAR(total(3), 1.9, 0.05);
  EXPECT_EQ(MixedPrecisionAdamBytesPerParam(), 16);
}

TEST(Vllm, PageSizeOfFullAttention) {
  // Llama-3-8B: 8 kv heads of 128, bf16, block 16: 2 · 16 · 8 · 128 · 2 = 65536 bytes a layer.
  EXPECT_EQ(KvPageBytes(16, 8, 128, 2), 65536);
  // 32 layers: 128 KiB per token; 2 MiB per block.
  EXPECT_EQ(KvBytesPerToken(32, 8, 128, 2), 131072);
  // TP 4 of 4 kv heads leaves one per rank; fp8 KV halves the page.
  EXPECT_EQ(KvPageBytes(16, HeadsPerRank(4, 4), 128, 1), 4096);
  // kv heads fewer than TP ranks are replicated.
  EXPECT_EQ(HeadsPerRank(8, 16), 1);
  // Budget and capacity: 80 GiB · 0.9 − 15 − 1 − 0.25 GiB = 55.75 GiB; 55.75 GiB / 2 MiB =
  // 28544 blocks = 456704 tokens.
  const double budget = VllmKvBudget(80 * kGiB, 0.9, 15 * kGiB, 1 * kGiB, 0.25 * kGiB);
  EXPECT_DOUBLE_EQ(budget, 55.75 * kGiB);
  EXPECT_EQ(VllmKvBlocks(budget, 65536, 32), 28544);
  EXPECT_EQ(VllmKvTokens(budget, 65536, 32, 16), 456704);
  EXPECT_EQ(VllmKvTokens(-1, 65536, 32, 16), 0);
}

TEST(Korthikanti, GptLayerIsThirtyFourPlusScoreTerm) {
  // GPT-3 175B (s=2048, h=12288, a=96), b=1: sbh · (34 + 5·96·2048/12288) = sbh · 114.
  const double s = 2048, h = 12288, a = 96;
  EXPECT_DOUBLE_EQ(KorthikantiLayerBytes(s, 1, h, a), s * h * 114);
  EXPECT_DOUBLE_EQ(KorthikantiLayerBytesTpSp(s, 1, h, a, 8), s * h * 114 / 8);
  EXPECT_DOUBLE_EQ(KorthikantiSelectiveLayerBytes(s, 1, h), 34 * s * h);
  EXPECT_DOUBLE_EQ(CheckpointedLayerBytes(s, 1, h), 2 * s * h);
  // The generic accounting gives exactly the paper's number for the paper's layer.
  LayerShape gpt{h, h, h, a, 4 * h, false, true, false};
  for (double b : {1.0, 4.0}) {
    EXPECT_DOUBLE_EQ(LayerActivationBytes(gpt, s, b, 1), KorthikantiLayerBytes(s, b, h, a));
  }
  // FlashAttention removes the score term; without dropout it is 2·a·s²·b.
  gpt.flash_attention = true;
  EXPECT_DOUBLE_EQ(LayerActivationBytes(gpt, s, 1, 1), KorthikantiSelectiveLayerBytes(s, 1, h));
}

TEST(Weights, QuantisedBytesPerElement) {
  EXPECT_EQ(BytesPerElement(WeightFormat::kBf16), 2);
  // NF4 with double quantisation: 4.127 bits [QLORA].
  EXPECT_NEAR(BytesPerElement(WeightFormat::kNf4) * 8, 4.127, 0.001);
  EXPECT_NEAR(BytesPerElement(WeightFormat::kInt4Group128) * 8, 4.156, 0.001);
  // Llama-3-8B has 8,030,261,248 parameters (model card: "8B"): 14.96 GiB in bf16.
  const ParamCount p = ParamCounts(*FindArchitecture("meta-llama/Meta-Llama-3-8B"));
  EXPECT_EQ(p.Total(), 8030261248.0);
  EXPECT_EQ(LoraAdapterParams(4096, 4096, 8), 65536);
}

// Why the seed's formulas are not used.
TEST(SeedFormulas, AreNotUsed) {
  // 1. The seed counts 2 (weights) + 2 (gradients) + 4 ("optimizer = 2 x param bytes") = 8 bytes
  //    per parameter for mixed-precision Adam. Adam keeps two fp32 moments and mixed precision an
  //    fp32 master copy: 16 bytes [ZeRO §3], 20 in DeepSpeed's own estimator (fp32 gradients).
  const double seed_bytes_per_param = 2 + 2 + 2 * 2;
  EXPECT_EQ(MixedPrecisionAdamBytesPerParam(), 2 * seed_bytes_per_param);
  EXPECT_EQ(DeepSpeedZero2(1, 1, 1, false).gpu, 20);
  // 8 bytes is right only without a master copy and with 16-bit states (pure bf16 AdamW).
  EXPECT_EQ(2 + 2 + OptimizerStateBytesPerParam(Optimizer::kAdamW, 2), seed_bytes_per_param);

  // 2. The seed's activations are seq x batch x params / 1000 bytes. Activations scale with the
  //    hidden size and layers (s·b·h per layer) and, without FlashAttention, with a·s²·b; not
  //    with the parameter count. Llama-3-8B, b=1, s=2048: the seed gives 16.4 GB, [KORT]'s
  //    formula 30.6 GB; at s=8192 the seed grows 4x, [KORT] 12.4x (the s² term).
  const Architecture llama = *FindArchitecture("llama-3-8b");
  const double params = ParamCounts(llama).Total();
  auto seed = [&](double s) { return s * 1 * params / 1000; };
  auto kort = [&](double s) {
    return llama.layers * KorthikantiLayerBytes(s, 1, llama.hidden, llama.heads);
  };
  EXPECT_NEAR(seed(2048) / 1e9, 16.4, 0.05);
  EXPECT_NEAR(kort(2048) / 1e9, 30.6, 0.05);
  EXPECT_NEAR(kort(8192) / kort(2048), 12.4, 0.05);
  EXPECT_DOUBLE_EQ(seed(8192) / seed(2048), 4);
  // 3. Checkpointing is not a flat "/4": it keeps 2·s·b·h of the [KORT] 34·s·b·h (+ scores).
  EXPECT_DOUBLE_EQ(
      KorthikantiSelectiveLayerBytes(2048, 1, 4096) / CheckpointedLayerBytes(2048, 1, 4096), 17);
  // 4. ZeRO is not a flat "/8": stage 3 over N ranks divides the 16 bytes by N.
  const ModelStates z = ZeroModelStates(1, 2, 2, 12, 3, 64);
  EXPECT_DOUBLE_EQ(z.weights + z.gradients + z.optimizer, 16.0 / 64);
}

TEST(TrainingMoments, LossStepAndFsdpTermsByHand) {
  // Llama-2-7B, 4 x 2048 tokens, vocabulary 32000: 262,144,000 logits; 16 B each at the start
  // of the backward pass (fp32 logits, log_softmax output, two gradients), 4 B held after.
  EXPECT_EQ(LossBackwardPeakBytes(8192, 32000, 1), 8192.0 * 32000 * 16);
  EXPECT_EQ(HeldLogitsBytes(8192, 32000, 1), 8192.0 * 32000 * 4);
  EXPECT_EQ(LossBackwardPeakBytes(8192, 32000, 2), 8192.0 * 32000 * 8);  // vocabulary split
  // foreach AdamW: one more state of the (sharded) parameters; fused and 8-bit steps: none.
  EXPECT_EQ(OptimizerStepTempBytes(Optimizer::kAdamW, 1e9, 2), 2e9);
  EXPECT_EQ(OptimizerStepTempBytes(Optimizer::kAdamWFused, 1e9, 2), 0);
  EXPECT_EQ(OptimizerStepTempBytes(Optimizer::kAdamW8bit, 1e9, 2), 0);
  // FSDP: root of 262.1 M and layers of 202.4 M parameters in bf16: root + 2 layers gathered,
  // root + 1 layer of unsharded gradients; a frozen base has no gradients.
  const FsdpGathered g = FsdpGatheredBytes(262.1e6, 202.4e6, 2, true);
  EXPECT_DOUBLE_EQ(g.forward_params, (262.1e6 + 2 * 202.4e6) * 2);
  EXPECT_DOUBLE_EQ(g.backward_params, g.forward_params);
  EXPECT_DOUBLE_EQ(g.backward_grads, (262.1e6 + 202.4e6) * 2);
  EXPECT_EQ(FsdpGatheredBytes(262.1e6, 202.4e6, 2, false).backward_grads, 0);
  // A SwiGLU layer's backward: 3 gradients of 8192 x 11008 in bf16.
  LayerShape llama2;
  llama2.intermediate = 11008;
  llama2.gated_mlp = true;
  EXPECT_EQ(LayerBackwardGradBytes(llama2, 2048, 4, 1), 3.0 * 2 * 8192 * 11008);
}

}  // namespace
}  // namespace vgpu::estimate
