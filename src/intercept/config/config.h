// Configuration of libvgpu.so: limits and settings from the environment and from read-only
// limits files, combined so that the files win.
//
// Sources, in order of authority:
//   1. Limits files: /etc/vgpu/limits (when present) and $VGPU_LIMITS_FILE. key=value lines,
//      '#' comments; see docs/intercept.md for the keys and common/limits_format.h for the
//      format. Both are read; the smaller limit wins. A file is trusted only whole: anything
//      wrong with it (a line that does not parse, bad bytes, a cut-short file, an empty,
//      unreadable or oversized file, a directory) rejects it, and a rejected file takes the safe
//      side of every setting (RejectSource) — 0 bytes of memory, 1% of compute — reported in
//      one message that names the file and line (limits_file.cc).
//   2. The environment: HAMi-core names (CUDA_DEVICE_MEMORY_LIMIT[_<i>],
//      CUDA_DEVICE_SM_LIMIT[_<i>], CUDA_DEVICE_MEMORY_SHARED_CACHE, CUDA_TASK_PRIORITY,
//      LIBCUDA_LOG_LEVEL) and VGPU_* names.
//
// Combination rules (per device):
//   - memory: min(file, env). The environment can lower a limit, never raise it. In the
//     environment 0 means "no limit" (HAMi-core); in a file "unlimited" means no limit.
//   - a value in the environment that does not parse is reported once and replaced by the safe
//     side: a bad per-device value falls back to the environment's all-devices value, a bad
//     environment value to the file's, and when nothing valid remains the limit is 0 bytes
//     (every allocation refused) — never "no limit". (A bad value in a file rejects the file.)
//   - compute (percent): the same, with 0 or 100 meaning no limit; the safe side of a bad value
//     with nothing to fall back on is 1%.
//   - compute sharing (compute_config.h): max share as above; guarantee and weight min(file,
//     env); priority level: the less important of the two; mode, time slice and arbiter
//     directory: the file's when it sets them.
//   - context overhead: the larger of the file's and the environment's.
//   - memory mode (memory_mode / VGPU_MEMORY_MODE: strict, overcommit or spill;
//     docs/oversubscription.md): the file's when it sets one, lowered by the environment's
//     (strict < overcommit < spill), else the environment's; a bad value is strict.
//   - region path: the file's, else CUDA_DEVICE_MEMORY_SHARED_CACHE, else VGPU_REGION, else a
//     per-user default in /tmp when any limit is set (not when a file was rejected: that process
//     accounts alone).
//   - paths: a file's must be absolute; a relative path from the environment (region, arbiter
//     and state directories) is made absolute against the working directory when the
//     configuration is read, so a later chdir() does not move it.
//   - a memory limit above 0 but not above the context overhead leaves nothing to allocate once
//     a context exists: reported as a warning naming both numbers.
//
// Parsing is pure (inputs are passed in), allocation-free and exception-free.
#pragma once

#include <climits>
#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/limits_format.h"
#include "shm/arbiter.h"
#include "shm/region.h"

namespace vgpu::intercept {

inline constexpr int kMaxDevices = shm::kMaxDevices;
inline constexpr uint64_t kNoLimit = shm::kNoLimit;
inline constexpr uint64_t kDefaultContextOverhead = 256ULL << 20;
inline constexpr const char* kSystemLimitsFile = "/etc/vgpu/limits";
inline constexpr size_t kPathMax = 512;
inline constexpr size_t kMaxLimitsFileSize = 64 * 1024;

// How a slice's allocations meet the GPU's physical memory (common/limits_format.h's MemoryMode,
// docs/oversubscription.md), as the config stores it. In libvgpu strict and overcommit behave
// alike (the driver's out-of-memory error at physical exhaustion); they differ in what the node
// may promise. Spill serves an allocation within the limit that the GPU cannot hold from managed
// memory preferring the host (low-priority slices).
inline constexpr uint32_t kMemoryStrict = static_cast<uint32_t>(MemoryMode::kStrict);
inline constexpr uint32_t kMemoryOvercommit = static_cast<uint32_t>(MemoryMode::kOvercommit);
inline constexpr uint32_t kMemorySpill = static_cast<uint32_t>(MemoryMode::kSpill);

// Errors (and warnings) found while parsing, kept for one report on stderr (and for tests).
// Every message is printable ASCII: bytes from files and the environment are escaped
// (common/printable.h) and long messages cut.

struct ConfigErrors {
  static constexpr int kMax = 16;
  int count = 0;
  char messages[kMax][400] = {};
  bool warning[kMax] = {};  // a warning rather than an error
  void Add(const char* format, ...) __attribute__((format(printf, 2, 3)));
  void AddWarning(const char* format, ...) __attribute__((format(printf, 2, 3)));

 private:
  void Append(bool is_warning, const char* format, va_list args);
};

// One source's value for one setting.
struct Setting {
  enum State : uint8_t { kUnset, kValue, kUnlimited, kInvalid };
  State state = kUnset;
  uint64_t value = 0;
};

// The smaller value wins; an invalid value dominates.
inline void KeepSmaller(Setting* into, Setting value) {
  if (into->state == Setting::kUnset || value.state == Setting::kInvalid) {
    *into = value;
    return;
  }
  if (into->state == Setting::kInvalid) return;
  if (value.value < into->value) *into = value;
}

// The larger value (the less important priority level) wins; an invalid value dominates.
inline void KeepLarger(Setting* into, Setting value) {
  if (into->state == Setting::kUnset || value.state == Setting::kInvalid) {
    *into = value;
    return;
  }
  if (into->state == Setting::kInvalid) return;
  if (value.value > into->value) *into = value;
}

// What one source (a file, or the environment) says.
struct SourceSettings {
  Setting memory_all;
  Setting memory[kMaxDevices];
  Setting sm_all;
  Setting sm[kMaxDevices];
  Setting priority;  // a shm::PriorityLevel
  Setting context_overhead;
  Setting guarantee_all;
  Setting guarantee[kMaxDevices];
  Setting weight;
  Setting mode;           // shm::ComputeMode
  Setting time_slice;     // nanoseconds
  Setting latency_slack;  // nanoseconds
  Setting copy_rate[2];   // bytes/s per direction (copy_config.h); kUnlimited: no cap
  Setting copy_burst;     // nanoseconds
  Setting copy_chunk;     // bytes
  Setting copy_borrow;    // 0 off, 1 on
  Setting memory_mode;    // a MemoryMode
  char arbiter_dir[kPathMax] = {};
  char region[kPathMax] = {};
  char uuid[kMaxDevices][shm::kUuidLength] = {};
  int highest_device = -1;  // highest per-device index mentioned
  bool rejected = false;    // a limits file that was rejected (RejectSource)
};

// The combined configuration the library runs with.
struct Config {
  uint64_t memory_limit[kMaxDevices];  // per-process effective limit (bytes or kNoLimit)
  uint64_t region_limit[kMaxDevices];  // the limit written into a region this process creates
  uint64_t env_limit[kMaxDevices];     // the environment's own limit (kNoLimit: none): what
                                       // still bounds the process when the slice was resized
  uint32_t sm_limit[kMaxDevices];      // max share, percent; 0 = no compute limit
  uint32_t guarantee[kMaxDevices];     // guaranteed share, percent (capped mode: the max)
  uint32_t weight = 1;                 // share of spare GPU time among equals
  uint32_t compute_mode = shm::kModeCapped;
  uint64_t time_slice_ns = shm::kDefaultTimeSliceNs;
  uint64_t latency_slack_ns = 0;            // delay this slice accepts from less important ones
  int32_t priority = shm::kPriorityNormal;  // shm::PriorityLevel
  char arbiter_dir[kPathMax] = {};          // "" = the default (compute_config.h)
  uint64_t copy_rate[2] = {0, 0};           // copy cap per direction, bytes/s; 0 = none
  uint64_t copy_burst_ns = 0;               // bucket depth in time at the cap
  uint64_t copy_chunk_bytes = 0;            // pacing granularity
  bool copy_borrow = false;                 // work conservation (copy_config.h)
  bool copy_paced = false;                  // a cap is set in some direction
  uint32_t memory_mode = kMemoryStrict;     // a MemoryMode
  uint64_t context_overhead = kDefaultContextOverhead;
  char region_path[kPathMax] = {};
  char real_libcuda[kPathMax] = {};
  char real_libnvml[kPathMax] = {};
  char uuid[kMaxDevices][shm::kUuidLength] = {};
  int log_level = 2;
  uint32_t device_count = 1;  // devices the slice is configured for (for display)
  uint32_t test_critical_delay_us = 0;
  bool any_memory_limit = false;
  bool compute_limited = false;  // any compute setting: launches go through the gate

  Config();
};

// Parses the text of a limits file (limits_file.cc). `name` is used in messages
// ("file:line: ..."). On any error `out` is rejected (RejectSource) and one message added.
void ParseLimitsFile(const char* text, size_t length, const char* name, SourceSettings* out,
                     ConfigErrors* errors);

// Reads and parses a limits file (limits_file.cc). A missing file is not an error when
// `optional`; anything else that keeps the file from being read whole rejects it.
void LoadLimitsFile(const char* path, bool optional, SourceSettings* out, ConfigErrors* errors);

// Makes `s` a rejected file source: every limit it could hold is invalid, so each takes its
// safe side when combined (no memory, 1% compute, capped, weight 1, idle priority, the default
// time slice); it names no region, arbiter directory or UUID, and leaves the context overhead to
// the environment.
void RejectSource(SourceSettings* s);

// Applies one key=value pair to a source (either kind); false for an unknown key. `file_keys`
// enables the limits-file spellings (memory.<i>, cores, region, uuid.<i>, ...).
bool ApplyConfigKey(std::string_view key, std::string_view value, bool file_keys, const char* where,
                    SourceSettings* s, ConfigErrors* errors);

// `s` without leading spaces and tabs and without trailing spaces, tabs and carriage returns.
std::string_view TrimBlanks(std::string_view s);

// Writes `path` made absolute against the current working directory into `out` (as is when it
// is absolute already). False, with `out` empty, when it does not fit or the working directory
// is unknown.
bool MakeAbsolutePath(std::string_view path, char* out, size_t size);

// Parses the environment (a NULL-terminated `envp` array of "KEY=VALUE").
void ParseEnvironment(char* const* envp, SourceSettings* env, Config* config, ConfigErrors* errors);

// Combines a file source (possibly empty) and the environment into `config` (rules above).
// `visible_devices` is the number of entries in CUDA_VISIBLE_DEVICES (0 when unset).
void CombineSettings(const SourceSettings& file, const SourceSettings& env, int visible_devices,
                     uid_t uid, Config* config, ConfigErrors* errors);

// Everything at once from the real process environment and files.
void LoadConfig(char* const* envp, Config* config, ConfigErrors* errors);

// Merges two file sources into `into` (the smaller limit of each, the larger priority and
// overhead, the first region path).
void MergeFileSources(const SourceSettings& other, SourceSettings* into);

}  // namespace vgpu::intercept
