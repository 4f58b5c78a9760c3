#include "analyze/action_sink.h"

namespace vgpu::analyze {
namespace {
constexpr std::pair<ActionType, std::string_view> kNames[] = {
    {ActionType::kAlert, "alert"},
    {ActionType::kLowerShare, "lower_share"},
    {ActionType::kRaiseShare, "raise_share"},
    {ActionType::kRaisePriority, "raise_priority"},
    {ActionType::kRecommendMig, "recommend_mig"},
    {ActionType::kRecommendMemoryLimit, "recommend_memory_limit"},
    {ActionType::kQuarantineSlice, "quarantine_slice"},
    {ActionType::kQuarantineGpu, "quarantine_gpu"},
};
}  // namespace

std::string_view ActionName(ActionType t) {
  for (auto& [type, name] : kNames) {
    if (type == t) return name;
  }
  return "?";
}

std::optional<ActionType> ParseActionName(std::string_view name) {
  for (auto& [type, n] : kNames) {
    if (n == name) return type;
  }
  return std::nullopt;
}

std::string ActionNames() {
  std::string out;
  for (auto& [type, n] : kNames) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

}  // namespace vgpu::analyze
