#include "intercept/config/copy_config.h"

#include "common/units.h"

namespace vgpu::intercept {
namespace {

using std::string_view;
using units_internal::EqualsIgnoreCase;

Setting Rate(string_view value, const char* where, ConfigErrors* errors) {
  if (EqualsIgnoreCase(value, "unlimited")) return {Setting::kValue, kNoLimit};
  Parsed<uint64_t> p = ParseRateRaw(value);
  if (!p.ok() || p.value < kMinCopyRate || p.value > kMaxCopyRate) {
    errors->Add(
        "%s: \"%.*s\" is not a copy bandwidth between 1MB/s and 10TB/s (e.g. 10GB/s) "
        "or unlimited",
        where, static_cast<int>(value.size()), value.data());
    return {Setting::kInvalid, 0};
  }
  return {Setting::kValue, p.value};
}

uint64_t RateOf(const Setting& s) {
  if (s.state == Setting::kInvalid) return kMinCopyRate;
  if (s.state == Setting::kUnset || s.value == kNoLimit) return 0;
  return s.value;
}

}  // namespace

bool ApplyCopyKey(string_view key, string_view value, bool file_keys, const char* where,
                  SourceSettings* s, ConfigErrors* errors) {
  auto is = [&](string_view env_name, string_view file_name) {
    return key == env_name || (file_keys && key == file_name);
  };
  if (is("VGPU_COPY_H2D", "copy_h2d")) {
    KeepSmaller(&s->copy_rate[0], Rate(value, where, errors));
    return true;
  }
  if (is("VGPU_COPY_D2H", "copy_d2h")) {
    KeepSmaller(&s->copy_rate[1], Rate(value, where, errors));
    return true;
  }
  if (is("VGPU_COPY_BURST", "copy_burst")) {
    Parsed<int64_t> p = ParseDurationRaw(value);
    Setting v{Setting::kValue, static_cast<uint64_t>(p.value)};
    if (!p.ok() || p.value < 0 || static_cast<uint64_t>(p.value) > kMaxCopyBurstNs) {
      errors->Add("%s: \"%.*s\" is not a copy burst between 0 and 1s (e.g. 5ms)", where,
                  static_cast<int>(value.size()), value.data());
      v = {Setting::kInvalid, 0};
    }
    KeepSmaller(&s->copy_burst, v);
    return true;
  }
  if (is("VGPU_COPY_CHUNK", "copy_chunk")) {
    Parsed<uint64_t> p = ParseByteSizeRaw(value);
    Setting v{Setting::kValue, p.value};
    if (!p.ok() || p.value < kMinCopyChunk || p.value > kMaxCopyChunk) {
      errors->Add("%s: \"%.*s\" is not a copy chunk between 64KiB and 1GiB (e.g. 4MiB)", where,
                  static_cast<int>(value.size()), value.data());
      v = {Setting::kInvalid, 0};
    }
    if (s->copy_chunk.state == Setting::kUnset || v.state == Setting::kInvalid) s->copy_chunk = v;
    return true;
  }
  if (is("VGPU_COPY_BORROW", "copy_borrow")) {
    Setting v{Setting::kInvalid, 0};
    if (EqualsIgnoreCase(value, "on") || value == "1" || EqualsIgnoreCase(value, "true")) {
      v = {Setting::kValue, 1};
    } else if (EqualsIgnoreCase(value, "off") || value == "0" || EqualsIgnoreCase(value, "false")) {
      v = {Setting::kValue, 0};
    } else {
      errors->Add("%s: \"%.*s\" is not on or off", where, static_cast<int>(value.size()),
                  value.data());
    }
    KeepSmaller(&s->copy_borrow, v);  // off (and invalid) win over on
    return true;
  }
  return false;
}

void MergeCopySources(const SourceSettings& other, SourceSettings* into) {
  for (int d = 0; d < 2; ++d) {
    if (other.copy_rate[d].state != Setting::kUnset) {
      KeepSmaller(&into->copy_rate[d], other.copy_rate[d]);
    }
  }
  if (other.copy_burst.state != Setting::kUnset) KeepSmaller(&into->copy_burst, other.copy_burst);
  if (into->copy_chunk.state == Setting::kUnset) into->copy_chunk = other.copy_chunk;
  if (other.copy_borrow.state != Setting::kUnset) {
    KeepSmaller(&into->copy_borrow, other.copy_borrow);
  }
}

void CombineCopy(const SourceSettings& file, const SourceSettings& env, Config* config) {
  config->copy_paced = false;
  for (int d = 0; d < 2; ++d) {
    Setting r = file.copy_rate[d];
    if (env.copy_rate[d].state != Setting::kUnset) KeepSmaller(&r, env.copy_rate[d]);
    config->copy_rate[d] = RateOf(r);
    if (config->copy_rate[d] != 0) config->copy_paced = true;
  }
  Setting b = file.copy_burst;
  if (env.copy_burst.state != Setting::kUnset) KeepSmaller(&b, env.copy_burst);
  config->copy_burst_ns = b.state == Setting::kValue   ? b.value
                          : b.state == Setting::kUnset ? kDefaultCopyBurstNs
                                                       : 0;
  const Setting& c = file.copy_chunk.state != Setting::kUnset ? file.copy_chunk : env.copy_chunk;
  config->copy_chunk_bytes = c.state == Setting::kValue ? c.value : kDefaultCopyChunk;
  Setting w = file.copy_borrow;
  if (env.copy_borrow.state != Setting::kUnset) KeepSmaller(&w, env.copy_borrow);
  config->copy_borrow = w.state == Setting::kValue && w.value == 1;
}

}  // namespace vgpu::intercept
