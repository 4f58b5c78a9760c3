#include "intercept/config/compute_config.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/units.h"

namespace vgpu::intercept {
namespace {

using std::string_view;
using units_internal::EqualsIgnoreCase;
using units_internal::Sub;

int ParseIndex(string_view s) {
  if (s.empty() || s.size() > 2) return -1;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v < kMaxDevices ? v : -1;
}

Setting Percent(string_view v, const char* where, ConfigErrors* errors) {
  Parsed<int> p = ParsePercentRaw(v);
  if (!p.ok()) {
    string_view why = ParseErrorText(p.error);
    errors->Add("%s: \"%.*s\" is not a percentage 0-100 (%.*s)", where, static_cast<int>(v.size()),
                v.data(), static_cast<int>(why.size()), why.data());
    return {Setting::kInvalid, 0};
  }
  return {Setting::kValue, static_cast<uint64_t>(p.value)};
}

void CopyString(string_view value, char* out, size_t size) {
  size_t n = value.size() < size - 1 ? value.size() : size - 1;
  std::memcpy(out, value.data(), n);
  out[n] = '\0';
}

const char* FindEnv(char* const* envp, string_view name) {
  for (char* const* e = envp; e != nullptr && *e != nullptr; ++e) {
    string_view entry(*e);
    if (entry.size() > name.size() && entry[name.size()] == '=' &&
        Sub(entry, 0, name.size()) == name) {
      return *e + name.size() + 1;
    }
  }
  return nullptr;
}

}  // namespace

bool ApplyComputeKey(string_view key, string_view value, bool file_keys, const char* where,
                     SourceSettings* s, ConfigErrors* errors) {
  auto is = [&](string_view env_name, string_view file_name) {
    return key == env_name || (file_keys && key == file_name);
  };
  // guarantee / guarantee.<i> / VGPU_CORES_GUARANTEE / VGPU_CORES_GUARANTEE_<i>
  int index = -2;
  constexpr string_view kEnvG = "VGPU_CORES_GUARANTEE";
  if (key == kEnvG || (file_keys && key == "guarantee")) {
    index = -1;
  } else if (Sub(key, 0, kEnvG.size() + 1) == "VGPU_CORES_GUARANTEE_") {
    index = ParseIndex(Sub(key, kEnvG.size() + 1));
    if (index < 0) index = -3;
  } else if (file_keys && Sub(key, 0, 10) == "guarantee.") {
    index = ParseIndex(Sub(key, 10));
    if (index < 0) index = -3;
  }
  if (index != -2) {
    if (index == -3) {
      errors->Add("%s: device index in %.*s must be 0..%d", where, static_cast<int>(key.size()),
                  key.data(), kMaxDevices - 1);
      return true;
    }
    Setting v = Percent(value, where, errors);
    KeepSmaller(index < 0 ? &s->guarantee_all : &s->guarantee[index], v);
    if (index >= 0 && index > s->highest_device) s->highest_device = index;
    return true;
  }
  if (is("VGPU_CORES_WEIGHT", "weight")) {
    Parsed<uint64_t> p = ParseUnsignedRaw(value);
    Setting v{Setting::kValue, p.value};
    if (!p.ok() || p.value < 1 || p.value > shm::kMaxWeight) {
      errors->Add("%s: \"%.*s\" is not a weight 1-%u", where, static_cast<int>(value.size()),
                  value.data(), shm::kMaxWeight);
      v = {Setting::kInvalid, 0};
    }
    KeepSmaller(&s->weight, v);
    return true;
  }
  if (is("VGPU_CORES_MODE", "mode")) {
    Setting v{Setting::kInvalid, 0};
    if (EqualsIgnoreCase(value, "capped")) {
      v = {Setting::kValue, shm::kModeCapped};
    } else if (EqualsIgnoreCase(value, "elastic")) {
      v = {Setting::kValue, shm::kModeElastic};
    } else {
      errors->Add("%s: \"%.*s\" is not a mode (capped or elastic)", where,
                  static_cast<int>(value.size()), value.data());
    }
    // Capped is the safe side of two conflicting values.
    KeepSmaller(&s->mode, v);
    return true;
  }
  if (key == "CUDA_TASK_PRIORITY" || key == "VGPU_PRIORITY" || (file_keys && key == "priority")) {
    int32_t level = 0;
    Setting v{Setting::kInvalid, 0};
    if (shm::ParsePriority(value, &level)) {
      v = {Setting::kValue, static_cast<uint64_t>(level)};
    } else {
      errors->Add(
          "%s: \"%.*s\" is not a priority (realtime, high, normal, low, idle; or 0 high, "
          "1 normal)",
          where, static_cast<int>(value.size()), value.data());
    }
    KeepLarger(&s->priority, v);
    return true;
  }
  if (is("VGPU_TIME_SLICE", "time_slice")) {
    Parsed<int64_t> p = ParseDurationRaw(value);
    Setting v{Setting::kValue, static_cast<uint64_t>(p.value)};
    if (!p.ok() || static_cast<uint64_t>(p.value) < shm::kMinTimeSliceNs ||
        static_cast<uint64_t>(p.value) > shm::kMaxTimeSliceNs) {
      errors->Add("%s: \"%.*s\" is not a time slice between 500us and 1s (e.g. 5ms)", where,
                  static_cast<int>(value.size()), value.data());
      v = {Setting::kInvalid, 0};
    }
    if (s->time_slice.state == Setting::kUnset || v.state == Setting::kInvalid) s->time_slice = v;
    return true;
  }
  if (is("VGPU_LATENCY_SLACK", "latency_slack")) {
    Parsed<int64_t> p = ParseDurationRaw(value);
    Setting v{Setting::kValue, static_cast<uint64_t>(p.value)};
    if (!p.ok() || p.value < 0 ||
        static_cast<uint64_t>(p.value) > uint64_t{shm::kMaxLatencySlackUs} * 1000) {
      errors->Add("%s: \"%.*s\" is not a latency slack between 0 and 1s (e.g. 1ms)", where,
                  static_cast<int>(value.size()), value.data());
      v = {Setting::kInvalid, 0};
    }
    // More slack concedes more to other slices: the larger value wins.
    KeepLarger(&s->latency_slack, v);
    return true;
  }
  if (is("VGPU_ARBITER_DIR", "arbiter_dir")) {
    if (value.empty() || value.size() >= kPathMax - 64) {
      errors->Add("%s: arbiter directory is empty or too long", where);
    } else if (s->arbiter_dir[0] == '\0') {
      if (file_keys) {
        CopyString(value, s->arbiter_dir, sizeof(s->arbiter_dir));
      } else if (!MakeAbsolutePath(value, s->arbiter_dir, kPathMax - 64)) {
        errors->Add("%s: arbiter directory too long once made absolute", where);
      }
    }
    return true;
  }
  return false;
}

void MergeComputeSources(const SourceSettings& other, SourceSettings* into) {
  if (other.guarantee_all.state != Setting::kUnset) {
    KeepSmaller(&into->guarantee_all, other.guarantee_all);
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    if (other.guarantee[d].state != Setting::kUnset) {
      KeepSmaller(&into->guarantee[d], other.guarantee[d]);
    }
  }
  if (other.weight.state != Setting::kUnset) KeepSmaller(&into->weight, other.weight);
  if (other.mode.state != Setting::kUnset) KeepSmaller(&into->mode, other.mode);
  if (other.priority.state != Setting::kUnset) KeepLarger(&into->priority, other.priority);
  if (into->time_slice.state == Setting::kUnset) into->time_slice = other.time_slice;
  if (other.latency_slack.state != Setting::kUnset) {
    KeepLarger(&into->latency_slack, other.latency_slack);
  }
  if (into->arbiter_dir[0] == '\0') {
    std::memcpy(into->arbiter_dir, other.arbiter_dir, sizeof(other.arbiter_dir));
  }
}

void CombineCompute(const SourceSettings& file, const SourceSettings& env, Config* config) {
  bool any = config->compute_limited;  // a max share below 100 somewhere
  // Priority: the less important of the two; an invalid value gives the least important level.
  int64_t level = -1;
  for (const Setting* p : {&file.priority, &env.priority}) {
    if (p->state == Setting::kInvalid) level = shm::kPriorityIdle;
    if (p->state == Setting::kValue && static_cast<int64_t>(p->value) > level) {
      level = static_cast<int64_t>(p->value);
    }
  }
  config->priority = level < 0 ? shm::kPriorityNormal : static_cast<int32_t>(level);
  if (config->priority != shm::kPriorityNormal) any = true;

  // Weight: the smaller; invalid gives 1.
  Setting w = file.weight;
  if (env.weight.state != Setting::kUnset) KeepSmaller(&w, env.weight);
  config->weight = w.state == Setting::kValue ? static_cast<uint32_t>(w.value) : 1;
  if (w.state != Setting::kUnset) any = true;

  // Guarantees: min(file, env) per device; invalid gives none.
  bool any_guarantee = false;
  for (int d = 0; d < kMaxDevices; ++d) {
    Setting f = file.guarantee[d].state != Setting::kUnset ? file.guarantee[d] : file.guarantee_all;
    Setting e = env.guarantee[d].state != Setting::kUnset ? env.guarantee[d] : env.guarantee_all;
    Setting g = f;
    if (e.state != Setting::kUnset) KeepSmaller(&g, e);
    config->guarantee[d] = g.state == Setting::kValue ? static_cast<uint32_t>(g.value) : 0;
    if (g.state != Setting::kUnset) any_guarantee = true;
  }

  // Mode: the file's, else the environment's, else elastic iff a guarantee is set.
  const Setting& m = file.mode.state != Setting::kUnset ? file.mode : env.mode;
  if (m.state == Setting::kValue) {
    config->compute_mode = static_cast<uint32_t>(m.value);
    any = true;
  } else if (m.state == Setting::kInvalid) {
    config->compute_mode = shm::kModeCapped;
    any = true;
  } else {
    config->compute_mode = any_guarantee ? shm::kModeElastic : shm::kModeCapped;
  }
  for (int d = 0; d < kMaxDevices; ++d) {
    uint32_t max = config->sm_limit[d] == 0 ? 100 : config->sm_limit[d];
    if (config->compute_mode == shm::kModeCapped) {
      config->guarantee[d] = max < 100 ? max : 0;  // a capped slice without a cap reserves nothing
    } else if (config->guarantee[d] > max) {
      config->guarantee[d] = max;
    }
  }
  if (any_guarantee) any = true;

  const Setting& t = file.time_slice.state != Setting::kUnset ? file.time_slice : env.time_slice;
  config->time_slice_ns = t.state == Setting::kValue ? t.value : shm::kDefaultTimeSliceNs;

  // Latency slack: the larger of the two (more slack only gives time to other slices); an
  // invalid value gives the most.
  Setting slack = file.latency_slack;
  if (env.latency_slack.state != Setting::kUnset) KeepLarger(&slack, env.latency_slack);
  config->latency_slack_ns = slack.state == Setting::kValue     ? slack.value
                             : slack.state == Setting::kInvalid ? shm::kMaxLatencySlackUs * 1000ULL
                                                                : 0;

  const char* dir = file.arbiter_dir[0] != '\0' ? file.arbiter_dir : env.arbiter_dir;
  std::snprintf(config->arbiter_dir, sizeof(config->arbiter_dir), "%s", dir);
  config->compute_limited = any;
}

void DefaultArbiterDir(char* const* envp, uid_t uid, char* out, size_t size) {
  // Relative directories are made absolute now, so that a later chdir() does not move them.
  char absolute[kPathMax];
  const char* state = FindEnv(envp, "VGPU_STATE_DIR");
  if (state != nullptr && state[0] != '\0' && MakeAbsolutePath(state, absolute, sizeof(absolute))) {
    std::snprintf(out, size, "%s/arbiter", absolute);
    return;
  }
  const char* xdg = FindEnv(envp, "XDG_RUNTIME_DIR");
  if (xdg != nullptr && xdg[0] != '\0' && MakeAbsolutePath(xdg, absolute, sizeof(absolute))) {
    std::snprintf(out, size, "%s/vgpu/arbiter", absolute);
    return;
  }
  if (::access("/run", W_OK) == 0) {
    std::snprintf(out, size, "/run/vgpu/arbiter");
    return;
  }
  std::snprintf(out, size, "/tmp/vgpu-%u/arbiter", static_cast<unsigned>(uid));
}

}  // namespace vgpu::intercept
