#include "k8s/api/json_scan.h"

#include <cstring>

#include "k8s/api/kube_client.h"

namespace vgpu::k8s {
namespace {

constexpr size_t kNone = std::string_view::npos;

size_t SkipWs(std::string_view t, size_t i) {
  while (i < t.size() && (t[i] == ' ' || t[i] == '\n' || t[i] == '\r' || t[i] == '\t')) ++i;
  return i;
}

// `i` at an opening quote; returns the index after the closing quote.
size_t ScanString(std::string_view t, size_t i, bool* escaped) {
  ++i;
  while (i < t.size()) {
    const void* q = std::memchr(t.data() + i, '"', t.size() - i);
    if (q == nullptr) return kNone;
    size_t end = static_cast<size_t>(static_cast<const char*>(q) - t.data());
    // Count the backslashes before the quote: odd = the quote is escaped.
    size_t k = end;
    while (k > i && t[k - 1] == '\\') --k;
    if (std::memchr(t.data() + i, '\\', end - i) != nullptr) *escaped = true;
    if ((end - k) % 2 == 0) return end + 1;
    i = end + 1;
  }
  return kNone;
}

// `i` at the first character of a value; returns the index after it.
size_t ScanValue(std::string_view t, size_t i) {
  if (i >= t.size()) return kNone;
  bool escaped = false;
  if (t[i] == '"') return ScanString(t, i, &escaped);
  if (t[i] == '{' || t[i] == '[') {
    int depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = ScanString(t, i, &escaped);
        if (i == kNone) return kNone;
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        if (--depth == 0) return i + 1;
      }
      ++i;
    }
    return kNone;
  }
  const size_t start = i;
  while (i < t.size() && std::strchr(",}] \t\r\n", t[i]) == nullptr) ++i;
  return i == start ? kNone : i;
}

}  // namespace

std::optional<std::vector<std::pair<std::string_view, std::string_view>>> ScanObjectMembers(
    std::string_view t) {
  std::vector<std::pair<std::string_view, std::string_view>> out;
  size_t i = SkipWs(t, 0);
  if (i >= t.size() || t[i] != '{') return std::nullopt;
  i = SkipWs(t, i + 1);
  if (i < t.size() && t[i] == '}')
    return SkipWs(t, i + 1) == t.size() ? std::optional(out) : std::nullopt;
  while (true) {
    if (i >= t.size() || t[i] != '"') return std::nullopt;
    bool escaped = false;
    const size_t kend = ScanString(t, i, &escaped);
    if (kend == kNone || escaped) return std::nullopt;
    const std::string_view key = t.substr(i + 1, kend - i - 2);
    i = SkipWs(t, kend);
    if (i >= t.size() || t[i] != ':') return std::nullopt;
    i = SkipWs(t, i + 1);
    const size_t vend = ScanValue(t, i);
    if (vend == kNone) return std::nullopt;
    out.emplace_back(key, t.substr(i, vend - i));
    i = SkipWs(t, vend);
    if (i < t.size() && t[i] == ',') {
      i = SkipWs(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == '}') break;
    return std::nullopt;
  }
  return SkipWs(t, i + 1) == t.size() ? std::optional(out) : std::nullopt;
}

bool ScanStringArray(std::string_view t, std::vector<std::string>* out) {
  size_t i = SkipWs(t, 0);
  if (i >= t.size() || t[i] != '[') return false;
  i = SkipWs(t, i + 1);
  if (i < t.size() && t[i] == ']') return SkipWs(t, i + 1) == t.size();
  while (true) {
    if (i >= t.size() || t[i] != '"') return false;
    bool escaped = false;
    const size_t end = ScanString(t, i, &escaped);
    if (end == kNone) return false;
    if (escaped) {
      const Json s = Json::parse(t.substr(i, end - i), nullptr, false);
      if (!s.is_string()) return false;
      out->push_back(s.get<std::string>());
    } else {
      out->emplace_back(t.substr(i + 1, end - i - 2));
    }
    i = SkipWs(t, end);
    if (i < t.size() && t[i] == ',') {
      i = SkipWs(t, i + 1);
      continue;
    }
    if (i < t.size() && t[i] == ']') return SkipWs(t, i + 1) == t.size();
    return false;
  }
}

bool ScanStringArrayViews(std::string_view t, std::vector<std::string_view>* out) {
  size_t i = SkipWs(t, 0);
  if (i >= t.size() || t[i] != '[') return false;
  i = SkipWs(t, i + 1);
  if (i < t.size() && t[i] == ']') return SkipWs(t, i + 1) == t.size();
  const char* data = t.data();
  while (true) {
    if (i >= t.size() || data[i] != '"') return false;
    const void* q = std::memchr(data + i + 1, '"', t.size() - i - 1);
    if (q == nullptr) return false;
    const size_t end = static_cast<size_t>(static_cast<const char*>(q) - data);
    const std::string_view s(data + i + 1, end - i - 1);
    if (s.find('\\') != std::string_view::npos) return false;
    out->push_back(s);
    i = end + 1;
    if (i < t.size() && data[i] == ',') {
      ++i;
      if (i < t.size() && data[i] == '"') continue;  // the compact form, without spaces
      i = SkipWs(t, i);
      continue;
    }
    i = SkipWs(t, i);
    if (i < t.size() && data[i] == ',') {
      i = SkipWs(t, i + 1);
      continue;
    }
    if (i < t.size() && data[i] == ']') return SkipWs(t, i + 1) == t.size();
    return false;
  }
}

bool JsonNestsDeeperThan(std::string_view text, int limit) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return true;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return false;
}

}  // namespace vgpu::k8s
