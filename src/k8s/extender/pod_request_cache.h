// PodRequestCache: a pod's GPU request by the exact JSON text of the pod, so the filter and
// prioritize calls for one pod (kube-scheduler sends the same Pod in both) parse it once; and,
// keyed by PodRequestKeyOf's text, by the parts of the pod the request is read from, so pods of
// one ReplicaSet or Job (the same spec and annotations, another UID and name) share one parse.
//
// Contract: keyed by the full text (compared byte for byte, not only by hash), so an entry is
// only ever returned for identical input and needs no invalidation: the request depends on
// nothing but the text and the fixed RequestOptions. A fixed number of slots (a newer text
// replaces the one in its slot); texts above `max_text_bytes` are not kept. Thread-safe: one
// small lock per slot, held for a compare and a pointer copy.
// PodRequestKeyOf: ParsePodGpuRequest reads only `spec` and `metadata.annotations`; the key is
// their raw text (length-prefixed, byte for byte), with the pod's identity read beside it. The
// scanner refuses (nullopt: the caller parses the whole pod) when the text is not an object,
// when the top level or metadata repeats a member (which one a full parser keeps is its own
// choice), or when the UID, name or namespace is not a plain string.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "k8s/wire/pod_request.h"

namespace vgpu::k8s {

struct ParsedPod {
  Result<PodGpuRequest> request = PodGpuRequest{};
  std::string uid, ns, name;
};

struct PodRequestKey {
  std::string text;                // what the request depends on
  std::string_view uid, ns, name;  // views into the pod's text ("" when absent)
};
std::optional<PodRequestKey> PodRequestKeyOf(std::string_view pod_text);

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
