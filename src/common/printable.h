// Printable text for messages that echo untrusted bytes (a line of a file, a value from the
// environment, a command line) to a terminal or a log.
//
// EscapeForDisplay copies printable ASCII (0x20..0x7e) as is and writes every other byte —
// control characters, DEL, bytes of non-ASCII text — as \xNN, so nothing it writes can move the
// cursor, change colours or end the line. Input beyond `max_input` bytes, or output that would
// not fit, is cut and marked with "...". The output is always NUL-terminated (when `size` > 0).
//
// Header-only, allocation-free and exception-free: usable inside the interception library.
#pragma once

#include <cstddef>
#include <string_view>

namespace vgpu {

// Returns the length written (without the NUL).
inline size_t EscapeForDisplay(std::string_view in, char* out, size_t size,
                               size_t max_input = static_cast<size_t>(-1)) {
  if (size == 0) return 0;
  constexpr char kHex[] = "0123456789abcdef";
  constexpr size_t kEllipsis = 3;
  auto width = [](unsigned char c) -> size_t { return c >= 0x20 && c < 0x7f ? 1 : 4; };
  // Whether everything fits; if not, stop early enough to leave room for "...".
  size_t total = 0;
  for (unsigned char c : in) total += width(c);
  const bool cut = in.size() > max_input || total + 1 > size;
  size_t n = 0;
  for (size_t i = 0; i < in.size() && i < max_input; ++i) {
    unsigned char c = static_cast<unsigned char>(in[i]);
    if (n + width(c) + (cut ? kEllipsis : 0) + 1 > size) break;
    if (width(c) == 1) {
      out[n++] = static_cast<char>(c);
    } else {
      out[n++] = '\\';
      out[n++] = 'x';
      out[n++] = kHex[c >> 4];
      out[n++] = kHex[c & 15];
    }
  }
  if (cut) {
    for (size_t k = 0; k < kEllipsis && n + 1 < size; ++k) out[n++] = '.';
  }
  out[n] = '\0';
  return n;
}

}  // namespace vgpu
