// Writing a file so that readers see either the old content or the whole new content, and a
// crash or power loss leaves one of the two on disk — never a mixture or a truncated file.
//
// WriteFileAtomically writes `text` to a temporary file in the same directory as `path`
// (created exclusively, mode 0600), fsyncs it, sets `mode`, renames it over `path` and fsyncs
// the directory. On failure the temporary file is removed, `path` is left as it was, and the
// Status names the step and the errno text. Not thread-safe for the same `path` from one
// process (the temporary name is unique per process and call).
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "common/status.h"

namespace vgpu {

Status WriteFileAtomically(const std::string& path, std::string_view text, mode_t mode);

}  // namespace vgpu
