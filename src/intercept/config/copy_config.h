// Copy-bandwidth settings of libvgpu.so: the keys, their parsers and how the limits files and the
// environment combine (the file wins; the environment may only lower). Part of config.h's
// pipeline, like compute_config.h.
//
//   limits file    environment        meaning
//   copy_h2d       VGPU_COPY_H2D      host-to-device cap of the slice: a rate (10GB/s, 512MiB/s;
//                                     1MB/s..10TB/s) or "unlimited"
//   copy_d2h       VGPU_COPY_D2H      device-to-host cap, the same
//   copy_burst     VGPU_COPY_BURST    bucket depth as time at the cap, 0..1s (default 5ms)
//   copy_chunk     VGPU_COPY_CHUNK    pacing granularity, 64KiB..1GiB (default 4MiB)
//   copy_borrow    VGPU_COPY_BORROW   on|off: work conservation (copy_pacer.h), default off
// (The environment names are accepted as file keys too.)
//
// Combination: caps and burst min(file, env); chunk the file's, else the environment's; borrow
// on only when a source turns it on and none turns it off. Bad values are reported and take the
// safe side: a cap of 1MB/s, a burst of 0, the default chunk, no borrowing.
#pragma once

#include <string_view>

#include "intercept/config/config.h"

namespace vgpu::intercept {

inline constexpr uint64_t kMinCopyRate = 1'000'000;              // 1 MB/s
inline constexpr uint64_t kMaxCopyRate = 10'000'000'000'000ULL;  // 10 TB/s
inline constexpr uint64_t kDefaultCopyBurstNs = 5'000'000;       // 5 ms
inline constexpr uint64_t kMaxCopyBurstNs = 1'000'000'000;       // 1 s
inline constexpr uint64_t kDefaultCopyChunk = 4ULL << 20;        // 4 MiB
inline constexpr uint64_t kMinCopyChunk = 64ULL << 10;           // 64 KiB
inline constexpr uint64_t kMaxCopyChunk = 1ULL << 30;            // 1 GiB

// Applies one copy key to a source; false if `key` is not a copy key.
bool ApplyCopyKey(std::string_view key, std::string_view value, bool file_keys, const char* where,
                  SourceSettings* s, ConfigErrors* errors);

// Merges the copy settings of a second limits file into `into` (the more restrictive value).
void MergeCopySources(const SourceSettings& other, SourceSettings* into);

// Fills the copy fields of `config` from the two sources.
void CombineCopy(const SourceSettings& file, const SourceSettings& env, Config* config);

}  // namespace vgpu::intercept
