// Training recipes: torchtune's chunked cross-entropy, torch.compile, and the breakdown taken at
// the peak moment.
#include <gtest/gtest.h>

#include <string>

#include "estimate/estimator.h"
#include "estimate/report.h"
#include "estimate/spec.h"

namespace vgpu::estimate {
namespace {

Estimate Train(Spec spec) {
  spec.emplace("model", "llama-3-8b");
  spec.emplace("mode", "full");
  spec.emplace("batch", "1");
  spec.emplace("seq-len", "4096");
  spec.emplace("precision", "pure");
  auto in = InputsFromSpec(spec, false);
  EXPECT_TRUE(in.has_value()) << in.error().message();
  return Compute(*in);
}

TEST(LossRecipes, BytesPerLogit) {
  // One fp32 cross-entropy, the logits held by the loop: 16 B per logit at the loss's backward,
  // 4 held to the step's end; deleted after the loss: 12 and 0.
  EXPECT_EQ(LossBytesPerLogit(LossKind::kFp32, 8, false, true).at_backward, 16);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kFp32, 8, false, true).held, 4);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kFp32, 8, false, false).at_backward, 12);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kFp32, 8, false, false).held, 0);
  // torchtune's 8 chunks: 2 (16-bit logits) + 4 (saved fp32 outputs) + 4/8 (one chunk's upcast).
  EXPECT_EQ(LossBytesPerLogit(LossKind::kChunked, 8, false, false).at_backward, 6.5);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kChunked, 8, false, false).held, 0);
  // One chunk: its backward (4 + 8) outweighs the forward's end (6 + 4).
  EXPECT_EQ(LossBytesPerLogit(LossKind::kChunked, 1, false, false).at_backward, 12);
  // Held 16-bit chunks add their 2 B to the backward pass: 2 + 4 + 8/8.
  EXPECT_EQ(LossBytesPerLogit(LossKind::kChunked, 8, false, true).at_backward, 7);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kChunked, 8, false, true).held, 2);
  // Compiled with the upcast: the input and its gradient only.
  EXPECT_EQ(LossBytesPerLogit(LossKind::kFp32, 8, true, true).at_backward, 8);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kFp32, 8, true, false).held, 0);
  EXPECT_EQ(LossBytesPerLogit(LossKind::kChunked, 8, true, false).at_backward, 2.25);
}

TEST(LossRecipes, TheChunkedLossRemovesMostOfTheLossFromAnEightBPeak) {
  // Llama-3-8B, 4096 tokens: the unchunked fp32 loss is 4096 x 128256 x 16 B = 7.83 GiB at the
  // start of the backward pass; torchtune's chunked loss keeps 6.5 B of them.
  const double logits = 4096.0 * 128256;
  const Estimate fp32 = Train({{"checkpointing", "full"}});
  const Estimate chunked = Train({{"checkpointing", "full"}, {"loss", "chunked"}});
  EXPECT_NEAR(logits * 16 / kGiB, 7.83, 0.01);
  EXPECT_DOUBLE_EQ(fp32.moments[0] - chunked.moments[0], logits * (16 - 6.5));
  // Nothing is held after the chunked loss: the end of the backward pass loses the 4 B too.
  EXPECT_DOUBLE_EQ(fp32.moments[1] - chunked.moments[1], logits * 4);
  EXPECT_LT(chunked.allocated_peak, fp32.allocated_peak);
  // Deleting the fp32 logits after the loss (torchtune's recipes since the chunked loss) saves
  // 4 B at the start of the backward pass and 4 B after it.
  const Estimate deleted = Train({{"checkpointing", "full"}, {"logits-held", "false"}});
  EXPECT_DOUBLE_EQ(fp32.moments[0] - deleted.moments[0], logits * 4);
  EXPECT_DOUBLE_EQ(fp32.moments[1] - deleted.moments[1], logits * 4);
  // 16 chunks keep less than 8.
  const Estimate sixteen =
      Train({{"checkpointing", "full"}, {"loss", "chunked"}, {"loss-chunks", "16"}});
  EXPECT_DOUBLE_EQ(chunked.moments[0] - sixteen.moments[0], logits * (4.0 / 8 - 4.0 / 16));
}

TEST(CompileRecipes, ACompiledModelSavesTheMlpInputsOnly) {
  // No checkpointing: each layer's gated MLP keeps gate and up (2 of 3 tensors of s x i).
  const Estimate eager = Train({{"checkpointing", "none"}});
  const Estimate compiled = Train({{"checkpointing", "none"}, {"compile", "model"}});
  EXPECT_DOUBLE_EQ(eager.saved_activations - compiled.saved_activations, 32 * 2.0 * 4096 * 14336);
  // With full checkpointing only the layer inputs are kept: no change.
  EXPECT_DOUBLE_EQ(Train({{"checkpointing", "full"}}).allocated_peak,
                   Train({{"checkpointing", "full"}, {"compile", "model"}}).allocated_peak);
  // Compiling the loss halves the fp32 loss's 16 B per logit; "all" does both.
  const Estimate loss = Train({{"checkpointing", "full"}, {"compile", "loss"}});
  EXPECT_DOUBLE_EQ(Train({{"checkpointing", "full"}}).moments[0] - loss.moments[0],
                   4096.0 * 128256 * 8);
  EXPECT_DOUBLE_EQ(Train({{"checkpointing", "none"}, {"compile", "all"}}).saved_activations,
                   compiled.saved_activations);
}

TEST(CompileRecipes, BadRecipeValuesAreRefused) {
  auto bad = [](Spec spec) {
    spec.emplace("model", "llama-3-8b");
    auto in = InputsFromSpec(spec, false);
    return in.has_value() ? std::string() : in.error().message();
  };
  EXPECT_NE(bad({{"mode", "full"}, {"loss", "fused"}}).find("loss=fused: expected one of fp32"),
            std::string::npos);
  EXPECT_NE(bad({{"mode", "full"}, {"loss-chunks", "8"}}).find("needs loss=chunked"),
            std::string::npos);
  EXPECT_NE(bad({{"mode", "full"}, {"loss", "chunked"}, {"loss-chunks", "0"}})
                .find("loss-chunks=0: must be in 1..1024"),
            std::string::npos);
  EXPECT_NE(bad({{"mode", "full"}, {"compile", "yes"}}).find("compile=yes: expected one of none"),
            std::string::npos);
  EXPECT_NE(bad({{"mode", "serve"}, {"compile", "model"}}).find("apply to training"),
            std::string::npos);
}

TEST(PeakMoment, TheBreakdownSaysWhichMomentItIs) {
  // torchtune's low-memory full fine-tune (the step in the backward pass, a paged optimizer):
  // the start of the backward pass is the peak, where no gradient exists yet; the table must not
  // present that as "gradients 0" without saying so.
  const Estimate e = Train(
      {{"checkpointing", "full"}, {"optimizer", "paged-adamw"}, {"optimizer-in-backward", "true"}});
  ASSERT_EQ(e.peak_moment, 0);
  EXPECT_EQ(e.per_gpu.gradients, 0);
  EXPECT_GT(e.states.gradients, 0);
  const Placement p = Place(e);
  const std::string table = RenderTable(e, p);
  EXPECT_NE(table.find("per GPU at the peak, the start of the backward pass"), std::string::npos)
      << table;
  // The gradients held: one tensor's at a time (the 128256 x 4096 embedding's, 0.98 GiB).
  EXPECT_NE(table.find("model states per GPU: weights 14.96, gradients 0.98, optimizer state 0.00"),
            std::string::npos)
      << table;
  // Another setup peaks elsewhere, and says so: foreach AdamW's step.
  const Estimate step = Train({{"checkpointing", "full"}});
  ASSERT_EQ(step.peak_moment, 2);
  EXPECT_NE(RenderTable(step, Place(step)).find("per GPU at the peak, the optimizer step:"),
            std::string::npos);
  EXPECT_EQ(ToJson(step, Place(step))["per_gpu_at"], "optimizer_step");
  const auto j = ToJson(e, p);
  EXPECT_EQ(j["per_gpu_at"], "start_of_backward");
  EXPECT_EQ(j["training"]["peak_moment"], "start_of_backward");
  EXPECT_EQ(j["training"]["model_states"]["gradients"].get<double>(), e.states.gradients);
  // A serving estimate has no moments and keeps its plain header.
  auto serve = InputsFromSpec({{"model", "llama-3-8b"}}, false);
  const Estimate s = Compute(*serve);
  EXPECT_EQ(s.peak_moment, -1);
  EXPECT_NE(RenderTable(s, Place(s)).find("pp 1); per GPU:\n"), std::string::npos);
  EXPECT_FALSE(ToJson(s, Place(s)).contains("per_gpu_at"));
}

}  // namespace
}  // namespace vgpu::estimate
