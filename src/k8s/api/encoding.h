// Small text encodings used by the Kubernetes client: base64 (kubeconfig *-data fields), URL query
// escaping (label and field selectors), and reading a whole file.
//
// Contract: pure functions, thread-safe. Base64Decode accepts the standard alphabet with optional
// '=' padding and ignores ASCII whitespace (kubeconfig values are sometimes wrapped); any other
// character is kInvalidArgument naming its offset.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace vgpu::k8s {

Result<std::string> Base64Decode(std::string_view in);
std::string Base64Encode(std::string_view in);

// Percent-encodes everything but RFC 3986 unreserved characters.
std::string UrlEncode(std::string_view in);

// Reads a whole file (a kubeconfig, token, certificate). kNotFound when it does not exist,
// kIoError when it cannot be read, kInvalidArgument for a directory, a device (/dev/zero) or more
// than kMaxWholeFileBytes.
inline constexpr size_t kMaxWholeFileBytes = 64ULL << 20;
Result<std::string> ReadWholeFile(const std::string& path);

}  // namespace vgpu::k8s
