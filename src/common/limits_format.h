// The limits file: the contract between its writers (the node daemon for a container, `vgpu run`
// for a command) and its reader, libvgpu.so (src/intercept/config/limits_file.cc).
// docs/intercept.md, "Configuration", describes the keys.
//
// Text, UTF-8, one `key=value` per line, every line ended by a newline; `#` starts a comment
// line. A file written by vgpu opens with kLimitsFileHeader as its first line and closes with
// kLimitsFileEnd as its last, so that a file cut short (a full disk, a crash during a copy) is
// recognisable at every length: either its last line has no newline, or the end marker is
// missing. Both markers are comments, so older readers ignore them.
//
// Writers write the file atomically (common/atomic_file.h), so a reader never sees a file being
// written; the markers protect against what happens to the file afterwards.
#pragma once

#include <cstdint>
#include <string_view>

namespace vgpu {

// The first line of a file written by vgpu (the number is the format's version).
inline constexpr std::string_view kLimitsFileHeader = "# vgpu-limits 1";
// Every line that starts with this prefix announces a vgpu-written file (any version).
inline constexpr std::string_view kLimitsFileHeaderPrefix = "# vgpu-limits";
// The last line of a file written by vgpu; nothing may follow it.
inline constexpr std::string_view kLimitsFileEnd = "# end vgpu-limits";

// The memory modes (key memory_mode, docs/oversubscription.md), numbered as libvgpu.so stores
// them; their names are the values the limits file, `vgpu run --memory-mode` and the
// vgpu.io/compute annotation's memory-mode key take.
enum class MemoryMode : uint32_t { kStrict = 0, kOvercommit = 1, kSpill = 2 };
inline constexpr std::string_view kMemoryModeNames[] = {"strict", "overcommit", "spill"};

inline constexpr std::string_view MemoryModeName(MemoryMode mode) {
  return kMemoryModeNames[static_cast<uint32_t>(mode)];
}

// The mode named exactly `name`; false (and `mode` untouched) for any other text.
inline constexpr bool ParseMemoryMode(std::string_view name, MemoryMode* mode) {
  for (uint32_t i = 0; i < 3; ++i) {
    if (name == kMemoryModeNames[i]) {
      *mode = static_cast<MemoryMode>(i);
      return true;
    }
  }
  return false;
}

}  // namespace vgpu
