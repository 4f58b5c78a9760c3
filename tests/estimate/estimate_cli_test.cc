// `vgpu estimate` as a user runs it: the table, --json, the lists, and exit 2 with the reason for
// bad input (unknown model, malformed config.json, impossible parallel sizes, a sequence beyond
// the model's maximum).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "estimate/spec.h"
#include "support/run_command.h"

namespace {

using vgpu::testing::CommandResult;
using vgpu::testing::RunCommand;

CommandResult Estimate(const std::string& args) {
  return RunCommand(std::string(VGPU_BIN) + " estimate " + args);
}

TEST(EstimateCli, TableAndJsonAgree) {
  const CommandResult table = Estimate("--model llama-3-8b --gpu h100-80gb --concurrent 4");
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("fits h100-80gb"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("assumptions:"), std::string::npos);
  EXPECT_NE(table.out.find("vLLM starts"), std::string::npos);
  const CommandResult json = Estimate("--model llama-3-8b --gpu h100-80gb --concurrent 4 --json");
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const auto j = nlohmann::json::parse(json.out);
  EXPECT_EQ(j["serve"]["needed_tokens"], 4 * 8192);
  EXPECT_EQ(j["serve"]["bytes_per_token"], 131072);
  EXPECT_TRUE(j["placement"]["fits"].get<bool>());
  EXPECT_GT(j["gpumem_mib"].get<int64_t>(), 15 * 1024);
  char mib[32];
  std::snprintf(mib, sizeof mib, "slice of %lld MiB", (long long)j["gpumem_mib"].get<int64_t>());
  EXPECT_NE(table.out.find(mib), std::string::npos) << table.out;
}

TEST(EstimateCli, FitOnAGivenSlice) {
  // About 29 GiB with the margin: a 20 GiB slice is too small, a 40 GiB one holds it, and vLLM's
  // KV budget is computed from the slice's size (what it reports to vLLM).
  const CommandResult small =
      Estimate("--model llama-3-8b --max-model-len 8192 --slice-memory 20GiB --json");
  ASSERT_EQ(small.exit_code, 1) << small.err;  // does not fit: exit 1, the estimate printed
  const auto s = nlohmann::json::parse(small.out);
  EXPECT_FALSE(s["placement"]["fits_slice"].get<bool>());
  EXPECT_FALSE(s["fits"].get<bool>());
  const CommandResult big =
      Estimate("--model llama-3-8b --max-model-len 8192 --slice-memory 40GiB");
  ASSERT_EQ(big.exit_code, 0) << big.err;
  EXPECT_NE(big.out.find("slice of 40.00 GiB: fits"), std::string::npos) << big.out;
  EXPECT_NE(big.out.find("on a slice of 40.00 GiB: KV budget"), std::string::npos) << big.out;
  EXPECT_EQ(Estimate("--model llama-3-8b --gpu t4 --slice-memory 20GiB").exit_code, 2);
  EXPECT_EQ(Estimate("--model llama-3-8b --slice-memory 0").exit_code, 2);
}

TEST(EstimateCli, TrainingDoesNotFitOneGpu) {
  const CommandResult r = Estimate("--model llama-3-70b --mode full --seq-len 4096 --json");
  ASSERT_EQ(r.exit_code, 1) << r.err;  // as `vgpu mig plan` exits 1 when a request does not fit
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_FALSE(j["placement"]["fits"].get<bool>());
  EXPECT_NE(j["placement"]["why"].get<std::string>().find("more than any known GPU"),
            std::string::npos);
  // The three moments of a step, the peak being the largest.
  const auto& t = j["training"];
  const double peak = t["allocated_peak"].get<double>();
  EXPECT_DOUBLE_EQ(
      peak, std::max({t["start_of_backward"].get<double>(), t["end_of_backward"].get<double>(),
                      t["optimizer_step"].get<double>()}));
}

TEST(EstimateCli, DoesNotFitExitsOneAndSaysWhy) {
  // Too big for the GPU given.
  const CommandResult gpu = Estimate("--model llama-3-8b --gpu t4 --max-model-len 8192");
  EXPECT_EQ(gpu.exit_code, 1) << gpu.out;
  EXPECT_NE(gpu.out.find("does not fit: "), std::string::npos) << gpu.out;
  // vLLM does not start on the slice given.
  const CommandResult slice = Estimate("--model llama-3-8b --slice-memory 16GiB");
  EXPECT_EQ(slice.exit_code, 1) << slice.out;
  EXPECT_NE(slice.out.find("vLLM does not start"), std::string::npos) << slice.out;
  // Fits: 0. The exit codes are in --help.
  EXPECT_EQ(Estimate("--model llama-3-8b --gpu h100-80gb --max-model-len 8192").exit_code, 0);
  const CommandResult help = Estimate("--help");
  EXPECT_NE(help.out.find("1 when it does not"), std::string::npos) << help.out;
}

TEST(EstimateCli, TheCheckpointDtypeComesFromItsConfig) {
  // A DeepSeek-V3-style FP8 checkpoint: no --dtype needed, and the assumptions say where the
  // format came from.
  const std::string dir = ::testing::TempDir() + "/estimate_fp8";
  std::filesystem::create_directories(dir);
  {
    std::ofstream f(dir + "/config.json");
    f << R"({
  "model_type": "llama",
  "hidden_size": 4096, "intermediate_size": 14336, "max_position_embeddings": 8192,
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "vocab_size": 128256,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
    "weight_block_size": [128, 128]},
  "torch_dtype": "bfloat16"
})";
  }
  const CommandResult fp8 = Estimate("--model " + dir + " --json");
  ASSERT_EQ(fp8.exit_code, 0) << fp8.err;
  const CommandResult bf16 = Estimate("--model " + dir + " --dtype bf16 --json");
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const auto a = nlohmann::json::parse(fp8.out), b = nlohmann::json::parse(bf16.out);
  EXPECT_LT(a["per_gpu"]["weights"].get<double>(), 0.6 * b["per_gpu"]["weights"].get<double>());
  bool said = false;
  for (const auto& line : a["assumptions"]) {
    said = said || line.get<std::string>().find(
                       "config.json:6: quantization_config quant_method "
                       "fp8") != std::string::npos;
  }
  EXPECT_TRUE(said) << a["assumptions"].dump(1);
  std::filesystem::remove_all(dir);
}

TEST(EstimateCli, AbsurdShapesAreRefusedAtOnce) {
  // 10^8 layers: refused in well under a second, naming the key (it once ran 15 s at 1.8 GB).
  const std::string path = ::testing::TempDir() + "/estimate_layers.json";
  {
    std::ofstream f(path);
    f << R"({
  "num_hidden_layers": 100000000,
  "hidden_size": 4096,
  "num_attention_heads": 32,
  "intermediate_size": 11008,
  "vocab_size": 32000,
  "max_position_embeddings": 4096
}
)";
  }
  const auto start = std::chrono::steady_clock::now();
  const CommandResult r = Estimate("--model " + path);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":2: key 'num_hidden_layers': 100000000 is more than 4096"),
            std::string::npos)
      << r.err;
  EXPECT_LT(seconds, 2.0);
  std::remove(path.c_str());
}

TEST(EstimateCli, RecipesAndEncoderDecoderModels) {
  // torchtune's chunked loss lowers an 8B model's peak; a T5-family model trains and infers.
  auto peak = [](const std::string& extra) {
    const CommandResult r = Estimate(
        "--model llama-3-8b --mode full --seq-len 4096 --precision "
        "pure --checkpointing full --json " +
        extra);
    EXPECT_LE(r.exit_code, 1) << r.err;
    return nlohmann::json::parse(r.out)["training"]["start_of_backward"].get<double>();
  };
  EXPECT_NEAR((peak("") - peak("--loss chunked")) / (1024.0 * 1024 * 1024),
              4096.0 * 128256 * 9.5 / (1024.0 * 1024 * 1024), 1e-9);
  const CommandResult t5 =
      Estimate("--model mt0-base --mode lora --seq-len 512 --target-len 128 --batch 8");
  EXPECT_EQ(t5.exit_code, 0) << t5.err;
  EXPECT_NE(t5.out.find("encoder-decoder: 12 encoder and 12 decoder layers"), std::string::npos)
      << t5.out;
  const CommandResult serve = Estimate("--model mt0-base");
  EXPECT_EQ(serve.exit_code, 2);
  EXPECT_NE(serve.err.find("vLLM does not serve"), std::string::npos) << serve.err;
}

TEST(EstimateCli, BadInputExitsTwoWithTheReason) {
  struct Case {
    std::string args, message;
  } cases[] = {
      {"--model no-such-model", "model=no-such-model: unknown model"},
      {"--model llama-3-8b --tp 3",
       "tensor parallel size 3 does not divide the 32 attention heads"},
      {"--model llama-3-8b --mode full --pp 40", "pipeline parallel size 40 is more than the 32"},
      {"--model llama-3-8b --max-model-len 9000", "beyond the maximum of 8192"},
      {"--model llama-3-8b --mode lora --seq-len 9000", "beyond the maximum of 8192"},
      {"--model llama-3-8b --gpu-memory-utilization 1.2", "expected a fraction in (0, 1]"},
      {"--model llama-3-8b --gpu a200", "unknown GPU model"},
      {"--model llama-3-8b --zero 2", "ZeRO applies to training modes only"},
      {"", "model: not given"},
  };
  for (const Case& c : cases) {
    const CommandResult r = Estimate(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << ": " << r.err;
  }
}

TEST(EstimateCli, MalformedConfigNamesFileKeyAndLine) {
  const std::string path = ::testing::TempDir() + "/estimate_config.json";
  {
    std::ofstream f(path);
    f << "{\n  \"num_hidden_layers\": 32,\n  \"hidden_size\": -4096,\n}\n";
  }
  CommandResult r = Estimate("--model " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":4: not valid JSON"), std::string::npos) << r.err;
  {
    std::ofstream f(path);
    f << "{\n  \"num_hidden_layers\": 32,\n  \"hidden_size\": -4096\n}\n";
  }
  r = Estimate("--model " + path);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(path + ":3: key 'hidden_size': expected a positive integer"),
            std::string::npos)
      << r.err;
  std::remove(path.c_str());
}

TEST(EstimateCli, HelpListsAndValidate) {
  const CommandResult help = Estimate("--help");
  EXPECT_EQ(help.exit_code, 0);
  // Every annotation key is a flag, and every key the parser knows is offered.
  for (const std::string& key : vgpu::estimate::SpecKeys()) {
    EXPECT_NE(help.out.find("--" + key + " "), std::string::npos) << key;
  }
  const CommandResult models = Estimate("--list-models");
  EXPECT_EQ(models.exit_code, 0);
  EXPECT_NE(models.out.find("llama-3-8b"), std::string::npos);
  EXPECT_NE(models.out.find("https://huggingface.co/"), std::string::npos);
  const CommandResult gpus = Estimate("--list-gpus");
  EXPECT_NE(gpus.out.find("3g.40gb"), std::string::npos);
  const CommandResult v = Estimate(std::string("--validate ") + VGPU_MEASURED_POINTS);
  EXPECT_EQ(v.exit_code, 0) << v.err;
  EXPECT_NE(v.out.find("| vllm-12330-llama3-8b-kv | kv_tokens |"), std::string::npos);
  EXPECT_EQ(Estimate("--validate /nonexistent.json").exit_code, 2);
}

}  // namespace
