// Limits files end to end. The files the node daemon (SliceManager) and `vgpu run` (SliceDir)
// really write are cut at every byte offset and each cut is rejected by libvgpu's reader; a few
// cuts, and every other way a file can be wrong, are run through a process with libvgpu.so
// preloaded on the simulated GPU: no device memory, exactly one message on stderr that names
// the file, and no control character in what the process prints. Also the warning for a limit
// not above the context reserve, and `vgpu run` with a relative state directory whose command
// changes directory.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "common/limits_format.h"
#include "intercept/config/config.h"
#include "node/slice.h"
#include "sanitizer_env.h"
#include "slice/slice_dir.h"
#include "support/temp_dir.h"

namespace vgpu {
namespace {

using testing::RunToCompletion;

constexpr uint64_t kMiB = 1ULL << 20;

// libvgpu.so (after the sanitizer runtime in an asan build: tests/sanitizer_env.h).
const std::string kPreload = testing::PreloadList(LIBVGPU_PATH);

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string Quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// Every byte is printable ASCII or a newline.
bool Printable(const std::string& s) {
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (c != '\n' && (u < 0x20 || u >= 0x7f)) return false;
  }
  return true;
}

std::vector<std::string> LinesWith(const std::string& out, const std::string& needle) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find(needle) != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// What libvgpu's reader makes of `text` as a limits file, alone.
struct Parsed {
  intercept::Config config;
  intercept::ConfigErrors errors;
  bool rejected = false;
};
Parsed Parse(const std::string& text) {
  Parsed p;
  intercept::SourceSettings file, env;
  intercept::ParseLimitsFile(text.data(), text.size(), "limits", &file, &p.errors);
  intercept::CombineSettings(file, env, 0, 1000, &p.config, &p.errors);
  p.rejected = file.rejected;
  return p;
}

// Every proper prefix of `text` is rejected: no memory on any device, 1% of compute, one
// printable error message; the whole text gives exactly `limit` on device 0.
void ExpectEveryCutRejected(const std::string& text, uint64_t limit) {
  ASSERT_EQ(text.rfind(std::string(kLimitsFileHeader) + "\n", 0), 0u) << text;
  ASSERT_EQ(text.substr(text.size() - kLimitsFileEnd.size() - 1),
            std::string(kLimitsFileEnd) + "\n");
  Parsed whole = Parse(text);
  ASSERT_EQ(whole.errors.count, 0) << whole.errors.messages[0];
  EXPECT_EQ(whole.config.memory_limit[0], limit);
  for (size_t cut = 0; cut < text.size(); ++cut) {
    Parsed p = Parse(text.substr(0, cut));
    ASSERT_EQ(p.errors.count, 1) << "cut at " << cut;
    EXPECT_TRUE(p.rejected) << cut;
    EXPECT_TRUE(Printable(p.errors.messages[0])) << cut;
    EXPECT_NE(std::string(p.errors.messages[0]).find("limits file rejected"), std::string::npos);
    for (int d = 0; d < intercept::kMaxDevices; ++d) {
      ASSERT_EQ(p.config.memory_limit[d], 0u) << "cut at " << cut << ": " << text.substr(0, cut);
      ASSERT_EQ(p.config.sm_limit[d], 1u) << cut;
    }
  }
}

class LimitsFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    WriteFile(dir_ + "/devices.conf", "model=h100 memory=8GiB\n");
  }

  // The limits file the node daemon writes for a container with `memory` on one GPU.
  std::string NodeWrittenFile(uint64_t memory) {
    node::SliceLayout layout;
    layout.root = dir_ + "/node/slices";
    layout.host_libvgpu = dir_ + "/node/libvgpu.so";
    layout.arbiter_dir = dir_ + "/node/arbiter";
    layout.context_overhead = 0;
    node::SliceManager manager(layout);
    EXPECT_TRUE(manager.Init().ok());
    node::ContainerSlice spec;
    spec.pod_ns = "ns";
    spec.pod_name = "pod";
    spec.pod_uid = "uid-1";
    spec.container = "main";
    spec.priority = 0;
    spec.devices = {{"GPU-sim-0", 0, 0, memory, 100}};
    auto record = manager.Create(spec, 1000);
    EXPECT_TRUE(record.has_value()) << record.error().ToString();
    return record.has_value() ? ReadFile(record->limits_path) : "";
  }

  // The limits file `vgpu run --sim --memory ... --cores 30` writes, for a command line with
  // control characters in it.
  std::string RunWrittenFile(uint64_t memory) {
    slice::SliceFlags flags;
    flags.memory = std::to_string(memory);
    flags.cores = "30";
    auto spec = slice::ParseSliceSpec(flags);
    EXPECT_TRUE(spec.has_value());
    setenv("VGPU_STATE_DIR", (dir_ + "/state").c_str(), 1);
    auto made = slice::SliceDir::Create("prog", *spec, true, "prog \x1b[31mred\x07\t\xff");
    unsetenv("VGPU_STATE_DIR");
    EXPECT_TRUE(made.has_value()) << made.error().ToString();
    return made.has_value() ? ReadFile(made->path() + "/limits") : "";
  }

  // Runs the worker with libvgpu.so preloaded on the simulated GPU; returns stdout and stderr
  // together, byte for byte.
  std::string Worker(std::vector<std::string> args, std::vector<std::string> extra_env,
                     int* code = nullptr) {
    std::string script = "exec " + Quote(WORKER_PATH);
    for (const std::string& a : args) script += " " + Quote(a);
    script += " 2>&1";
    std::vector<std::string> env = {
        "LD_PRELOAD=" + kPreload,
        std::string("LD_LIBRARY_PATH=") + SIMGPU_DIR,
        "VGPU_SIMGPU_CONFIG=" + dir_ + "/devices.conf",
        "VGPU_SIMGPU_STATE=" + dir_ + "/simgpu.state",
        "VGPU_SIMGPU_LOG_LEVEL=1",
        "LIBCUDA_LOG_LEVEL=2",
    };
    env.insert(env.end(), extra_env.begin(), extra_env.end());
    return RunToCompletion({"/bin/sh", "-c", script}, env, code);
  }

  // A process given the limits file `path`: nothing to allocate, one message naming the file.
  void ExpectNoMemory(const std::string& path, const std::string& what) {
    SCOPED_TRACE(what);
    std::vector<std::string> env = {"VGPU_LIMITS_FILE=" + path, "VGPU_CONTEXT_OVERHEAD=0"};
    std::string info = Worker({"info"}, env);
    EXPECT_NE(info.find("cuMemGetInfo 0 0\n"), std::string::npos) << info;
    EXPECT_NE(info.find("totalmem 0\n"), std::string::npos) << info;
    EXPECT_TRUE(Printable(info)) << info;
    std::vector<std::string> errors = LinesWith(info, "[vgpu ERROR]");
    ASSERT_EQ(errors.size(), 1u) << info;
    EXPECT_EQ(errors[0].rfind("[vgpu ERROR] " + path, 0), 0u) << errors[0];
    EXPECT_NE(errors[0].find("limits file rejected: every allocation is refused"),
              std::string::npos);
    EXPECT_EQ(LinesWith(info, "[vgpu").size(), 1u) << info;
    std::string fill = Worker({"fill", "alloc", "1", "1"}, env);
    EXPECT_NE(fill.find("first CUDA_ERROR_OUT_OF_MEMORY\n"), std::string::npos) << fill;
  }

  testing::TempDir tmp_{"vgpu-limits-e2e"};
  std::string dir_;
};

TEST_F(LimitsFileTest, EveryCutOfANodeWrittenFileIsRejected) {
  ExpectEveryCutRejected(NodeWrittenFile(64 * kMiB), 64 * kMiB);
}

TEST_F(LimitsFileTest, EveryCutOfAVgpuRunWrittenFileIsRejected) {
  const std::string text = RunWrittenFile(48 * kMiB);
  // The command line reaches the file's comment escaped.
  EXPECT_NE(text.find("prog \\x1b[31mred\\x07\\x09\\xff\n"), std::string::npos) << text;
  ExpectEveryCutRejected(text, 48 * kMiB);
}

TEST_F(LimitsFileTest, CutNodeWrittenFilesGiveAProcessNoMemory) {
  const std::string text = NodeWrittenFile(64 * kMiB);
  const std::string whole = dir_ + "/whole";
  WriteFile(whole, text);
  // The whole file: exactly its limit.
  std::vector<std::string> env = {"VGPU_LIMITS_FILE=" + whole, "VGPU_CONTEXT_OVERHEAD=0"};
  std::string info = Worker({"info"}, env);
  EXPECT_NE(info.find("cuMemGetInfo " + std::to_string(64 * kMiB) + " " +
                      std::to_string(64 * kMiB) + "\n"),
            std::string::npos)
      << info;
  EXPECT_EQ(LinesWith(info, "[vgpu").size(), 0u) << info;
  std::string fill = Worker({"fill", "alloc", std::to_string(64 * kMiB), "1"}, env);
  EXPECT_NE(fill.find("first CUDA_SUCCESS\nextra CUDA_ERROR_OUT_OF_MEMORY\n"), std::string::npos)
      << fill;
  // Cuts: nothing, inside the header, after the header, inside the memory line, before the end
  // marker, the end marker without its newline.
  const size_t header = kLimitsFileHeader.size() + 1;
  const size_t memory = text.find("memory.0=") + 10;
  const size_t end = text.size() - kLimitsFileEnd.size() - 1;
  for (size_t cut : {size_t{0}, size_t{5}, header, memory, end, text.size() - 1}) {
    const std::string path = dir_ + "/cut-" + std::to_string(cut);
    WriteFile(path, text.substr(0, cut));
    ExpectNoMemory(path, "cut at " + std::to_string(cut));
  }
}

TEST_F(LimitsFileTest, EveryBadFileGivesAProcessNoMemory) {
  struct Case {
    const char* name;
    std::string text;
  };
  std::string garbage;
  for (int i = 0; i < 64; ++i) garbage += static_cast<char>((i * 37) % 256);
  const Case cases[] = {
      {"misspelled", "memroy=1GiB\n"},
      {"no-equals", "memory 1GiB\n"},
      {"garbage", garbage},
      {"escape-sequences", "\x1b]0;title\x07\x1b[2J\x1b[31mmemory=1GiB\n"},
      {"empty", ""},
      {"partial-line", "memory=1GiB\ncores=5"},
      {"bad-value", "memory=1GiB\nweight=heavy\n"},
      {"oversized", "memory=1GiB\n" + std::string(70000, '#') + "\n"},
  };
  for (const Case& c : cases) {
    const std::string path = dir_ + "/" + c.name;
    WriteFile(path, c.text);
    ExpectNoMemory(path, c.name);
  }
  ExpectNoMemory(dir_, "a directory");
  ExpectNoMemory(dir_ + "/misspelled/limits", "unreadable (not a directory)");
  ExpectNoMemory(dir_ + "/missing", "missing");
}

TEST_F(LimitsFileTest, ARejectedFileWithTheDefaultReserveRefusesTheContextItself) {
  WriteFile(dir_ + "/limits", "memroy=1GiB\n");
  int code = 0;
  std::string out = Worker({"info"}, {"VGPU_LIMITS_FILE=" + dir_ + "/limits"}, &code);
  EXPECT_NE(code, 0);
  EXPECT_NE(out.find("cuDevicePrimaryCtxRetain failed: CUDA_ERROR_OUT_OF_MEMORY"),
            std::string::npos)
      << out;
}

TEST_F(LimitsFileTest, ALimitNotAboveTheContextReserveIsReportedOnce) {
  // HAMi's common 256m with the default 256 MiB per context: one warning naming both.
  std::string out = Worker({"info"}, {"CUDA_DEVICE_MEMORY_LIMIT=256m"});
  std::vector<std::string> warnings = LinesWith(out, "[vgpu WARN]");
  ASSERT_EQ(warnings.size(), 1u) << out;
  EXPECT_NE(warnings[0].find("device 0 (256 MiB)"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("the 256 MiB charged for every CUDA context"), std::string::npos);
  EXPECT_NE(out.find("cuMemGetInfo 0 " + std::to_string(256 * kMiB)), std::string::npos) << out;
  // No warning with room to spare.
  EXPECT_EQ(LinesWith(Worker({"info"}, {"CUDA_DEVICE_MEMORY_LIMIT=257m"}), "[vgpu").size(), 0u);
}

TEST_F(LimitsFileTest, VgpuRunWithARelativeStateDirSurvivesAChangeOfDirectory) {
  // The command leaves the directory the state directory was relative to before it starts.
  const std::string inner =
      "cd / && echo \"state=$VGPU_STATE_DIR\" && echo \"file=$VGPU_LIMITS_FILE\"" +
      std::string(" && exec ") + Quote(WORKER_PATH) + " fill alloc " + std::to_string(32 * kMiB) +
      " 1";
  const std::string script = "cd " + Quote(dir_) + " && exec " + Quote(VGPU_BIN) +
                             " run --sim --memory 32MiB -- /bin/sh -c " + Quote(inner) + " 2>&1";
  std::vector<std::string> env = {"VGPU_STATE_DIR=state",
                                  "VGPU_SIMGPU_CONFIG=" + dir_ + "/devices.conf",
                                  "VGPU_SIMGPU_STATE=" + dir_ + "/simgpu.state",
                                  "VGPU_SIMGPU_LOG_LEVEL=1", "LIBCUDA_LOG_LEVEL=2"};
  if (*testing::kSanitizerRuntime != '\0') env.push_back("LD_PRELOAD=" + testing::PreloadList(""));
  int code = -1;
  std::string out = RunToCompletion({"/bin/sh", "-c", script}, env, &code);
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("state=" + dir_ + "/state\n"), std::string::npos) << out;
  EXPECT_NE(out.find("file=" + dir_ + "/state/slices/"), std::string::npos) << out;
  EXPECT_NE(out.find("first CUDA_SUCCESS\nextra CUDA_ERROR_OUT_OF_MEMORY\n"), std::string::npos)
      << out;
  EXPECT_EQ(LinesWith(out, "[vgpu").size(), 0u) << out;
}

}  // namespace
}  // namespace vgpu
