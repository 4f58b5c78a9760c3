// PodRequestCache: a pod's GPU request by the exact JSON text of the pod, so the filter and
// prioritize calls for one pod (kube-scheduler sends the same Pod in both) parse it once.
//
// Contract: keyed by the full text (compared byte for byte, not only by hash), so an entry is
// only ever returned for identical input and needs no invalidation: the request depends on
// nothing but the text and the fixed RequestOptions. A fixed number of slots (a newer text
// replaces the one in its slot); texts above `max_text_bytes` are not kept. Thread-safe: one
// small lock per slot, held for a compare and a pointer copy.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s/pod_request.h"

namespace vgpu::k8s {

struct ParsedPod {
  Result<PodGpuRequest> request = PodGpuRequest{};
  std::string uid, ns, name;
};

class PodRequestCache {
 public:
  static constexpr size_t kSlots = 256;
  static constexpr size_t kMaxTextBytes = size_t{64} << 10;

  // Null when `pod_text` is not cached.
  std::shared_ptr<const ParsedPod> Find(std::string_view pod_text) const;
  void Insert(std::string_view pod_text, std::shared_ptr<const ParsedPod> parsed);

 private:
  struct Slot {
    mutable std::mutex mu;
    size_t hash = 0;
    std::string text;
    std::shared_ptr<const ParsedPod> parsed;
  };
  std::array<Slot, kSlots> slots_;
};

}  // namespace vgpu::k8s
