#include <gtest/gtest.h>

#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "sanitizer_env.h"
#include "support/run_command.h"

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

// --kill-after takes what its help promises (0s-1h), hours included.
TEST_F(CliRun, KillAfterTakesHours) {
  auto help = Vgpu("run --help");
  EXPECT_NE(help.out.find("0s-1h"), std::string::npos) << help.out;
  EXPECT_EQ(Vgpu("run --kill-after 1h -- true").exit_code, 0)
      << Vgpu("run --kill-after 1h -- true").err;
  EXPECT_EQ(Vgpu("run --kill-after 60m -- true").exit_code, 0);
  ExpectBadInput("run --kill-after 2h -- echo ran", "--kill-after: \"2h\": must be at most 1h");
}

// --cores states its range in one wording, whichever command or value.
TEST_F(CliRun, CoresRangeIsWordedOnce) {
  const std::string wording = "must be 1-100 (percent of each GPU's time, e.g. 30 or 30%)";
  ExpectBadInput("run --cores 0 -- echo ran", "--cores: \"0\": " + wording);
  ExpectBadInput("run --cores 101 -- echo ran", "--cores: \"101\": " + wording);
  ExpectBadInput("run --cores x -- echo ran", "--cores: \"x\": not a number: " +
                                                  std::string("must be an integer 1-100 (percent"));
  ExpectBadInput("resize --slice s --cores 0", "--cores: \"0\": " + wording);
  ExpectBadInput("resize --slice s --cores 101", "--cores: \"101\": " + wording);
  ExpectBadInput("bench share --tenant a:max=300", "--cores: \"300\": " + wording);
  ExpectBadInput("bench share --tenant a:max=0", "--cores: \"0\": " + wording);
  for (const char* command : {"run", "resize"}) {
    auto help = Vgpu(std::string(command) + " --help");
    EXPECT_NE(help.out.find("percent of each GPU's time, 1-100 (30 or 30%)"), std::string::npos)
        << command << ": " << help.out;
  }
}

// run and top take --sim-config as node, dra and mig do: only with --sim, and only a file.
TEST_F(CliRun, SimConfigGoesWithSim) {
  const std::string conf = dir_ + "/devices.conf";
  std::ofstream(conf) << "model=h100 memory=8GiB\n";
  ExpectBadInput("run --sim-config " + conf + " -- echo ran", "--sim-config: needs --sim");
  ExpectBadInput("top --once --sim-config " + conf, "--sim-config: needs --sim");
  ExpectBadInput("top --once --sim --sim-config " + dir_ + "/none.conf",
                 "--sim-config: no such file: " + dir_ + "/none.conf");
  ExpectBadInput("run --sim --sim-config " + dir_ + " -- echo ran",
                 "--sim-config: not a regular file: " + dir_);
  for (const char* command : {"run", "top"}) {
    EXPECT_NE(Vgpu(std::string(command) + " --help").out.find("--sim-config"), std::string::npos)
        << command;
  }
}

// Without an NVIDIA driver, commands that look for GPUs point at --sim.
TEST_F(CliRun, NoDriverPointsAtSim) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (nvml != nullptr) {
    dlclose(nvml);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  const std::string hint = "--sim runs on the simulated GPU";
  auto top = Vgpu("top --once --slice-dir ''");
  EXPECT_EQ(top.exit_code, 0);
  // top wraps the reason at 80 columns; read it as one line.
  const std::string reason = std::regex_replace(top.out, std::regex("\n  "), " ");
  EXPECT_NE(reason.find("no NVIDIA driver found; " + hint), std::string::npos) << top.out;
  auto run = Vgpu("run -- true");
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_NE(run.err.find(hint), std::string::npos) << run.err;
  auto status = Vgpu("mig status");
  EXPECT_NE(status.exit_code, 0);
  EXPECT_NE(status.err.find(hint), std::string::npos) << status.err;
  // With --sim there is no such hint.
  EXPECT_EQ(Vgpu("run --sim -- true").err.find(hint), std::string::npos);
}

// vgpu bench mig says why it exits 1: the rows where our placement accepted fewer requests than
// first-fit or HAMi, exactly those its JSON shows.
TEST_F(CliRun, BenchMigExitOneSaysWhy) {
  auto help = Vgpu("bench mig --help");
  EXPECT_NE(help.out.find("1 otherwise (the rows where it does not are named"), std::string::npos)
      << help.out;
  for (const char* args : {"--seeds 1 --arrivals 50 --load 0.5", "--seeds 2 --arrivals 30 --load 2",
                           "--seeds 1 --arrivals 20 --load 3"}) {
    auto r = Vgpu(std::string("bench mig --json ") + args);
    ASSERT_LE(r.exit_code, 1) << args << ": " << r.err;
    const std::string json = r.out;
    // Rows where ours (the worse of its two mixes) is behind first-fit or HAMi.
    std::regex row(
        "\"model\": \"([^\"]+)\",\\s*\"mix\": \"([^\"]+)\",\\s*"
        "\"ours\": \\{\\s*\"accepted\": (\\d+)[^}]*\\},\\s*"
        "\"ours-node-mix\": \\{\\s*\"accepted\": (\\d+)[^}]*\\},\\s*"
        "\"first-fit\": \\{\\s*\"accepted\": (\\d+)[^}]*\\},\\s*"
        "\"hami\": \\{\\s*\"accepted\": (\\d+)");
    int behind = 0, rows = 0;
    for (std::sregex_iterator it(json.begin(), json.end(), row), end; it != end; ++it, ++rows) {
      const std::smatch& m = *it;
      const int ours = std::min(std::stoi(m[3]), std::stoi(m[4]));
      if (ours < std::stoi(m[5]) || ours < std::stoi(m[6])) {
        ++behind;
        EXPECT_NE(r.err.find(m[1].str() + "/" + m[2].str() + " (ours " + std::to_string(ours)),
                  std::string::npos)
            << args << ": " << r.err;
      }
    }
    ASSERT_GT(rows, 0) << json;
    EXPECT_EQ(r.exit_code, behind > 0 ? 1 : 0) << args;
    if (behind > 0) {
      EXPECT_NE(r.err.find("exit 1: our placement accepted fewer requests than first-fit or HAMi "
                           "on " +
                           std::to_string(behind) + " of " + std::to_string(rows)),
                std::string::npos)
          << r.err;
    } else {
      EXPECT_EQ(r.err.find("exit 1"), std::string::npos) << r.err;
    }
  }
}

// vgpu analyze anomalies prints times as ISO 8601 in UTC (the JSON keeps the seconds too).
TEST_F(CliRun, AnomaliesPrintTimes) {
  const std::string csv = dir_ + "/util.csv";
  {
    std::ofstream f(csv);
    f << "value,timestamp,container_ip\n";
    for (int i = 0; i < 300; ++i) {
      f << (i == 150 ? 95.0 : 10.0 + (i % 7) * 0.1) << "," << 1662858720 + 60 * i << ",pod-a\n";
    }
  }
  auto text = Vgpu("analyze anomalies --util " + csv);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("start .. end (UTC)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("util  pod-a  spike  2022-09-11T03:42:00Z .. 2022-09-11T03:42:00Z"),
            std::string::npos)
      << text.out;
  EXPECT_EQ(text.out.find("1662867720"), std::string::npos) << text.out;
  auto json = Vgpu("analyze anomalies --json --util " + csv);
  EXPECT_NE(json.out.find("\"start_time\": \"2022-09-11T03:42:00Z\""), std::string::npos)
      << json.out;
  EXPECT_NE(json.out.find("\"start\": 1662867720"), std::string::npos) << json.out;
}

// A log line is never cut: vgpu node logs the inventory of 16 simulated GPUs, several KiB of
// JSON, whole.
TEST_F(CliRun, NodeLogsTheWholeInventory) {
  if (!std::filesystem::exists(std::filesystem::path(kVgpu).parent_path().parent_path() /
                               "lib/simgpu/libnvidia-ml.so.1")) {
    GTEST_SKIP() << "the simulated GPU is not built";
  }
  std::ofstream(dir_ + "/pods.json") << "{\"items\": []}\n";
  auto r = RunCommand("VGPU_SIMGPU_STATE=" + dir_ + "/simstate VGPU_SIMGPU_LOG_LEVEL=1 timeout 4 " +
                      kVgpu + " node --sim --sim-devices 16 --node-name n --kubelet-dir " + dir_ +
                      "/kubelet --slice-dir " + dir_ + "/slices --arbiter-dir " + dir_ +
                      "/arbiter --pods-file " + dir_ +
                      "/pods.json --metrics-listen 127.0.0.1:0 --log-level 3");
  const std::string key = "annotation vgpu.io/gpu-inventory=";
  const size_t at = r.err.find(key);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string line = r.err.substr(at + key.size(), r.err.find('\n', at) - at - key.size());
  EXPECT_GT(line.size(), 2048u);
  EXPECT_EQ(line.back(), '}') << line.substr(line.size() - 80);
  size_t gpus = 0;
  for (size_t p = line.find("\"uuid\":\"GPU-"); p != std::string::npos;
       p = line.find("\"uuid\":\"GPU-", p + 1)) {
    ++gpus;
  }
  EXPECT_EQ(gpus, 16u) << line;
}

}  // namespace
}  // namespace vgpu
