// `vgpu estimate` as a user runs it: the table, --json, the lists, and exit 2 with the reason for
// bad input (unknown model, malformed config.json, impossible parallel sizes, a sequence beyond
// the model's maximum).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "estimate/spec.h"
#include "run_command.h"

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
  ASSERT_EQ(small.exit_code, 0) << small.err;
  const auto s = nlohmann::json::parse(small.out);
  EXPECT_FALSE(s["placement"]["fits_slice"].get<bool>());
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
  ASSERT_EQ(r.exit_code, 0) << r.err;
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
