// Quoting user input for error messages without echoing it whole: a CSV field or a flag value can
// be any length, and a message should stay one readable line.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace vgpu {

inline constexpr size_t kQuoteMax = 64;

// `"text"`, or, for text longer than `max` bytes, its first `max` bytes (never cutting a UTF-8
// sequence) as `"abc..." (100000 bytes)`.
inline std::string Quote(std::string_view text, size_t max = kQuoteMax) {
  if (text.size() <= max) return "\"" + std::string(text) + "\"";
  size_t cut = max;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so that a character is never split.
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "\"" + std::string(text.substr(0, cut)) + "...\" (" + std::to_string(text.size()) +
         " bytes)";
}

// `text` itself when at most `max` bytes, else cut like Quote (without the quotes).
inline std::string Shorten(std::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace vgpu
