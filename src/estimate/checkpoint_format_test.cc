// The checkpoint's weight format as config.json states it (quantization_config, torch_dtype),
// the default of --dtype; and the shape limits that refuse an absurd config before any work.
#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "estimate/estimator.h"
#include "estimate/hf_config.h"
#include "estimate/spec.h"

namespace vgpu::estimate {
namespace {

// A Llama-shaped config with `extra` keys spliced in at the top.
std::string LlamaConfig(const std::string& extra, int layers = 32) {
  return "{\n" + extra + (extra.empty() ? "" : ",\n") +
         "  \"hidden_size\": 4096,\n"
         "  \"intermediate_size\": 14336,\n"
         "  \"max_position_embeddings\": 8192,\n"
         "  \"model_type\": \"llama\",\n"
         "  \"num_attention_heads\": 32,\n"
         "  \"num_hidden_layers\": " +
         std::to_string(layers) +
         ",\n"
         "  \"num_key_value_heads\": 8,\n"
         "  \"vocab_size\": 128256\n}";
}

WeightFormat FormatOf(const std::string& extra) {
  auto a = ParseHfConfig(LlamaConfig(extra), "config.json");
  EXPECT_TRUE(a.has_value()) << extra << ": " << a.error().message();
  EXPECT_TRUE(a->format_error.empty()) << extra << ": " << a->format_error;
  return a->format;
}

TEST(CheckpointFormat, FromQuantizationConfig) {
  // DeepSeek-V3's config.json.
  EXPECT_EQ(FormatOf(R"("quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
      "quant_method": "fp8", "weight_block_size": [128, 128]})"),
            WeightFormat::kFp8);
  EXPECT_EQ(FormatOf(R"("quantization_config": {"quant_method": "fbgemm_fp8"})"),
            WeightFormat::kFp8);
  // GPTQ and AWQ checkpoints (TheBloke's, Qwen's -GPTQ-Int4 / -AWQ) as AutoGPTQ and AutoAWQ
  // write them.
  EXPECT_EQ(FormatOf(R"("quantization_config": {"bits": 4, "group_size": 128, "desc_act": false,
      "quant_method": "gptq", "sym": true})"),
            WeightFormat::kInt4Group128);
  EXPECT_EQ(FormatOf(R"("quantization_config": {"bits": 8, "group_size": 128,
      "quant_method": "gptq"})"),
            WeightFormat::kInt8);
  EXPECT_EQ(FormatOf(R"("quantization_config": {"bits": 4, "group_size": 128,
      "quant_method": "awq", "version": "gemm", "zero_point": true})"),
            WeightFormat::kInt4Group128);
  // bitsandbytes, as transformers' BitsAndBytesConfig.to_dict() saves it.
  EXPECT_EQ(FormatOf(R"("quantization_config": {"quant_method": "bitsandbytes",
      "load_in_4bit": true, "load_in_8bit": false, "bnb_4bit_quant_type": "nf4"})"),
            WeightFormat::kNf4);
  EXPECT_EQ(FormatOf(R"("quantization_config": {"quant_method": "bitsandbytes",
      "load_in_4bit": false, "load_in_8bit": true})"),
            WeightFormat::kInt8);
  // compressed-tensors (llm-compressor's FP8 and W4A16 checkpoints).
  EXPECT_EQ(FormatOf(R"("quantization_config": {"quant_method": "compressed-tensors",
      "config_groups": {"group_0": {"weights": {"num_bits": 8, "type": "float"}}}})"),
            WeightFormat::kFp8);
  EXPECT_EQ(FormatOf(R"("quantization_config": {"quant_method": "compressed-tensors",
      "config_groups": {"group_0": {"weights": {"num_bits": 4, "type": "int"}}}})"),
            WeightFormat::kInt4Group128);
  // quantization_config wins over torch_dtype (a GPTQ checkpoint says float16 too).
  EXPECT_EQ(FormatOf(R"("torch_dtype": "float16",
      "quantization_config": {"bits": 4, "quant_method": "gptq"})"),
            WeightFormat::kInt4Group128);
}

TEST(CheckpointFormat, FromTorchDtype) {
  EXPECT_EQ(FormatOf(R"("torch_dtype": "bfloat16")"), WeightFormat::kBf16);
  EXPECT_EQ(FormatOf(R"("torch_dtype": "float16")"), WeightFormat::kBf16);
  EXPECT_EQ(FormatOf(R"("torch_dtype": "float32")"), WeightFormat::kFp32);
  EXPECT_EQ(FormatOf(R"("dtype": "float32")"), WeightFormat::kFp32);  // transformers >= 4.56
  auto none = ParseHfConfig(LlamaConfig(""), "config.json");
  ASSERT_TRUE(none.has_value());
  EXPECT_EQ(none->format, WeightFormat::kBf16);
  EXPECT_TRUE(none->format_source.empty());
}

TEST(CheckpointFormat, UnmodelledFormatsNeedAnExplicitDtype) {
  auto a = ParseHfConfig(LlamaConfig(R"("quantization_config": {"quant_method": "mxfp4"})"),
                         "m/config.json");
  ASSERT_TRUE(a.has_value());
  EXPECT_NE(a->format_error.find("m/config.json:2: quantization_config quant_method mxfp4"),
            std::string::npos)
      << a->format_error;
  auto gptq3 = ParseHfConfig(LlamaConfig(R"("quantization_config": {"bits": 3,
      "quant_method": "gptq"})"),
                             "config.json");
  ASSERT_TRUE(gptq3.has_value());
  EXPECT_NE(gptq3->format_error.find("3 bits"), std::string::npos);
  auto bad = ParseHfConfig(LlamaConfig(R"("quantization_config": 4)"), "config.json");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("config.json:2: key 'quantization_config'"),
            std::string::npos)
      << bad.error().message();
}

TEST(CheckpointFormat, TheBundledDeepSeekV3IsFp8) {
  // Its published checkpoint is FP8: the estimate without --dtype equals the one with dtype=fp8
  // and is about half the bf16 one.
  auto implicit = InputsFromSpec({{"model", "deepseek-v3"}, {"tp", "16"}, {"pp", "2"}}, false);
  auto fp8 = InputsFromSpec({{"model", "deepseek-v3"}, {"tp", "16"}, {"pp", "2"}, {"dtype", "fp8"}},
                            false);
  auto bf16 = InputsFromSpec(
      {{"model", "deepseek-v3"}, {"tp", "16"}, {"pp", "2"}, {"dtype", "bf16"}}, false);
  ASSERT_TRUE(implicit && fp8 && bf16);
  EXPECT_EQ(implicit->weights, WeightFormat::kFp8);
  EXPECT_NE(implicit->weights_source.find("quant_method fp8"), std::string::npos);
  EXPECT_EQ(Compute(*implicit).per_gpu.weights, Compute(*fp8).per_gpu.weights);
  EXPECT_LT(Compute(*implicit).per_gpu.weights, 0.55 * Compute(*bf16).per_gpu.weights);
  // Full fine-tuning an FP8 checkpoint is refused with the reason and the way out.
  auto full =
      InputsFromSpec({{"model", "deepseek-v3"}, {"mode", "full"}, {"seq-len", "4096"}}, false);
  ASSERT_FALSE(full.has_value());
  EXPECT_NE(full.error().message().find("the checkpoint's format"), std::string::npos)
      << full.error().message();
  EXPECT_NE(full.error().message().find("--dtype bf16"), std::string::npos);
  // An -FP8 name is the publisher's FP8 checkpoint; the plain name stays 16-bit.
  auto qwen = InputsFromSpec({{"model", "Qwen/Qwen3-235B-A22B-FP8"}, {"tp", "4"}}, false);
  ASSERT_TRUE(qwen.has_value()) << qwen.error().message();
  EXPECT_EQ(qwen->weights, WeightFormat::kFp8);
  EXPECT_EQ(InputsFromSpec({{"model", "qwen3-235b-a22b"}, {"tp", "4"}}, false)->weights,
            WeightFormat::kBf16);
}

TEST(ShapeLimits, AnAbsurdConfigIsRefusedAtOnceNamingTheKey) {
  const auto start = std::chrono::steady_clock::now();
  auto a = ParseHfConfig(LlamaConfig("", 100000000), "m/config.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(a.has_value());
  EXPECT_NE(a.error().message().find(
                "m/config.json:7: key 'num_hidden_layers': 100000000 is more than 4096"),
            std::string::npos)
      << a.error().message();
  EXPECT_LT(seconds, 0.5);
  // The same limits hold for any architecture the estimator is given.
  Inputs in;
  in.arch = *FindArchitecture("llama-3-8b");
  in.arch.vocab = 1 << 23;
  const Status s = Validate(in);
  EXPECT_NE(s.message().find("vocab_size is 8388608, more than 4194304"), std::string::npos)
      << s.message();
  // Every bundled model is within them.
  for (const Architecture& b : BundledArchitectures()) EXPECT_TRUE(CheckShape(b).ok()) << b.name;
}

}  // namespace
}  // namespace vgpu::estimate
