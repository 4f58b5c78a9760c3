#include "k8s/pod_request_cache.h"

#include <functional>

namespace vgpu::k8s {

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
