// `vgpu mig profiles` and `vgpu mig plan`: output, JSON, exit codes and bad input.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <string>

#include "support/run_command.h"

namespace vgpu {
namespace {

using testing::RunCommand;

const std::string kVgpu = VGPU_BIN;

TEST(MigCli, ProfilesTableAndJson) {
  auto r = RunCommand(kVgpu + " mig profiles --model H200");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("3g.71gb"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("{0,4}:4"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("unconfirmed"), std::string::npos) << r.out;
  auto j = RunCommand(kVgpu + " mig profiles --model 'NVIDIA H100 80GB HBM3' --json");
  ASSERT_EQ(j.exit_code, 0) << j.err;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc["model"], "H100-80GB");
  ASSERT_EQ(doc["profiles"].size(), 7u);
  EXPECT_EQ(doc["profiles"][6]["name"], "7g.80gb");
  EXPECT_EQ(doc["profiles"][6]["sm_count"], 132);
  EXPECT_EQ(doc["profiles"][6]["placements"][0]["size"], 8);
  EXPECT_EQ(doc["profiles"][1]["resource"], "nvidia.com/mig-1g.10gb.me");
}

// Models by exact name: a GH200 prints its own table, an H100 PCIe its 114-SM table; a
// MIG-capable model without a table, or a shorthand, exits 2 saying why.
TEST(MigCli, ProfilesOfTheExactModelOnly) {
  auto gh = RunCommand(kVgpu + " mig profiles --model 'NVIDIA GH200 480GB' --json");
  ASSERT_EQ(gh.exit_code, 0) << gh.err;
  const auto doc = nlohmann::json::parse(gh.out);
  EXPECT_EQ(doc["model"], "GH200-96GB");
  EXPECT_EQ(doc["profiles"][0]["name"], "1g.12gb");
  EXPECT_EQ(doc["profiles"][6]["name"], "7g.96gb");
  EXPECT_EQ(doc["pci_device_ids"][0], "0x234210DE");
  auto pcie = RunCommand(kVgpu + " mig profiles --model 'NVIDIA H100 PCIe' --json");
  ASSERT_EQ(pcie.exit_code, 0) << pcie.err;
  EXPECT_EQ(nlohmann::json::parse(pcie.out)["sm_count"], 114);
  auto untabled = RunCommand(kVgpu + " mig profiles --model 'NVIDIA GH200 144G HBM3e'");
  EXPECT_EQ(untabled.exit_code, 2);
  EXPECT_NE(untabled.err.find("vgpu has no MIG table for the NVIDIA GH200 144G HBM3e"),
            std::string::npos)
      << untabled.err;
  auto shorthand = RunCommand(kVgpu + " mig profiles --model H100");
  EXPECT_EQ(shorthand.exit_code, 2);
  EXPECT_NE(shorthand.err.find("unknown model 'H100' (known: A30,"), std::string::npos)
      << shorthand.err;
  auto a30 = RunCommand(kVgpu + " mig profiles --model A30");
  ASSERT_EQ(a30.exit_code, 0) << a30.err;
  EXPECT_NE(a30.out.find("4 memory slices, 4 compute slices"), std::string::npos) << a30.out;
  EXPECT_NE(a30.out.find("2/4"), std::string::npos) << a30.out;
}

TEST(MigCli, PlanPlacesOrNamesTheBlockingSlices) {
  auto ok = RunCommand(kVgpu + " mig plan --model H200 --layout 3g.71gb@0 --add 2g.35gb --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  const auto doc = nlohmann::json::parse(ok.out);
  EXPECT_TRUE(doc["all_fit"].get<bool>());
  EXPECT_EQ(doc["placed"][0]["start"], 4);
  EXPECT_EQ(doc["result"], "3g.71gb@0,2g.35gb@4");
  auto no = RunCommand(kVgpu + " mig plan --model H200 --layout 3g.71gb@0,1g.18gb@4 --add 2g.35gb");
  EXPECT_EQ(no.exit_code, 1);
  EXPECT_NE(no.out.find("2g.35gb      -> does not fit"), std::string::npos) << no.out;
  EXPECT_NE(no.out.find("start 4: memory slices 4 taken by 1g.18gb@4"), std::string::npos)
      << no.out;
  EXPECT_NE(no.out.find("start 0: memory slices 0-1 taken by 3g.71gb@0"), std::string::npos)
      << no.out;
  // Three profiles that fit only together in the right places.
  auto three = RunCommand(kVgpu + " mig plan --model H200 --add 1g.35gb,2g.35gb,3g.71gb --json");
  ASSERT_EQ(three.exit_code, 0) << three.out << three.err;
  auto max = RunCommand(kVgpu + " mig plan --model H200 --layout 4g.71gb@0 --add 4g.71gb");
  EXPECT_EQ(max.exit_code, 1);
  EXPECT_NE(max.out.find("start 0: memory slices 0-3 taken by 4g.71gb@0"), std::string::npos)
      << max.out;
}

TEST(MigCli, BadInputExits2NamingTheItem) {
  const auto err = [](const std::string& args) {
    auto r = RunCommand(kVgpu + " mig " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out;
    return r.err;
  };
  EXPECT_NE(err("profiles --model T4").find("--model: unknown model 'T4'"), std::string::npos);
  EXPECT_NE(err("plan --model H200 --add 1g.10gb").find("H200 has no MIG profile '1g.10gb'"),
            std::string::npos);
  EXPECT_NE(err("plan --model H200 --layout 3g.71gb@0,2g.35gb@2 --add 1g.18gb")
                .find("--layout: 2g.35gb@2 overlaps 3g.71gb@0 on memory slices 2-3"),
            std::string::npos);
  EXPECT_NE(err("plan --model H200 --layout 3g.71gb@0,3g.71gb@4,3g.71gb@0 --add 1g.18gb")
                .find("--layout:"),
            std::string::npos);
  EXPECT_NE(err("plan --model H200 --layout 2g.35gb@1 --add 1g.18gb").find("cannot start at"),
            std::string::npos);
  EXPECT_NE(err("plan --model H200 --layout 1g.18gb+me@0,1g.18gb+me@2 --add 1g.18gb")
                .find("at most 1 1g.18gb+me"),
            std::string::npos);
  EXPECT_NE(err("plan --model H200").find("--add"), std::string::npos);
  EXPECT_NE(err("plan --model H200 --add 1g.18gb --rule best").find("--rule"), std::string::npos);
  EXPECT_NE(err("frobnicate").find("unknown subcommand 'frobnicate'"), std::string::npos);
  EXPECT_NE(err("").find("no subcommand"), std::string::npos);
}

TEST(MigCli, Help) {
  auto group = RunCommand(kVgpu + " mig --help");
  EXPECT_EQ(group.exit_code, 0);
  EXPECT_NE(group.out.find("profiles"), std::string::npos);
  EXPECT_NE(group.out.find("plan"), std::string::npos);
  for (const char* sub : {"profiles", "plan"}) {
    auto r = RunCommand(kVgpu + " mig " + sub + " --help");
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("--model"), std::string::npos) << sub;
  }
  EXPECT_EQ(RunCommand(kVgpu + " help mig plan").out, RunCommand(kVgpu + " mig plan --help").out);
}

}  // namespace
}  // namespace vgpu

namespace vgpu {
namespace {

TEST(MigCli, BenchMigReportsEveryMixAndOursIsNotWorse) {
  // The documented run (docs/mig.md): 20 sequences of 5000 arrivals per model and mix.
  auto r = testing::RunCommand(kVgpu + " bench mig --json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto doc = nlohmann::json::parse(r.out);
  EXPECT_TRUE(doc["ours_best"].get<bool>());
  ASSERT_EQ(doc["rows"].size(), 6u);  // 2 models x 3 mixes
  for (const auto& row : doc["rows"]) {
    EXPECT_GE(row["ours"]["accepted"], row["first-fit"]["accepted"]) << row.dump();
    EXPECT_GE(row["ours"]["accepted"], row["hami"]["accepted"]) << row.dump();
    EXPECT_EQ(row["ours"]["arrivals"], 100000);
    // The scheduler's variant: the mix of the instances the GPU holds.
    EXPECT_GE(row["ours-node-mix"]["accepted"], row["first-fit"]["accepted"]) << row.dump();
    EXPECT_GE(row["ours-node-mix"]["accepted"], row["hami"]["accepted"]) << row.dump();
  }
  EXPECT_EQ(testing::RunCommand(kVgpu + " bench mig --model T4").exit_code, 2);
  EXPECT_EQ(testing::RunCommand(kVgpu + " bench mig --help").exit_code, 0);
}

}  // namespace
}  // namespace vgpu
