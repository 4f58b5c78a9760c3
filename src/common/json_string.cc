#include "common/json_string.h"

#include <cstdint>
#include <cstdio>
#include <cstring>

namespace vgpu {
namespace {

// Whether `s` holds a byte that a JSON string literal must escape: a control character (below
// 0x20), '"' or '\\'. Eight bytes at a time: a word has a byte below n when
// (w - 0x01..01 * n) & ~w & 0x80..80 is not zero (n <= 128; bytes of 0x80 and above never match).
bool NeedsJsonEscape(std::string_view s) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL;
  constexpr uint64_t kHighs = 0x8080808080808080ULL;
  const auto below = [](uint64_t w, uint64_t n) { return (w - kOnes * n) & ~w & kHighs; };
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, sizeof w);
    // A byte equal to c is a zero byte of w ^ c..c, that is a byte below 1.
    if ((below(w, 0x20) | below(w ^ (kOnes * '"'), 1) | below(w ^ (kOnes * '\\'), 1)) != 0) {
      return true;
    }
  }
  for (; i < s.size(); ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == '"' || c == '\\') return true;
  }
  return false;
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  if (!NeedsJsonEscape(s)) {  // the common case: quotes around the bytes, in one resize
    const size_t at = out->size();
    out->resize(at + s.size() + 2);
    char* p = out->data() + at;
    p[0] = '"';
    if (!s.empty()) std::memcpy(p + 1, s.data(), s.size());
    p[s.size() + 1] = '"';
    return;
  }
  out->push_back('"');
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(ch);
    } else if (c == '\n') {
      out->append("\\n");
    } else if (c == '\r') {
      out->append("\\r");
    } else if (c == '\t') {
      out->append("\\t");
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out->append(buf);
    } else {
      out->push_back(ch);
    }
  }
  out->push_back('"');
}

}  // namespace vgpu
