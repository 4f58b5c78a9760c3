#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "run_command.h"
#include "sanitizer_env.h"

namespace vgpu {
namespace {

using testing::RunCommand;

const std::string kVgpu = VGPU_BIN;

TEST(Cli, NoArgumentsIsBadInput) {
  auto r = RunCommand(kVgpu);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Usage"), std::string::npos);
}

TEST(Cli, HelpListsCommands) {
  auto r = RunCommand(kVgpu + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("version"), std::string::npos);
}

TEST(Cli, UnknownCommandIsBadInput) {
  auto r = RunCommand(kVgpu + " frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, VersionAndItsHelp) {
  auto r = RunCommand(kVgpu + " version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("vgpu ", 0), 0u);
  // The commit this build was configured from (a 40-digit hash in a git checkout, else
  // "unknown") and the build type.
  std::smatch m;
  EXPECT_TRUE(std::regex_search(r.out, m, std::regex("\ncommit: ([0-9a-f]{40}|unknown)\n")))
      << r.out;
  EXPECT_NE(r.out.find("\nbuild type: " VGPU_BUILD_TYPE "\n"), std::string::npos) << r.out;
  EXPECT_EQ(RunCommand(kVgpu + " --version").out, r.out);
  EXPECT_EQ(RunCommand(kVgpu + " version --help").exit_code, 0);
  auto bad = RunCommand(kVgpu + " version --bogus");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--bogus"), std::string::npos);
}

TEST(Cli, HelpCommandPrintsThatCommandsHelp) {
  auto run = RunCommand(kVgpu + " help run");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, RunCommand(kVgpu + " run --help").out);
  EXPECT_NE(run.out.find("--memory"), std::string::npos);
  auto share = RunCommand(kVgpu + " help bench share");
  EXPECT_EQ(share.exit_code, 0);
  EXPECT_NE(share.out.find("--tenant"), std::string::npos) << share.out;
  EXPECT_EQ(RunCommand(kVgpu + " help").exit_code, 0);
  auto bad = RunCommand(kVgpu + " help frobnicate");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, BenchAloneIsBadInputWithUsage) {
  auto r = RunCommand(kVgpu + " bench");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Usage: vgpu bench share"), std::string::npos) << r.err;
  EXPECT_EQ(RunCommand(kVgpu + " bench --help").exit_code, 0);
  EXPECT_EQ(RunCommand(kVgpu + " bench tetris").exit_code, 2);
}

// A fixture with its own slice registry, for commands that would create slices.
class CliRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/vgpu-cli-test-" + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // `vgpu run` preloads libvgpu.so into its command: in an asan build the runtime goes first.
  testing::CommandResult Vgpu(const std::string& args) {
    return RunCommand(testing::SanitizerCommandPrefix() + "VGPU_STATE_DIR=" + dir_ + "/state " +
                      kVgpu + " " + args);
  }
  void ExpectBadInput(const std::string& args, const std::string& message) {
    auto r = Vgpu(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("ran"), std::string::npos) << "the command ran: " << args;
  }
  std::string dir_;
};

TEST_F(CliRun, EmptyValuesAreBadInput) {
  ExpectBadInput("run --memory '' -- echo ran", "--memory: empty value");
  ExpectBadInput("run --cores '' -- echo ran", "--cores: empty value");
  ExpectBadInput("run --memory= -- echo ran", "--memory");
  ExpectBadInput("run --device '' -- echo ran", "--device: empty value");
  ExpectBadInput("run --priority '' -- echo ran", "--priority: empty value");
  ExpectBadInput("sim --pods ''", "--pods: empty value");
  ExpectBadInput("sim --csv ''", "--csv: empty value");
  ExpectBadInput("top --once --state-dir ''", "--state-dir: empty value");
  ExpectBadInput("node --node-name ''", "--node-name: empty value");
  ExpectBadInput("scheduler --kubeconfig ''", "--kubeconfig: empty value");
  ExpectBadInput("bench share --tenant ''", "--tenant: empty value");
  // Where "" means something (here: no node slices), it is still accepted.
  EXPECT_EQ(Vgpu("top --once --slice-dir ''").exit_code, 0);
}

TEST_F(CliRun, BadValuesOfEveryCommandExitTwo) {
  ExpectBadInput("run --memory 4XB -- echo ran", "--memory: \"4XB\": unknown unit");
  ExpectBadInput("run --cores 0 -- echo ran", "--cores");
  ExpectBadInput("run --device x -- echo ran", "--device");
  ExpectBadInput("run --time-slice 1h -- echo ran", "--time-slice");
  ExpectBadInput("run --latency-slack 2s -- echo ran", "--latency-slack");
  ExpectBadInput("top --interval 0", "--interval");
  ExpectBadInput("node --sim --sim-devices 0 --node-name n", "--sim-devices: must be 1..16, got 0");
  ExpectBadInput("node --sim --sim-devices 17 --node-name n", "--sim-devices");
  ExpectBadInput("node --sim-devices 2 --node-name n", "--sim-devices: needs --sim");
  ExpectBadInput("node --node-name n --pods-file /dev/zero", "--pods-file: not a regular file");
  ExpectBadInput("node --node-name n --log-level 9", "--log-level");
  ExpectBadInput("scheduler --threads 0", "--threads");
  ExpectBadInput("scheduler --kubeconfig /dev/zero", "/dev/zero: is a device, not a file");
  ExpectBadInput("node --node-name n --kubeconfig /dev/zero",
                 "--kubeconfig: kubeconfig: /dev/zero");
  ExpectBadInput("bench share --tenant a:max=300", "--cores");
  ExpectBadInput("bench share", "--tenant");
  ExpectBadInput("bench share --sim --tenant a:max=30 --records /proc/vgpu-none", "--records");
  ExpectBadInput("version extra", "extra");
}

// A long value is cut in the message instead of echoed whole.
TEST_F(CliRun, LongValuesAreCut) {
  auto r = Vgpu("run --memory " + std::string(100000, '7') + "XB -- echo ran");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_LT(r.err.size(), 400u) << r.err.substr(0, 400);
}

// Sizes: a single letter and the i forms are binary (HAMi-core's "8g"), a B without i decimal.
// Checked in the limits file vgpu run writes (the run needs no GPU: `cat` never touches one).
TEST_F(CliRun, SizeSuffixes) {
  struct Case {
    const char* flag;
    const char* bytes;
  } cases[] = {{"8G", "8589934592"},   {"8g", "8589934592"},    {"8Gi", "8589934592"},
               {"8GiB", "8589934592"}, {"8GB", "8000000000"},   {"4096m", "4294967296"},
               {"512MB", "512000000"}, {"1.5GiB", "1610612736"}};
  for (const Case& c : cases) {
    auto r = Vgpu(std::string("run --memory ") + c.flag + " -- sh -c 'cat \"$VGPU_LIMITS_FILE\"'");
    ASSERT_EQ(r.exit_code, 0) << c.flag << ": " << r.err;
    EXPECT_NE(r.out.find(std::string("\nmemory=") + c.bytes + "\n"), std::string::npos)
        << c.flag << ":\n"
        << r.out;
  }
  // The rule is stated in --help.
  auto help = Vgpu("run --help");
  EXPECT_NE(help.out.find("8GB = 8x10^9 bytes (SI)"), std::string::npos) << help.out;
}

// The latency slack reaches the slice's limits file (docs/compute.md, "The latency slack").
TEST_F(CliRun, LatencySlackGoesIntoTheLimitsFile) {
  auto r = Vgpu("run --priority high --latency-slack 2ms -- sh -c 'cat \"$VGPU_LIMITS_FILE\"'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nlatency_slack=2000000ns\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace vgpu
