#include "k8s/extender/pod_request_cache.h"

#include <functional>

#include "k8s/api/json_scan.h"

namespace vgpu::k8s {
namespace {

using Members = std::vector<std::pair<std::string_view, std::string_view>>;

// The value of `key` among `members` ("" when absent); false when it appears twice.
bool UniqueMember(const Members& members, std::string_view key, std::string_view* value) {
  *value = {};
  bool seen = false;
  for (const auto& [k, v] : members) {
    if (k != key) continue;
    if (seen) return false;
    seen = true;
    *value = v;
  }
  return true;
}

// A JSON string token without escapes, as its contents; false for anything else.
bool PlainString(std::string_view token, std::string_view* out) {
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') return false;
  *out = token.substr(1, token.size() - 2);
  return out->find('\\') == std::string_view::npos;
}

}  // namespace

std::optional<PodRequestKey> PodRequestKeyOf(std::string_view pod_text) {
  const auto top = ScanObjectMembers(pod_text);
  if (!top) return std::nullopt;
  std::string_view spec, metadata, annotations;
  if (!UniqueMember(*top, "spec", &spec) || !UniqueMember(*top, "metadata", &metadata)) {
    return std::nullopt;
  }
  PodRequestKey key;
  if (!metadata.empty()) {
    const auto meta = ScanObjectMembers(metadata);
    if (!meta) return std::nullopt;
    const std::pair<const char*, std::string_view*> ids[] = {
        {"uid", &key.uid}, {"namespace", &key.ns}, {"name", &key.name}};
    for (const auto& [field, out] : ids) {
      std::string_view token;
      if (!UniqueMember(*meta, field, &token)) return std::nullopt;
      if (!token.empty() && !PlainString(token, out)) return std::nullopt;
    }
    if (!UniqueMember(*meta, "annotations", &annotations)) return std::nullopt;
  }
  key.text.reserve(annotations.size() + spec.size() + 24);
  key.text += std::to_string(annotations.size());
  key.text += ':';
  key.text += annotations;
  key.text += spec;
  return key;
}

std::shared_ptr<const ParsedPod> PodRequestCache::Find(std::string_view pod_text) const {
  const size_t h = std::hash<std::string_view>()(pod_text);
  const Slot& s = slots_[h % kSlots];
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.parsed == nullptr || s.hash != h || s.text != pod_text) return nullptr;
  return s.parsed;
}

void PodRequestCache::Insert(std::string_view pod_text, std::shared_ptr<const ParsedPod> parsed) {
  if (pod_text.size() > kMaxTextBytes) return;
  const size_t h = std::hash<std::string_view>()(pod_text);
  Slot& s = slots_[h % kSlots];
  std::lock_guard<std::mutex> lock(s.mu);
  s.hash = h;
  s.text.assign(pod_text);
  s.parsed = std::move(parsed);
}

}  // namespace vgpu::k8s
