// Configuration: HAMi-core names, the limits file, precedence (the file wins; the environment
// may only lower), the safe side of bad values, and property/fuzz tests of the parsers.
#include "intercept/config/config.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "intercept/config/config_test_util.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kGiB = 1ULL << 30;
constexpr uint64_t kMiB = 1ULL << 20;

using Result = CombinedConfig;

TEST(Config, HamiEnvironmentNames) {
  Result r =
      Combine("", {"CUDA_DEVICE_MEMORY_LIMIT=4g", "CUDA_DEVICE_MEMORY_LIMIT_1=2048m",
                   "CUDA_DEVICE_SM_LIMIT=30", "CUDA_DEVICE_SM_LIMIT_2=50", "CUDA_TASK_PRIORITY=0",
                   "LIBCUDA_LOG_LEVEL=4", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/x.cache"});
  EXPECT_EQ(r.errors.count, 0) << Errors(r.errors);
  EXPECT_EQ(r.config.memory_limit[0], 4 * kGiB);
  EXPECT_EQ(r.config.memory_limit[1], 2 * kGiB);
  EXPECT_EQ(r.config.memory_limit[5], 4 * kGiB);
  EXPECT_EQ(r.config.sm_limit[0], 30u);
  EXPECT_EQ(r.config.sm_limit[2], 50u);
  EXPECT_TRUE(r.config.compute_limited);
  EXPECT_EQ(r.config.priority, shm::kPriorityHigh);  // HAMi's 0
  EXPECT_EQ(r.config.log_level, 4);
  EXPECT_STREQ(r.config.region_path, "/tmp/x.cache");
  EXPECT_EQ(r.config.device_count, 3u);
}

TEST(Config, NothingConfiguredMeansNoLimitAndNoRegion) {
  Result r = Combine("", {"HOME=/root", "CUDA_DEVICE_MEMORY_LIMIT=0", "CUDA_DEVICE_SM_LIMIT=100"});
  EXPECT_EQ(r.errors.count, 0);
  for (int d = 0; d < kMaxDevices; ++d) EXPECT_EQ(r.config.memory_limit[d], kNoLimit);
  EXPECT_FALSE(r.config.any_memory_limit);
  EXPECT_FALSE(r.config.compute_limited);
  EXPECT_STREQ(r.config.region_path, "");
}

TEST(Config, DefaultRegionWhenALimitIsSet) {
  Result r = Combine("", {"CUDA_DEVICE_MEMORY_LIMIT=1g"});
  EXPECT_STREQ(r.config.region_path, "/tmp/vgpu-slice-1000.region");
  Result v = Combine("", {"CUDA_DEVICE_MEMORY_LIMIT=1g", "VGPU_REGION=/r"});
  EXPECT_STREQ(v.config.region_path, "/r");
}

TEST(Config, LimitsFileKeys) {
  Result r = Combine(
      "# slice of pod x\n"
      "memory = 8GiB\n"
      "memory.1=unlimited\n"
      "cores=25\r\n"
      "priority=1\n"
      "context_overhead=128MiB\n"
      "region=/run/vgpu/slice.region\n"
      "uuid.0=GPU-1234\n"
      "\n",
      {});
  EXPECT_EQ(r.errors.count, 0) << Errors(r.errors);
  EXPECT_EQ(r.config.memory_limit[0], 8 * kGiB);
  EXPECT_EQ(r.config.memory_limit[1], kNoLimit);
  EXPECT_EQ(r.config.sm_limit[3], 25u);
  EXPECT_EQ(r.config.context_overhead, 128 * kMiB);
  EXPECT_STREQ(r.config.region_path, "/run/vgpu/slice.region");
  EXPECT_STREQ(r.config.uuid[0], "GPU-1234");
}

TEST(Config, TheFileWinsTheEnvironmentCanOnlyLower) {
  Result raise = Combine("memory=4GiB\ncores=30\n",
                         {"CUDA_DEVICE_MEMORY_LIMIT=16g", "CUDA_DEVICE_SM_LIMIT=90"});
  EXPECT_EQ(raise.config.memory_limit[0], 4 * kGiB);
  EXPECT_EQ(raise.config.sm_limit[0], 30u);
  Result lower = Combine("memory=4GiB\ncores=30\n",
                         {"CUDA_DEVICE_MEMORY_LIMIT=1g", "CUDA_DEVICE_SM_LIMIT=10"});
  EXPECT_EQ(lower.config.memory_limit[0], 1 * kGiB);
  EXPECT_EQ(lower.config.sm_limit[0], 10u);
  // The region keeps the file's limit, so other processes of the slice are not bound by one
  // process's lower environment value.
  EXPECT_EQ(lower.config.region_limit[0], 4 * kGiB);
  // "No limit" in the environment does not lift the file's limit.
  Result zero = Combine("memory=4GiB\n", {"CUDA_DEVICE_MEMORY_LIMIT=0"});
  EXPECT_EQ(zero.config.memory_limit[0], 4 * kGiB);
  // Priority: the environment may only make it less important (HAMi: 0 high, 1 normal).
  EXPECT_EQ(Combine("priority=1\n", {"CUDA_TASK_PRIORITY=0"}).config.priority,
            shm::kPriorityNormal);
  EXPECT_EQ(Combine("priority=0\n", {"CUDA_TASK_PRIORITY=1"}).config.priority,
            shm::kPriorityNormal);
  // The file's region wins over the environment's.
  EXPECT_STREQ(
      Combine("region=/a\nmemory=1g\n", {"CUDA_DEVICE_MEMORY_SHARED_CACHE=/b"}).config.region_path,
      "/a");
  // Context overhead: the larger value.
  EXPECT_EQ(
      Combine("context_overhead=100MiB\n", {"VGPU_CONTEXT_OVERHEAD=10MiB"}).config.context_overhead,
      100 * kMiB);
}

TEST(Config, BadEnvironmentValuesFallBackToTheSafeSide) {
  // A bad value with a file limit: the file's limit.
  Result r = Combine("memory=4GiB\n", {"CUDA_DEVICE_MEMORY_LIMIT=4XB"});
  EXPECT_EQ(r.errors.count, 1);
  EXPECT_NE(Errors(r.errors).find("CUDA_DEVICE_MEMORY_LIMIT: \"4XB\""), std::string::npos)
      << Errors(r.errors);
  EXPECT_EQ(r.config.memory_limit[0], 4 * kGiB);
  // A bad value without a file: nothing can be allocated (never "no limit").
  Result alone = Combine("", {"CUDA_DEVICE_MEMORY_LIMIT=-1"});
  EXPECT_EQ(alone.config.memory_limit[0], 0u);
  EXPECT_TRUE(alone.config.any_memory_limit);
  // A bad per-device value: the valid all-devices value.
  Result dev = Combine("", {"CUDA_DEVICE_MEMORY_LIMIT=2g", "CUDA_DEVICE_MEMORY_LIMIT_0=lots"});
  EXPECT_EQ(dev.config.memory_limit[0], 2 * kGiB);
  // A device index we cannot represent: devices without their own limit take the safe side.
  Result idx = Combine("", {"CUDA_DEVICE_MEMORY_LIMIT_99=1g", "CUDA_DEVICE_MEMORY_LIMIT_1=3g"});
  EXPECT_EQ(idx.errors.count, 1);
  EXPECT_EQ(idx.config.memory_limit[0], 0u);
  EXPECT_EQ(idx.config.memory_limit[1], 3 * kGiB);
  // Compute: a bad value alone gives the smallest share, not the whole device.
  EXPECT_EQ(Combine("", {"CUDA_DEVICE_SM_LIMIT=150"}).config.sm_limit[0], 1u);
  EXPECT_EQ(Combine("cores=40\n", {"CUDA_DEVICE_SM_LIMIT=abc"}).config.sm_limit[0], 40u);
  // Log level: reported, default kept.
  Result log = Combine("", {"LIBCUDA_LOG_LEVEL=loud"});
  EXPECT_EQ(log.errors.count, 1);
  EXPECT_EQ(log.config.log_level, 2);
}

TEST(Config, BadFileValuesDenyEverything) {
  Result r = Combine("memory=lots\n", {"CUDA_DEVICE_MEMORY_LIMIT=1g"});
  EXPECT_EQ(r.config.memory_limit[0], 0u);
  EXPECT_NE(Errors(r.errors).find("limits:1:"), std::string::npos) << Errors(r.errors);
}

TEST(Config, FileErrorsNameFileAndLine) {
  // The first bad line rejects the file: one message, for that line (limits_file_test.cc).
  Result r = Combine("memory=1g\nthis line is wrong\nbogus=1\nmemory.77=1g\n", {});
  ASSERT_EQ(r.errors.count, 1) << Errors(r.errors);
  EXPECT_NE(std::string(r.errors.messages[0]).find("limits:2: expected key=value"),
            std::string::npos);
  EXPECT_EQ(r.config.memory_limit[0], 0u);
}

TEST(Config, DuplicateKeysKeepTheSmallerLimit) {
  Result r = Combine("memory=4g\nmemory=2g\nmemory=8g\n", {});
  EXPECT_EQ(r.config.memory_limit[0], 2 * kGiB);
}

TEST(Config, MissingLimitsFileNamedByTheEnvironmentDeniesEverything) {
  SourceSettings file;
  ConfigErrors errors;
  LoadLimitsFile("/nonexistent/vgpu/limits", false, &file, &errors);
  EXPECT_EQ(errors.count, 1);
  EXPECT_EQ(file.memory_all.state, Setting::kInvalid);
  SourceSettings optional;
  ConfigErrors none;
  LoadLimitsFile("/nonexistent/vgpu/limits", true, &optional, &none);
  EXPECT_EQ(none.count, 0);
}

TEST(Config, LoadConfigReadsTheFileNamedInTheEnvironment) {
  char path[] = "/tmp/vgpu-config-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  std::string text = "memory=3GiB\n";
  ASSERT_EQ(write(fd, text.data(), text.size()), static_cast<ssize_t>(text.size()));
  close(fd);
  std::string file_var = std::string("VGPU_LIMITS_FILE=") + path;
  std::string env_limit = "CUDA_DEVICE_MEMORY_LIMIT=5g";
  std::string visible = "CUDA_VISIBLE_DEVICES=2,3";
  char* envp[] = {file_var.data(), env_limit.data(), visible.data(), nullptr};
  Config config;
  ConfigErrors errors;
  LoadConfig(envp, &config, &errors);
  unlink(path);
  EXPECT_EQ(config.memory_limit[0], 3ULL * kGiB);
  EXPECT_EQ(config.device_count, 2u);
}

// Property: whatever the inputs, (1) parsing never crashes, (2) a valid file limit is never
// exceeded, (3) a source with a bad memory value never yields "no limit" for a device that has
// no valid value elsewhere.
TEST(Config, RandomInputsKeepTheInvariants) {
  std::mt19937_64 rng(1234);
  const std::vector<std::string> values = {"4g",
                                           "4096m",
                                           "1GiB",
                                           "0",
                                           "unlimited",
                                           "-1",
                                           "1.5GiB",
                                           "1.5",
                                           "",
                                           "4XB",
                                           "99999999999999T",
                                           "12",
                                           "abc",
                                           "  2g",
                                           "100",
                                           "50%",
                                           "0x10",
                                           "18446744073709551615",
                                           "1e9"};
  const std::vector<std::string> keys = {
      "memory",   "memory.0", "memory.3",         "memory.16", "cores",   "cores.1",
      "priority", "region",   "context_overhead", "nonsense",  "memory.x"};
  const std::vector<std::string> env_keys = {
      "CUDA_DEVICE_MEMORY_LIMIT", "CUDA_DEVICE_MEMORY_LIMIT_0", "CUDA_DEVICE_MEMORY_LIMIT_3",
      "CUDA_DEVICE_SM_LIMIT",     "CUDA_DEVICE_SM_LIMIT_0",     "CUDA_TASK_PRIORITY",
      "VGPU_CONTEXT_OVERHEAD",    "LIBCUDA_LOG_LEVEL"};
  for (int iter = 0; iter < 3000; ++iter) {
    std::string file;
    int lines = static_cast<int>(rng() % 4);
    for (int i = 0; i < lines; ++i) {
      file += keys[rng() % keys.size()] + "=" + values[rng() % values.size()] + "\n";
    }
    if (rng() % 10 == 0) file += std::string(1 + rng() % 40, static_cast<char>(rng() % 128));
    std::vector<std::string> env;
    int n = static_cast<int>(rng() % 4);
    for (int i = 0; i < n; ++i) {
      env.push_back(env_keys[rng() % env_keys.size()] + "=" + values[rng() % values.size()]);
    }
    Result r = Combine(file, env);
    SourceSettings f;
    ConfigErrors ignored;
    if (!file.empty()) ParseLimitsFile(file.data(), file.size(), "f", &f, &ignored);
    for (int d = 0; d < kMaxDevices; ++d) {
      // The file's effective setting for d: per-device, else all-devices; a bad per-device
      // value falls back to a valid all-devices one.
      Setting fd = f.memory[d].state != Setting::kUnset ? f.memory[d] : f.memory_all;
      if (fd.state == Setting::kInvalid && f.memory[d].state == Setting::kInvalid &&
          (f.memory_all.state == Setting::kValue || f.memory_all.state == Setting::kUnlimited)) {
        fd = f.memory_all;
      }
      if (fd.state == Setting::kValue) {
        EXPECT_LE(r.config.memory_limit[d], fd.value) << file;
      }
      if (fd.state == Setting::kInvalid) {
        EXPECT_EQ(r.config.memory_limit[d], 0u) << file;
      }
      EXPECT_LE(r.config.sm_limit[d], 100u);
    }
    if (r.errors.count == 0 && file.empty()) {
      for (const std::string& e : env) {
        if (e.rfind("CUDA_DEVICE_MEMORY_LIMIT=", 0) == 0 && e.size() > 25 &&
            e != "CUDA_DEVICE_MEMORY_LIMIT=0" && e != "CUDA_DEVICE_MEMORY_LIMIT=unlimited") {
          EXPECT_TRUE(r.config.any_memory_limit) << e;
        }
      }
    }
    // Any memory parse error with no valid file value for device 7 (never named per device in
    // these inputs) leaves device 7 limited, never unlimited.
    bool env_memory_all_bad = false;
    for (const std::string& e : env) {
      if (e.rfind("CUDA_DEVICE_MEMORY_LIMIT=", 0) != 0) continue;
      std::string v = e.substr(25);
      SourceSettings probe;
      Config c;
      ConfigErrors pe;
      std::string entry = e;
      char* envp[] = {entry.data(), nullptr};
      ParseEnvironment(envp, &probe, &c, &pe);
      env_memory_all_bad |= probe.memory_all.state == Setting::kInvalid;
    }
    if (env_memory_all_bad && f.memory_all.state == Setting::kUnset) {
      EXPECT_NE(r.config.memory_limit[7], kNoLimit);
    }
  }
}

}  // namespace
}  // namespace vgpu::intercept
