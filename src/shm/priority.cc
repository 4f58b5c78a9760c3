#include "shm/priority.h"

namespace vgpu::shm {
namespace {

constexpr const char* kNames[kPriorityLevels] = {"realtime", "high", "normal", "low", "idle"};

// `text` is the lower-case ASCII `name` in any case.
bool IsName(std::string_view text, std::string_view name) {
  if (text.size() != name.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c =
        text[i] >= 'A' && text[i] <= 'Z' ? static_cast<char>(text[i] - 'A' + 'a') : text[i];
    if (c != name[i]) return false;
  }
  return true;
}

}  // namespace

const char* PriorityName(int32_t level) {
  return level >= 0 && level < kPriorityLevels ? kNames[level] : "?";
}

bool ParsePriority(std::string_view text, int32_t* level) {
  for (int i = 0; i < kPriorityLevels; ++i) {
    if (IsName(text, kNames[i])) {
      *level = i;
      return true;
    }
  }
  if (text == "0" || text == "1") return HamiPriorityLevel(text[0] - '0', level);
  return false;
}

bool HamiPriorityLevel(int64_t number, int32_t* level) {
  if (number != 0 && number != 1) return false;
  *level = number == 0 ? kPriorityHigh : kPriorityNormal;
  return true;
}

}  // namespace vgpu::shm
