// The limits file: the contract between its writers (the node daemon for a container, `vgpu run`
// for a command) and its reader, libvgpu.so (src/intercept/limits_file.h). docs/intercept.md,
// "Configuration", describes the keys.
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

#include <string_view>

namespace vgpu {

// The first line of a file written by vgpu (the number is the format's version).
inline constexpr std::string_view kLimitsFileHeader = "# vgpu-limits 1";
// Every line that starts with this prefix announces a vgpu-written file (any version).
inline constexpr std::string_view kLimitsFileHeaderPrefix = "# vgpu-limits";
// The last line of a file written by vgpu; nothing may follow it.
inline constexpr std::string_view kLimitsFileEnd = "# end vgpu-limits";

}  // namespace vgpu
