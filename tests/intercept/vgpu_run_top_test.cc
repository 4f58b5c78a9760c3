// `vgpu run` and `vgpu top` end to end, on the simulated GPU.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "shm/region_file.h"
#include "support/wait_for.h"
#include "vgpu_cli_fixture.h"

namespace vgpu {
namespace {

using testing::ChildProcess;
using testing::RunToCompletion;

constexpr uint64_t kMiB = 1ULL << 20;

class RunTopTest : public testing::VgpuCliTest {};

TEST_F(RunTopTest, RunHelpAndBadInput) {
  int code = -1;
  EXPECT_NE(Vgpu({"run", "--help"}, &code).find("--memory"), std::string::npos);
  EXPECT_EQ(code, 0);
  Vgpu({"run", "--memory", "4XB", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("--memory: \"4XB\""), std::string::npos) << Err();
  Vgpu({"run", "--memory", "1GiB"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("no command given"), std::string::npos) << Err();
  Vgpu({"run", "--priority", "urgent", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("--priority"), std::string::npos);
  Vgpu({"run", "--cores", "101", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  Vgpu({"run", "--device", "0,gpu1", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("--device: \"gpu1\""), std::string::npos) << Err();
  Vgpu({"run", "--bogus", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
}

// --device is checked against the GPUs there are (one simulated GPU here) before anything runs.
TEST_F(RunTopTest, RunRefusesDevicesTheMachineLacks) {
  int code = -1;
  std::string out = Vgpu({"run", "--sim", "--device", "99", "--", "echo", "ran"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_EQ(out, "");
  EXPECT_NE(Err().find("--device: 99: no such GPU index; this machine has 1 GPU"),
            std::string::npos)
      << Err();
  Vgpu({"run", "--sim", "--device", "0,1", "--", "echo", "ran"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("--device: 1:"), std::string::npos) << Err();
  Vgpu({"run", "--sim", "--device", "GPU-00000000-0000-0000-0000-000000000000", "--", "true"},
       &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("no GPU has this UUID"), std::string::npos) << Err();
  EXPECT_EQ(SliceCount(), 0u);
  // The GPU there is, by index and by its UUID.
  out = Vgpu({"run", "--sim", "--device", "0", "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"},
             &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_EQ(out, "0\n");
  std::string top = Vgpu({"top", "--sim", "--once", "--json"}, &code);
  size_t at = top.find("\"uuid\":\"GPU-");
  ASSERT_NE(at, std::string::npos) << top;
  std::string uuid = top.substr(at + 8, top.find('"', at + 8) - at - 8);
  out = Vgpu({"run", "--sim", "--device", uuid, "--", "sh", "-c", "echo $CUDA_VISIBLE_DEVICES"},
             &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_EQ(out, uuid + "\n");
}

TEST_F(RunTopTest, RunReturnsTheCommandsExitStatusAndCleansUp) {
  int code = -1;
  Vgpu({"run", "--memory", "1GiB", "--", "sh", "-c", "exit 7"}, &code);
  EXPECT_EQ(code, 7);
  Vgpu({"run", "--", "sh", "-c", "kill -9 $$"}, &code);
  EXPECT_EQ(code, 128 + SIGKILL);
  Vgpu({"run", "--", "/nonexistent/program"}, &code);
  EXPECT_EQ(code, 127);
  EXPECT_NE(Err().find("cannot run /nonexistent/program"), std::string::npos) << Err();
  // Options after "--" belong to the command.
  std::string out = Vgpu({"run", "--", "sh", "-c", "echo \"$@\"", "sh", "--memory", "x"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_EQ(out, "--memory x\n");
  EXPECT_EQ(SliceCount(), 0u);
}

TEST_F(RunTopTest, RunSetsUpTheSlice) {
  int code = -1;
  std::string out = Vgpu({"run", "--sim", "--memory", "64MiB", "--", WORKER_PATH, "fill", "alloc",
                          std::to_string(64 * kMiB)},
                         &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("first CUDA_SUCCESS"), std::string::npos) << out;
  EXPECT_NE(out.find("extra CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << out;
  // The environment the command sees.
  out = Vgpu({"run", "--memory", "2GiB", "--device", "1", "--", "sh", "-c",
              "echo $CUDA_VISIBLE_DEVICES; cat $VGPU_LIMITS_FILE; echo $LD_PRELOAD"},
             &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(out.find("1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("memory=2147483648"), std::string::npos) << out;
  EXPECT_NE(out.find("libvgpu.so"), std::string::npos) << out;
}

TEST_F(RunTopTest, ProcessesStartedByTheCommandShareTheSlice) {
  int code = -1;
  // A holder keeps 60 MiB while a second process of the same slice asks for 50 MiB of 100.
  std::string script = "(sleep 2 | '" + std::string(WORKER_PATH) +
                       "' hold 62914560 > /dev/null) & sleep 0.5; '" + WORKER_PATH +
                       "' fill alloc 41943040 10485761; wait";
  std::string out = Vgpu({"run", "--sim", "--memory", "100MiB", "--", "sh", "-c", script}, &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(out.find("first CUDA_SUCCESS"), std::string::npos) << out;
  EXPECT_NE(out.find("extra CUDA_ERROR_OUT_OF_MEMORY"), std::string::npos) << out;
}

TEST_F(RunTopTest, TopShowsTheSliceAndItsProcesses) {
  std::vector<std::string> run = {VGPU_BIN,
                                  "run",
                                  "--sim",
                                  "--memory",
                                  "1GiB",
                                  "--cores",
                                  "30",
                                  "--name",
                                  "trainer",
                                  "--",
                                  WORKER_PATH,
                                  "hold",
                                  std::to_string(300 * kMiB)};
  ChildProcess slice(run, env_);
  std::string ready = slice.ReadLine();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  std::string pid = ready.substr(6);
  int code = -1;
  std::string json = Vgpu({"top", "--sim", "--once", "--json"}, &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(json.find("\"name\":\"trainer-"), std::string::npos) << json;
  EXPECT_NE(json.find("\"state\":\"active\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"memory_limit\":1073741824,\"memory_used\":314572800,\"cores\":30"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"pid\":" + pid + ",\"alive\":true,\"memory_used\":[314572800,"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("\"name\":\"vgpu simulated H100 (8 GiB)\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"uuid\":\"GPU-"), std::string::npos) << json;
  std::string text = Vgpu({"top", "--sim", "--once"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(text.find("memory 300.00 MiB / 1.00 GiB (29%)  cores 30%"), std::string::npos) << text;
  EXPECT_NE(text.find("pid " + pid), std::string::npos) << text;
  EXPECT_EQ(text.find("quarantine"), std::string::npos) << text;
  EXPECT_NE(json.find("\"quarantine\":{\"level\":\"normal\""), std::string::npos) << json;
  // The node daemon's quarantine, as it writes it into the region, is shown.
  size_t at = json.find("\"region\":\"");
  ASSERT_NE(at, std::string::npos);
  at += 10;
  std::string region_path = json.substr(at, json.find('"', at) - at);
  {
    shm::Mapping m;
    ASSERT_EQ(shm::Mapping::OpenExisting(region_path.c_str(), true, &m), shm::RegionError::kOk);
    m.region()->header.control.level = 2;
    m.region()->header.control.share_cap_pct = 25;
    m.region()->header.control.launch_failures = 3;
  }
  text = Vgpu({"top", "--sim", "--once"}, &code);
  EXPECT_NE(text.find("quarantine limit (share lowered to 25%)\n  failed launches 3"),
            std::string::npos)
      << text;
  json = Vgpu({"top", "--sim", "--once", "--json"}, &code);
  EXPECT_NE(json.find("\"quarantine\":{\"level\":\"limit\",\"share_cap_pct\":25,\"paused\":false,"
                      "\"launch_failures\":3"),
            std::string::npos)
      << json;
  slice.CloseStdin();
  EXPECT_EQ(slice.Wait(), 0);
  text = Vgpu({"top", "--sim", "--once"}, &code);
  EXPECT_NE(text.find("No slices"), std::string::npos) << text;
}

// Every line of `text` fits 80 columns.
void ExpectFitsEightyColumns(const std::string& text) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    EXPECT_LE(end - start, 80u) << text.substr(start, end - start);
    start = end + 1;
  }
}

// A slice with a long name that computes under a cap, its vgpu run killed and then its
// process: top fits 80 columns at each step, and after gc shows neither the slice nor its
// compute record.
TEST_F(RunTopTest, TopFitsEightyColumnsAndGcLeavesNoPhantomSlice) {
  const std::string name(60, 'n');
  std::vector<std::string> run = {VGPU_BIN,
                                  "run",
                                  "--sim",
                                  "--memory",
                                  "1GiB",
                                  "--cores",
                                  "30",
                                  "--name",
                                  name,
                                  "--",
                                  WORKER_PATH,
                                  "loop",
                                  std::to_string(100 * kMiB),
                                  "4",
                                  "1000",
                                  "0",
                                  "0",
                                  "0",
                                  "0"};
  ChildProcess slice(run, env_);
  std::string ready = slice.ReadLine();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  const pid_t worker = std::atoi(ready.c_str() + 6);
  int code = -1;
  std::string text = Vgpu({"top", "--sim", "--once"}, &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(text.find("compute: 1 slice(s)"), std::string::npos) << text;
  EXPECT_NE(text.find("    achieved "), std::string::npos) << text;
  ExpectFitsEightyColumns(text);
  // The vgpu run is killed, then its process: the slice is stale, then removable.
  slice.Kill(SIGKILL);
  EXPECT_EQ(slice.Wait(), 128 + SIGKILL);
  text = Vgpu({"top", "--sim", "--once"}, &code);
  EXPECT_NE(text.find("[stale]"), std::string::npos) << text;
  ExpectFitsEightyColumns(text);
  kill(worker, SIGKILL);
  vgpu::testing::WaitFor([&] { return kill(worker, 0) != 0; }, std::chrono::milliseconds(5000),
                         std::chrono::milliseconds(10));
  std::string gc = Vgpu({"gc"}, &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(gc.find("removed " + name), std::string::npos) << gc;
  EXPECT_NE(gc.find("released the compute records of ended processes in GPU-"), std::string::npos)
      << gc;
  text = Vgpu({"top", "--sim", "--once"}, &code);
  EXPECT_EQ(text.find("SLICE"), std::string::npos) << text;
  EXPECT_NE(text.find("compute: 0 slice(s)"), std::string::npos) << text;
  std::string json = Vgpu({"top", "--sim", "--once", "--json"}, &code);
  EXPECT_NE(json.find("\"slices\":[]}]"), std::string::npos) << json;  // the arbiter's, empty
  ExpectFitsEightyColumns(text);
}

// --sim-config gives run and top their simulated devices, as it does to node and mig.
TEST_F(RunTopTest, RunAndTopTakeSimConfig) {
  const std::string conf = dir_ + "/small.conf";
  std::ofstream(conf) << "model=a100 memory=4GiB name=\"vgpu simulated small\"\n";
  int code = -1;
  std::string top = Vgpu({"top", "--sim", "--sim-config", conf, "--once"}, &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(top.find("vgpu simulated small"), std::string::npos) << top;
  EXPECT_NE(top.find("/ 4.00 GiB"), std::string::npos) << top;
  std::string nvml = Vgpu({"run", "--sim", "--sim-config", conf, "--", WORKER_PATH, "nvml"}, &code);
  EXPECT_EQ(code, 0) << Err();
  EXPECT_NE(nvml.find("nvml " + std::to_string(4ULL << 30) + " "), std::string::npos) << nvml;
}

TEST_F(RunTopTest, TopReportsUnreadableSlicesAndBadFlags) {
  std::filesystem::create_directories(dir_ + "/state/slices/broken");
  std::ofstream(dir_ + "/state/slices/broken/region") << std::string(8192, 'x');
  int code = -1;
  std::string text = Vgpu({"top", "--once"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(text.find("SLICE broken  [unreadable]"), std::string::npos) << text;
  EXPECT_NE(text.find("not a vgpu region"), std::string::npos) << text;
  std::string json = Vgpu({"top", "--once", "--json"}, &code);
  EXPECT_NE(json.find("\"error\":\"not a vgpu region (bad magic)\""), std::string::npos) << json;
  Vgpu({"top", "--interval", "0"}, &code);
  EXPECT_EQ(code, 2);
  Vgpu({"top", "--frobnicate"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_EQ(Vgpu({"top", "--help"}, &code).find("Usage") != std::string::npos, true);
  EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace vgpu
