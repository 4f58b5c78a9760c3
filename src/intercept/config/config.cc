#include "intercept/config/config.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string_view>

#include "common/printable.h"
#include "common/units.h"
#include "intercept/config/compute_config.h"
#include "intercept/config/copy_config.h"

namespace vgpu::intercept {
namespace {

using std::string_view;
using units_internal::Sub;

// Parses a device index suffix ("0".."15"); -1 if invalid.
int ParseIndex(string_view s) {
  if (s.empty() || s.size() > 2) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v < kMaxDevices ? v : -1;
}

// Combines a duplicate value of the same setting: the smaller limit wins, invalid dominates.
void Assign(Setting* into, Setting value) {
  if (into->state == Setting::kUnset || value.state == Setting::kInvalid) {
    *into = value;
    return;
  }
  if (into->state == Setting::kInvalid || value.state == Setting::kUnlimited) return;
  if (into->state == Setting::kUnlimited || value.value < into->value) *into = value;
}

void CopyString(string_view value, char* out, size_t size) {
  size_t n = value.size() < size - 1 ? value.size() : size - 1;
  std::memcpy(out, value.data(), n);
  out[n] = '\0';
}

// Value parsers. `zero_unlimited` is the HAMi-core convention of the environment.
Setting ParseMemory(string_view v, bool zero_unlimited, const char* where, ConfigErrors* errors) {
  if (v == "unlimited" || v == "none") return {Setting::kUnlimited, 0};
  Parsed<uint64_t> p = ParseByteSizeRaw(v);
  if (!p.ok()) {
    string_view why = ParseErrorText(p.error);
    errors->Add("%s: \"%.*s\" is not a size (%.*s; use e.g. 4GiB, 4096m or unlimited)", where,
                static_cast<int>(v.size()), v.data(), static_cast<int>(why.size()), why.data());
    return {Setting::kInvalid, 0};
  }
  if (p.value == 0 && zero_unlimited) return {Setting::kUnlimited, 0};
  // 2^64-1 bytes is a limit too, not the internal "no limit" marker.
  return {Setting::kValue, p.value < kNoLimit ? p.value : kNoLimit - 1};
}

Setting ParseCores(string_view v, const char* where, ConfigErrors* errors) {
  if (v == "unlimited" || v == "none") return {Setting::kUnlimited, 0};
  Parsed<int> p = ParsePercentRaw(v);
  if (!p.ok()) {
    string_view why = ParseErrorText(p.error);
    errors->Add("%s: \"%.*s\" is not a percentage 0-100 (%.*s)", where, static_cast<int>(v.size()),
                v.data(), static_cast<int>(why.size()), why.data());
    return {Setting::kInvalid, 0};
  }
  if (p.value == 0 || p.value == 100) return {Setting::kUnlimited, 0};
  return {Setting::kValue, static_cast<uint64_t>(p.value)};
}

Setting ParseSize(string_view v, const char* where, ConfigErrors* errors) {
  Parsed<uint64_t> p = ParseByteSizeRaw(v);
  if (!p.ok()) {
    errors->Add("%s: \"%.*s\" is not a size", where, static_cast<int>(v.size()), v.data());
    return {Setting::kInvalid, 0};
  }
  return {Setting::kValue, p.value};
}

void NoteIndex(SourceSettings* s, int index) {
  if (index > s->highest_device) s->highest_device = index;
}

// min over limits where kNoLimit means none.
uint64_t Min(uint64_t a, uint64_t b) { return a < b ? a : b; }

// The source's effective setting for device d: the per-device one, else the all-devices one.
// A bad per-device value falls back to a valid all-devices value.
Setting Resolve(const Setting& per_device, const Setting& all) {
  if (per_device.state == Setting::kUnset) return all;
  if (per_device.state == Setting::kInvalid &&
      (all.state == Setting::kValue || all.state == Setting::kUnlimited)) {
    return all;
  }
  return per_device;
}

// File and environment combined for one limit. `deny` is the safe value when nothing valid
// remains; `none` is the value that means "no limit".
uint64_t CombineLimit(Setting file, Setting env, uint64_t deny, uint64_t none) {
  if (file.state == Setting::kInvalid) return deny;
  uint64_t f = file.state == Setting::kValue ? file.value : none;
  uint64_t e = none;
  if (env.state == Setting::kInvalid) {
    if (file.state == Setting::kUnset) return deny;
  } else if (env.state == Setting::kValue) {
    e = env.value;
  }
  return Min(f, e);
}

// "256 MiB" when whole MiB, else the bytes.
void FormatSize(uint64_t bytes, char* out, size_t size) {
  if (bytes != 0 && bytes % (1ULL << 20) == 0) {
    std::snprintf(out, size, "%llu MiB", static_cast<unsigned long long>(bytes >> 20));
  } else {
    std::snprintf(out, size, "%llu bytes", static_cast<unsigned long long>(bytes));
  }
}

// One warning for the devices whose limit leaves nothing once a context is charged.
void WarnAboutSmallLimits(const Config& config, ConfigErrors* errors) {
  const uint64_t overhead = config.context_overhead;
  int first = -1, more = 0;
  for (int d = 0; d < static_cast<int>(config.device_count); ++d) {
    uint64_t limit = config.memory_limit[d];
    if (limit == 0 || limit == kNoLimit || limit > overhead) continue;
    if (first < 0) {
      first = d;
    } else {
      ++more;
    }
  }
  if (first < 0) return;
  char limit_text[32], overhead_text[32], more_text[48] = "";
  FormatSize(config.memory_limit[first], limit_text, sizeof(limit_text));
  FormatSize(overhead, overhead_text, sizeof(overhead_text));
  if (more > 0) std::snprintf(more_text, sizeof(more_text), " (and of %d more devices)", more);
  errors->AddWarning(
      "the memory limit of device %d (%s)%s is not larger than the %s charged for every CUDA "
      "context (VGPU_CONTEXT_OVERHEAD): once a context exists nothing can be allocated; raise "
      "the limit",
      first, limit_text, more_text, overhead_text);
}

}  // namespace

bool ApplyConfigKey(string_view key, string_view value, bool file_keys, const char* where,
                    SourceSettings* s, ConfigErrors* errors) {
  constexpr string_view kMem = "CUDA_DEVICE_MEMORY_LIMIT";
  constexpr string_view kSm = "CUDA_DEVICE_SM_LIMIT";
  auto indexed = [&](string_view prefix, char sep, int* index) -> int {
    // 0: not this key; 1: the all-devices key; 2: an indexed key (index set, or -1 if bad)
    if (Sub(key, 0, prefix.size()) != prefix) return 0;
    if (key.size() == prefix.size()) return 1;
    if (key[prefix.size()] != sep) return 0;
    *index = ParseIndex(Sub(key, prefix.size() + 1));
    if (*index < 0) {
      errors->Add("%s: device index in %.*s must be 0..%d", where, static_cast<int>(key.size()),
                  key.data(), kMaxDevices - 1);
    }
    return 2;
  };
  int index = -1;
  int k;
  if ((k = indexed(kMem, '_', &index)) != 0 ||
      (file_keys && (k = indexed("memory", '.', &index)))) {
    bool hami = Sub(key, 0, kMem.size()) == kMem;
    Setting v = ParseMemory(value, hami, where, errors);
    if (k == 1) {
      Assign(&s->memory_all, v);
    } else if (index >= 0) {
      Assign(&s->memory[index], v);
      NoteIndex(s, index);
    } else {
      // A limit whose device cannot be told: devices without a valid limit of their own take
      // the safe side.
      Assign(&s->memory_all, Setting{Setting::kInvalid, 0});
    }
    return true;
  }
  if ((k = indexed(kSm, '_', &index)) != 0 || (file_keys && (k = indexed("cores", '.', &index)))) {
    Setting v = ParseCores(value, where, errors);
    if (k == 1) {
      Assign(&s->sm_all, v);
    } else if (index >= 0) {
      Assign(&s->sm[index], v);
      NoteIndex(s, index);
    } else {
      Assign(&s->sm_all, Setting{Setting::kInvalid, 0});
    }
    return true;
  }
  if (ApplyComputeKey(key, value, file_keys, where, s, errors)) return true;
  if (ApplyCopyKey(key, value, file_keys, where, s, errors)) return true;
  if (key == "VGPU_MEMORY_MODE" || (file_keys && key == "memory_mode")) {
    Setting v{Setting::kInvalid, 0};
    MemoryMode mode = MemoryMode::kStrict;
    if (ParseMemoryMode(value, &mode)) {
      v = {Setting::kValue, static_cast<uint32_t>(mode)};
    } else {
      errors->Add("%s: \"%.*s\" is not a memory mode (strict, overcommit or spill)", where,
                  static_cast<int>(value.size()), value.data());
    }
    KeepSmaller(&s->memory_mode, v);
    return true;
  }
  if (key == "VGPU_CONTEXT_OVERHEAD" || (file_keys && key == "context_overhead")) {
    Setting v = ParseSize(value, where, errors);
    if (v.state == Setting::kValue) {
      if (s->context_overhead.state != Setting::kValue || v.value > s->context_overhead.value) {
        s->context_overhead = v;
      }
    } else if (s->context_overhead.state == Setting::kUnset) {
      s->context_overhead = v;
    }
    return true;
  }
  if (key == "CUDA_DEVICE_MEMORY_SHARED_CACHE" || (file_keys && key == "region")) {
    if (value.empty() || value.size() >= kPathMax) {
      errors->Add("%s: region path is empty or too long", where);
    } else if (file_keys) {
      CopyString(value, s->region, sizeof(s->region));
    } else if (!MakeAbsolutePath(value, s->region, sizeof(s->region))) {
      errors->Add("%s: region path too long once made absolute", where);
    }
    return true;
  }
  if (file_keys && Sub(key, 0, 5) == "uuid.") {
    int i = ParseIndex(Sub(key, 5));
    if (i < 0) {
      errors->Add("%s: device index in %.*s must be 0..%d", where, static_cast<int>(key.size()),
                  key.data(), kMaxDevices - 1);
    } else if (value.empty() || value.size() >= sizeof(s->uuid[i])) {
      errors->Add("%s: a device UUID of 1 to %zu characters expected", where,
                  sizeof(s->uuid[i]) - 1);
    } else {
      CopyString(value, s->uuid[i], sizeof(s->uuid[i]));
    }
    return true;
  }
  return false;
}

string_view TrimBlanks(string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool MakeAbsolutePath(string_view path, char* out, size_t size) {
  out[0] = '\0';
  size_t at = 0;
  if (path.empty() || path.front() != '/') {
    if (::getcwd(out, size) == nullptr) {
      out[0] = '\0';
      return false;
    }
    at = std::strlen(out);
    if (at == 0 || out[at - 1] != '/') out[at++] = '/';
  }
  if (at + path.size() + 1 > size) {
    out[0] = '\0';
    return false;
  }
  std::memcpy(out + at, path.data(), path.size());
  out[at + path.size()] = '\0';
  return true;
}

void ConfigErrors::Append(bool is_warning, const char* format, va_list args) {
  if (count >= kMax) return;
  char raw[1024];
  std::vsnprintf(raw, sizeof(raw), format, args);
  EscapeForDisplay(raw, messages[count], sizeof(messages[count]));
  warning[count] = is_warning;
  ++count;
}

void ConfigErrors::Add(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Append(false, format, args);
  va_end(args);
}

void ConfigErrors::AddWarning(const char* format, ...) {
  va_list args;
  va_start(args, format);
  Append(true, format, args);
  va_end(args);
}

Config::Config() {
  for (int d = 0; d < kMaxDevices; ++d) {
    memory_limit[d] = kNoLimit;
    region_limit[d] = kNoLimit;
    env_limit[d] = kNoLimit;
    sm_limit[d] = 0;
    guarantee[d] = 0;
  }
}

void ParseEnvironment(char* const* envp, SourceSettings* env, Config* config,
                      ConfigErrors* errors) {
  char vgpu_region[kPathMax] = {};
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    string_view entry(*e);
    size_t eq = entry.find('=');
    if (eq == string_view::npos) continue;
    string_view key = Sub(entry, 0, eq);
    string_view value = Sub(entry, eq + 1);
    if (Sub(key, 0, 5) != "CUDA_" && Sub(key, 0, 5) != "VGPU_" && key != "LIBCUDA_LOG_LEVEL") {
      continue;
    }
    char where[96];
    std::snprintf(where, sizeof(where), "%.*s", static_cast<int>(key.size()), key.data());
    if (ApplyConfigKey(key, value, false, where, env, errors)) continue;
    if (key == "LIBCUDA_LOG_LEVEL" || key == "VGPU_LOG_LEVEL") {
      Parsed<uint64_t> p = ParseUnsignedRaw(value);
      if (p.ok() && p.value <= 4) {
        config->log_level = static_cast<int>(p.value);
      } else {
        errors->Add("%s: \"%.*s\" is not a log level 0-4", where, static_cast<int>(value.size()),
                    value.data());
      }
    } else if (key == "VGPU_REGION") {
      if (!value.empty() && !MakeAbsolutePath(value, vgpu_region, sizeof(vgpu_region))) {
        errors->Add("%s: region path too long once made absolute", where);
      }
    } else if (key == "VGPU_REAL_LIBCUDA") {
      CopyString(value, config->real_libcuda, sizeof(config->real_libcuda));
    } else if (key == "VGPU_REAL_LIBNVML") {
      CopyString(value, config->real_libnvml, sizeof(config->real_libnvml));
    } else if (key == "VGPU_TEST_CRITICAL_SLEEP_US") {
      Parsed<uint64_t> p = ParseUnsignedRaw(value);
      if (p.ok() && p.value <= 60ULL * 1000 * 1000) {
        config->test_critical_delay_us = static_cast<uint32_t>(p.value);
      }
    }
  }
  if (env->region[0] == '\0' && vgpu_region[0] != '\0') {
    std::memcpy(env->region, vgpu_region, sizeof(vgpu_region));
  }
}

void MergeFileSources(const SourceSettings& other, SourceSettings* into) {
  Assign(&into->memory_all, other.memory_all);
  Assign(&into->sm_all, other.sm_all);
  for (int d = 0; d < kMaxDevices; ++d) {
    Assign(&into->memory[d], other.memory[d]);
    Assign(&into->sm[d], other.sm[d]);
    if (into->uuid[d][0] == '\0') std::memcpy(into->uuid[d], other.uuid[d], sizeof(other.uuid[d]));
  }
  MergeComputeSources(other, into);
  MergeCopySources(other, into);
  if (other.memory_mode.state != Setting::kUnset)
    KeepSmaller(&into->memory_mode, other.memory_mode);
  if (other.context_overhead.state == Setting::kValue &&
      (into->context_overhead.state != Setting::kValue ||
       other.context_overhead.value > into->context_overhead.value)) {
    into->context_overhead = other.context_overhead;
  }
  if (into->region[0] == '\0') std::memcpy(into->region, other.region, sizeof(other.region));
  if (other.highest_device > into->highest_device) into->highest_device = other.highest_device;
  into->rejected = into->rejected || other.rejected;
}

void CombineSettings(const SourceSettings& file, const SourceSettings& env, int visible_devices,
                     uid_t uid, Config* config, ConfigErrors* errors) {
  config->any_memory_limit = false;
  config->compute_limited = false;
  for (int d = 0; d < kMaxDevices; ++d) {
    Setting f = Resolve(file.memory[d], file.memory_all);
    Setting e = Resolve(env.memory[d], env.memory_all);
    config->memory_limit[d] = CombineLimit(f, e, 0, kNoLimit);
    config->env_limit[d] = CombineLimit(Setting{}, e, 0, kNoLimit);
    if (f.state == Setting::kUnset) {
      config->region_limit[d] = config->memory_limit[d];
    } else {
      config->region_limit[d] = CombineLimit(f, Setting{}, 0, kNoLimit);
    }
    if (config->memory_limit[d] != kNoLimit) config->any_memory_limit = true;

    Setting fs = Resolve(file.sm[d], file.sm_all);
    Setting es = Resolve(env.sm[d], env.sm_all);
    uint64_t sm = CombineLimit(fs, es, 1, 0xffffffffu);
    config->sm_limit[d] = sm == 0xffffffffu ? 0 : static_cast<uint32_t>(sm);
    if (config->sm_limit[d] != 0) config->compute_limited = true;
    std::memcpy(config->uuid[d], file.uuid[d], sizeof(config->uuid[d]));
  }

  CombineCompute(file, env, config);
  CombineCopy(file, env, config);
  Setting mode = file.memory_mode;
  if (env.memory_mode.state != Setting::kUnset) KeepSmaller(&mode, env.memory_mode);
  config->memory_mode =
      mode.state == Setting::kValue ? static_cast<uint32_t>(mode.value) : kMemoryStrict;

  uint64_t overhead = 0;
  bool overhead_set = false;
  for (const Setting* s : {&file.context_overhead, &env.context_overhead}) {
    if (s->state == Setting::kValue) {
      overhead = s->value > overhead ? s->value : overhead;
      overhead_set = true;
    }
  }
  config->context_overhead = overhead_set ? overhead : kDefaultContextOverhead;
  if (file.context_overhead.state == Setting::kInvalid ||
      env.context_overhead.state == Setting::kInvalid) {
    if (config->context_overhead < kDefaultContextOverhead) {
      config->context_overhead = kDefaultContextOverhead;
    }
  }

  const char* region = file.region[0] != '\0' ? file.region : env.region;
  if (region[0] != '\0') {
    std::snprintf(config->region_path, sizeof(config->region_path), "%s", region);
  } else if ((config->any_memory_limit || config->compute_limited) && !file.rejected) {
    std::snprintf(config->region_path, sizeof(config->region_path), "/tmp/vgpu-slice-%u.region",
                  static_cast<unsigned>(uid));
  } else {
    config->region_path[0] = '\0';
  }

  int highest = file.highest_device > env.highest_device ? file.highest_device : env.highest_device;
  int count = highest + 1;
  if (visible_devices > count) count = visible_devices;
  if (count < 1) count = 1;
  if (count > kMaxDevices) count = kMaxDevices;
  config->device_count = static_cast<uint32_t>(count);
  WarnAboutSmallLimits(*config, errors);
}

void LoadConfig(char* const* envp, Config* config, ConfigErrors* errors) {
  SourceSettings file;
  SourceSettings env;
  ParseEnvironment(envp, &env, config, errors);
  LoadLimitsFile(kSystemLimitsFile, true, &file, errors);
  const char* limits_path = nullptr;
  int visible = 0;
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    string_view entry(*e);
    if (Sub(entry, 0, 17) == "VGPU_LIMITS_FILE=") limits_path = *e + 17;
    if (Sub(entry, 0, 21) == "CUDA_VISIBLE_DEVICES=") {
      string_view list = Sub(entry, 21);
      if (!TrimBlanks(list).empty()) {
        visible = 1;
        for (char c : list) visible += c == ',';
      }
    }
  }
  if (limits_path != nullptr && limits_path[0] != '\0' &&
      std::strcmp(limits_path, kSystemLimitsFile) != 0) {
    SourceSettings extra;
    LoadLimitsFile(limits_path, false, &extra, errors);
    MergeFileSources(extra, &file);
  }
  CombineSettings(file, env, visible, ::getuid(), config, errors);
  if ((config->compute_limited || config->copy_paced) && config->arbiter_dir[0] == '\0') {
    DefaultArbiterDir(envp, ::getuid(), config->arbiter_dir, sizeof(config->arbiter_dir));
  }
}

}  // namespace vgpu::intercept
