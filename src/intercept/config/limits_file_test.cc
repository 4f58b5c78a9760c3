// Limits files fail closed: every way a file can be wrong (a line that does not parse, bad
// bytes, a cut-short file, an empty file, a directory, an unreadable or oversized file) gives no
// device memory, the safe side of every compute setting and exactly one printable message that
// names the file and line; a good file gives exactly its limits.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "common/limits_format.h"
#include "intercept/config/compute_config.h"
#include "intercept/config/config.h"
#include "support/temp_dir.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kMiB = 1ULL << 20;

struct Result {
  Config config;
  ConfigErrors errors;
  SourceSettings file;
};

// A limits file with `text` (nullptr: no file) and the environment `env_entries`.
Result CombineWith(const std::string* text, std::vector<std::string> env_entries) {
  Result r;
  SourceSettings env;
  if (text != nullptr) {
    ParseLimitsFile(text->data(), text->size(), "/etc/vgpu/limits", &r.file, &r.errors);
  }
  std::vector<char*> envp;
  for (std::string& e : env_entries) envp.push_back(e.data());
  envp.push_back(nullptr);
  ParseEnvironment(envp.data(), &env, &r.config, &r.errors);
  CombineSettings(r.file, env, 0, 1000, &r.config, &r.errors);
  return r;
}

Result Combine(const std::string& text, std::vector<std::string> env_entries = {}) {
  return CombineWith(&text, std::move(env_entries));
}

Result Env(std::vector<std::string> env_entries) {
  return CombineWith(nullptr, std::move(env_entries));
}

std::string Messages(const ConfigErrors& e) {
  std::string s;
  for (int i = 0; i < e.count; ++i) s += std::string(e.messages[i]) + "\n";
  return s;
}

bool Printable(const std::string& s) {
  for (char c : s) {
    unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u >= 0x7f) return false;
  }
  return true;
}

// The fail-closed outcome: one printable error that names `where`, nothing to allocate on any
// device, and the safe side of every compute setting.
void ExpectRejected(const Result& r, const std::string& where, const std::string& what = "") {
  ASSERT_EQ(r.errors.count, 1) << Messages(r.errors);
  const std::string m = r.errors.messages[0];
  EXPECT_FALSE(r.errors.warning[0]);
  EXPECT_TRUE(Printable(m)) << m;
  EXPECT_EQ(m.rfind(where, 0), 0u) << m;
  EXPECT_NE(m.find(what), std::string::npos) << m;
  EXPECT_NE(m.find("limits file rejected: every allocation is refused"), std::string::npos) << m;
  EXPECT_TRUE(r.file.rejected);
  for (int d = 0; d < kMaxDevices; ++d) {
    EXPECT_EQ(r.config.memory_limit[d], 0u) << d;
    EXPECT_EQ(r.config.region_limit[d], 0u) << d;
    EXPECT_EQ(r.config.sm_limit[d], 1u) << d;
    EXPECT_LE(r.config.guarantee[d], 1u) << d;
  }
  EXPECT_TRUE(r.config.any_memory_limit);
  EXPECT_TRUE(r.config.compute_limited);
  EXPECT_EQ(r.config.compute_mode, shm::kModeCapped);
  EXPECT_EQ(r.config.priority, shm::kPriorityIdle);
  EXPECT_EQ(r.config.weight, 1u);
  EXPECT_EQ(r.config.latency_slack_ns, uint64_t{shm::kMaxLatencySlackUs} * 1000);
  // The file's region is not trusted and no per-user default region is created.
  EXPECT_STREQ(r.config.region_path, "");
}

TEST(LimitsFile, AGoodFileGivesExactlyItsLimits) {
  Result r = Combine(
      "# hand-written\n"
      "memory=1GiB\n"
      "memory.1 = 300MiB\r\n"
      "cores=40\n"
      "priority=low\n"
      "region=/run/vgpu/x.region\n"
      "# caf\xc3\xa9: UTF-8 in a comment is text\n");
  EXPECT_EQ(r.errors.count, 0) << Messages(r.errors);
  EXPECT_FALSE(r.file.rejected);
  EXPECT_EQ(r.config.memory_limit[0], 1024 * kMiB);
  EXPECT_EQ(r.config.memory_limit[1], 300 * kMiB);
  EXPECT_EQ(r.config.memory_limit[2], 1024 * kMiB);
  EXPECT_EQ(r.config.sm_limit[0], 40u);
  EXPECT_EQ(r.config.priority, shm::kPriorityLow);
  EXPECT_STREQ(r.config.region_path, "/run/vgpu/x.region");
}

TEST(LimitsFile, AFileWrittenByVgpuNeedsItsEndMarker) {
  const std::string header = std::string(kLimitsFileHeader) + "\n";
  const std::string end = std::string(kLimitsFileEnd) + "\n";
  Result whole = Combine(header + "memory=512MiB\n" + end);
  EXPECT_EQ(whole.errors.count, 0) << Messages(whole.errors);
  EXPECT_EQ(whole.config.memory_limit[0], 512 * kMiB);
  ExpectRejected(Combine(header + "memory=512MiB\n"), "/etc/vgpu/limits:2: no end marker",
                 "cut short");
  ExpectRejected(Combine(header), "/etc/vgpu/limits:1: no end marker");
  ExpectRejected(Combine(header + "memory=512MiB\n" + end + "memory=1TiB\n"),
                 "/etc/vgpu/limits:4: \"memory=1TiB\" after the end marker");
  ExpectRejected(Combine(header + "memory=512MiB\n" + end + "\n"), "/etc/vgpu/limits:4:");
  // The end marker without a newline is a cut-short last line too.
  ExpectRejected(Combine(header + "memory=512MiB\n" + std::string(kLimitsFileEnd)),
                 "/etc/vgpu/limits:3: the last line", "no newline");
  // A hand-written file (no header) is complete without the marker, and may carry it.
  EXPECT_EQ(Combine("memory=512MiB\n" + end).config.memory_limit[0], 512 * kMiB);
}

TEST(LimitsFile, EveryBadLineRejectsTheWholeFile) {
  ExpectRejected(Combine("memory=1GiB\nmemroy=1GiB\n"), "/etc/vgpu/limits:2: unknown key",
                 "\"memroy\"");
  ExpectRejected(Combine("memroy=1GiB\nmemory=1GiB\n"), "/etc/vgpu/limits:1: unknown key");
  ExpectRejected(Combine("memory 1GiB\n"), "/etc/vgpu/limits:1: expected key=value",
                 "\"memory 1GiB\"");
  ExpectRejected(Combine("memory=1GiB\nmemory=lots\n"),
                 "/etc/vgpu/limits:2: \"lots\" is not a size");
  ExpectRejected(Combine("memory.77=1GiB\n"), "/etc/vgpu/limits:1: device index");
  ExpectRejected(Combine("uuid.0=\n"), "/etc/vgpu/limits:1:", "UUID");
  ExpectRejected(Combine("region=slice.region\n"),
                 "/etc/vgpu/limits:1: region must be an absolute path");
  ExpectRejected(Combine("arbiter_dir=arb\n"),
                 "/etc/vgpu/limits:1: arbiter_dir must be an absolute path");
  // Compute settings fail closed with the rest: a bad weight also takes the memory.
  ExpectRejected(Combine("memory=1GiB\ncores=30\nweight=lots\n"), "/etc/vgpu/limits:3:", "weight");
  ExpectRejected(Combine("guarantee=abc\n"), "/etc/vgpu/limits:1:");
  ExpectRejected(Combine("priority=urgent\n"), "/etc/vgpu/limits:1:");
  ExpectRejected(Combine("mode=turbo\n"), "/etc/vgpu/limits:1:");
  ExpectRejected(Combine("time_slice=1h\n"), "/etc/vgpu/limits:1:");
  // Only the first bad line is reported.
  Result many = Combine("bogus=1\nthis line is wrong\nmemory=lots\n");
  ExpectRejected(many, "/etc/vgpu/limits:1: unknown key \"bogus\"");
}

TEST(LimitsFile, ACutShortOrEmptyFileIsRejected) {
  ExpectRejected(Combine(""), "/etc/vgpu/limits: the limits file is empty");
  ExpectRejected(Combine("memory=1GiB"), "/etc/vgpu/limits:1: the last line \"memory=1GiB\"",
                 "no newline");
  ExpectRejected(Combine("memory=1GiB\nmemory.1=2"), "/etc/vgpu/limits:2: the last line");
  ExpectRejected(Combine("# comment"), "/etc/vgpu/limits:1: the last line");
}

TEST(LimitsFile, BadBytesAreRejectedAndNeverEchoed) {
  ExpectRejected(Combine(std::string("memory=1GiB\n\x1b[2J\x1b[31mmemory=1TiB\n")),
                 "/etc/vgpu/limits:2: control character 0x1b in column 1");
  ExpectRejected(Combine(std::string("memory=1G\0iB\n", 13)),
                 "/etc/vgpu/limits:1: control character 0x00 in column 10");
  ExpectRejected(Combine("memory=1GiB\rcores=1\n"), "/etc/vgpu/limits:1: control character 0x0d");
  ExpectRejected(Combine("# caf\xe9\n"), "/etc/vgpu/limits:1: byte 0xe9 in column 6", "not UTF-8");
  ExpectRejected(Combine("memory=1GiB\xc0\xaf\n"), "/etc/vgpu/limits:1: byte 0xc0");  // overlong
  ExpectRejected(Combine("# \xed\xa0\x80\n"), "/etc/vgpu/limits:1: byte 0xed");       // surrogate
  // Non-ASCII text that is valid UTF-8 reaches the message only escaped.
  Result key = Combine("m\xc3\xa9mory=1GiB\n");
  ExpectRejected(key, "/etc/vgpu/limits:1: unknown key \"m\\xc3\\xa9mory\"");
  // Random binary garbage: always rejected, the message printable.
  std::mt19937_64 rng(99);
  for (int i = 0; i < 300; ++i) {
    std::string garbage(1 + rng() % 200, '\0');
    for (char& c : garbage) c = static_cast<char>(rng());
    Result g = Combine(garbage);
    ExpectRejected(g, "/etc/vgpu/limits");
  }
}

TEST(LimitsFile, LongLinesAndNamesAreCut) {
  Result r = Combine(std::string(100000, 'x') + "\n");
  ExpectRejected(r, "/etc/vgpu/limits:1: expected key=value");
  EXPECT_NE(std::string(r.errors.messages[0]).find("xxx...\""), std::string::npos);
  EXPECT_LT(std::string(r.errors.messages[0]).size(), 200u);
  Result v = Combine("memory=" + std::string(5000, '9') + "\x01" + "\n");
  ExpectRejected(v, "/etc/vgpu/limits:1: control character 0x01 in column 5008");
  Result value = Combine("memory=" + std::string(5000, '9') + "x\n");
  ExpectRejected(value, "/etc/vgpu/limits:1: \"999");
  // A file name with control characters is escaped too.
  SourceSettings s;
  ConfigErrors e;
  ParseLimitsFile("", 0, "/tmp/\x1b]0;owned\x07", &s, &e);
  ASSERT_EQ(e.count, 1);
  EXPECT_EQ(
      std::string(e.messages[0]).rfind("/tmp/\\x1b]0;owned\\x07: the limits file is empty", 0), 0u)
      << e.messages[0];
}

TEST(LimitsFile, ARejectedFileCannotBeLiftedByTheEnvironmentOrASecondFile) {
  Result r = Combine("memroy=1GiB\n", {"CUDA_DEVICE_MEMORY_LIMIT=4g", "CUDA_DEVICE_SM_LIMIT=90",
                                       "VGPU_CORES_GUARANTEE=50", "VGPU_PRIORITY=realtime",
                                       "VGPU_CORES_WEIGHT=9", "VGPU_CORES_MODE=elastic"});
  EXPECT_EQ(r.config.memory_limit[0], 0u);
  EXPECT_EQ(r.config.sm_limit[0], 1u);
  EXPECT_LE(r.config.guarantee[0], 1u);
  EXPECT_EQ(r.config.priority, shm::kPriorityIdle);
  EXPECT_EQ(r.config.weight, 1u);
  EXPECT_EQ(r.config.compute_mode, shm::kModeCapped);
  // The environment's region is joined (its creator fixed its limit); this process gets nothing.
  Result joined = Combine("memroy=1GiB\n", {"CUDA_DEVICE_MEMORY_SHARED_CACHE=/run/x.region"});
  EXPECT_STREQ(joined.config.region_path, "/run/x.region");
  EXPECT_EQ(joined.config.memory_limit[0], 0u);
  // Two files: a rejected one wins over a good one, in either order.
  for (bool bad_first : {true, false}) {
    SourceSettings good, bad;
    ConfigErrors errors;
    std::string g = "memory=1GiB\nmemory.0=2GiB\ncores=50\n", b = "memory=\n";
    ParseLimitsFile(g.data(), g.size(), "good", &good, &errors);
    ParseLimitsFile(b.data(), b.size(), "bad", &bad, &errors);
    SourceSettings merged = bad_first ? bad : good;
    MergeFileSources(bad_first ? good : bad, &merged);
    Config c;
    SourceSettings env;
    CombineSettings(merged, env, 0, 1000, &c, &errors);
    for (int d = 0; d < kMaxDevices; ++d) EXPECT_EQ(c.memory_limit[d], 0u) << bad_first;
    EXPECT_EQ(c.sm_limit[0], 1u);
  }
}

class LimitsFileOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
  }
  Result Load(const std::string& path, bool optional = false) {
    Result r;
    LoadLimitsFile(path.c_str(), optional, &r.file, &r.errors);
    SourceSettings env;
    CombineSettings(r.file, env, 0, 1000, &r.config, &r.errors);
    return r;
  }
  vgpu::testing::TempDir tmp_{"vgpu-limits-file"};
  std::string dir_;
};

TEST_F(LimitsFileOnDisk, AGoodFileGivesExactlyItsLimit) {
  std::ofstream(dir_ + "/limits") << "memory=1234567890123\n";
  Result r = Load(dir_ + "/limits");
  EXPECT_EQ(r.errors.count, 0) << Messages(r.errors);
  EXPECT_EQ(r.config.memory_limit[0], 1234567890123u);
}

TEST_F(LimitsFileOnDisk, ADirectoryIsRejected) {
  ExpectRejected(Load(dir_), dir_ + ": the limits file is a directory");
  // Also where the optional system file would be.
  ExpectRejected(Load(dir_, true), dir_ + ": the limits file is a directory");
}

TEST_F(LimitsFileOnDisk, AFifoIsRejectedWithoutWaitingForAWriter) {
  ASSERT_EQ(mkfifo((dir_ + "/fifo").c_str(), 0600), 0);
  ExpectRejected(Load(dir_ + "/fifo"), dir_ + "/fifo: the limits file is not a regular file");
}

TEST_F(LimitsFileOnDisk, AnUnreadableFileIsRejected) {
  std::ofstream(dir_ + "/file") << "memory=1GiB\n";
  ExpectRejected(Load(dir_ + "/file/limits"), dir_ + "/file/limits: cannot open the limits file",
                 "Not a directory");
  ExpectRejected(Load(dir_ + "/missing"), dir_ + "/missing: cannot open", "No such file");
  // A missing optional file is no error and sets nothing.
  Result none = Load(dir_ + "/missing", true);
  EXPECT_EQ(none.errors.count, 0);
  EXPECT_FALSE(none.file.rejected);
  EXPECT_EQ(none.config.memory_limit[0], kNoLimit);
  if (geteuid() != 0) {  // root reads files whatever their mode
    std::ofstream(dir_ + "/secret") << "memory=1GiB\n";
    ASSERT_EQ(chmod((dir_ + "/secret").c_str(), 0), 0);
    ExpectRejected(Load(dir_ + "/secret"), dir_ + "/secret: cannot open", "Permission denied");
  }
}

TEST_F(LimitsFileOnDisk, AnOversizedFileIsRejected) {
  std::string line = "# padding padding padding padding padding padding padding\n";
  std::string text = "memory=1GiB\n";
  while (text.size() <= kMaxLimitsFileSize) text += line;
  std::ofstream(dir_ + "/big") << text;
  ExpectRejected(Load(dir_ + "/big"), dir_ + "/big: the limits file is larger than 65536 bytes");
  // Just below the limit is fine.
  std::ofstream(dir_ + "/fits") << text.substr(0, kMaxLimitsFileSize - 1) << "\n";
  Result fits = Load(dir_ + "/fits");
  EXPECT_EQ(fits.errors.count, 0) << Messages(fits.errors);
  EXPECT_EQ(fits.config.memory_limit[0], 1ULL << 30);
}

TEST(SmallLimit, ALimitNotAboveTheContextReserveIsAWarningNamingBoth) {
  Result r = Env({"CUDA_DEVICE_MEMORY_LIMIT=256m"});
  ASSERT_EQ(r.errors.count, 1) << Messages(r.errors);
  EXPECT_TRUE(r.errors.warning[0]);
  const std::string m = r.errors.messages[0];
  EXPECT_NE(m.find("device 0 (256 MiB)"), std::string::npos) << m;
  EXPECT_NE(m.find("than the 256 MiB charged for every CUDA context"), std::string::npos) << m;
  EXPECT_EQ(r.config.memory_limit[0], 256 * kMiB);  // the limit itself is kept
  Result below = Env({"CUDA_DEVICE_MEMORY_LIMIT=100000", "VGPU_CONTEXT_OVERHEAD=1MiB"});
  ASSERT_EQ(below.errors.count, 1) << Messages(below.errors);
  EXPECT_NE(std::string(below.errors.messages[0]).find("(100000 bytes)"), std::string::npos);
  EXPECT_NE(std::string(below.errors.messages[0]).find("the 1 MiB charged"), std::string::npos);
  // Per device, from the file: one warning for all devices.
  Result file = Combine("memory.0=64MiB\nmemory.1=128MiB\nmemory.2=1GiB\n");
  ASSERT_EQ(file.errors.count, 1) << Messages(file.errors);
  EXPECT_NE(std::string(file.errors.messages[0]).find("device 0 (64 MiB) (and of 1 more devices)"),
            std::string::npos)
      << file.errors.messages[0];
  // No warning above the reserve, without a limit, with no reserve, or for a rejected file.
  EXPECT_EQ(Env({"CUDA_DEVICE_MEMORY_LIMIT=257m"}).errors.count, 0);
  EXPECT_EQ(Env({}).errors.count, 0);
  EXPECT_EQ(Env({"CUDA_DEVICE_MEMORY_LIMIT=256m", "VGPU_CONTEXT_OVERHEAD=0"}).errors.count, 0);
  EXPECT_EQ(Combine("memory=0\n").errors.count, 0);
  EXPECT_EQ(Combine("memroy=1\n").errors.count, 1);
}

TEST(RelativePaths, PathsFromTheEnvironmentAreMadeAbsoluteOnce) {
  char cwd[512];
  ASSERT_NE(getcwd(cwd, sizeof(cwd)), nullptr);
  const std::string here = std::string(cwd) == "/" ? "" : cwd;
  Result r = Env({"CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_MEMORY_SHARED_CACHE=s/r",
                  "VGPU_ARBITER_DIR=arb"});
  EXPECT_EQ(r.errors.count, 0) << Messages(r.errors);
  EXPECT_EQ(std::string(r.config.region_path), here + "/s/r");
  EXPECT_EQ(std::string(r.config.arbiter_dir), here + "/arb");
  Result v = Env({"CUDA_DEVICE_MEMORY_LIMIT=1g", "VGPU_REGION=v.region"});
  EXPECT_EQ(std::string(v.config.region_path), here + "/v.region");
  // Absolute paths are kept as they are.
  Result a = Env({"CUDA_DEVICE_MEMORY_LIMIT=1g", "VGPU_REGION=/x/v.region"});
  EXPECT_STREQ(a.config.region_path, "/x/v.region");
  // The state directory behind the default arbiter directory.
  std::string state = "VGPU_STATE_DIR=state";
  char* envp[] = {state.data(), nullptr};
  char dir[kPathMax];
  DefaultArbiterDir(envp, 1000, dir, sizeof(dir));
  EXPECT_EQ(std::string(dir), here + "/state/arbiter");
  std::string xdg = "XDG_RUNTIME_DIR=run";
  char* xdg_envp[] = {xdg.data(), nullptr};
  DefaultArbiterDir(xdg_envp, 1000, dir, sizeof(dir));
  EXPECT_EQ(std::string(dir), here + "/run/vgpu/arbiter");
  // Too long once made absolute: refused rather than cut.
  char small[8];
  EXPECT_FALSE(MakeAbsolutePath("a-long-relative-name", small, sizeof(small)));
  EXPECT_STREQ(small, "");
  EXPECT_TRUE(MakeAbsolutePath("/abs", small, sizeof(small)));
  EXPECT_STREQ(small, "/abs");
}

}  // namespace
}  // namespace vgpu::intercept
