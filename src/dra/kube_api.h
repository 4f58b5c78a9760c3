// The DRA driver's use of the API server, over src/k8s's KubeClient:
//   KubeClaimSource     GET resourceclaims/<name> in the claim's namespace
//   SlicePublisher      keeps the node's ResourceSlices equal to BuildResourceSlices(): each
//                       slice is created, or replaced (PUT with its resourceVersion) when its
//                       spec differs, and the slices of this driver and node that are not
//                       among them (a node whose GPUs changed, the other layout, a previous
//                       run with more slices) are deleted, with their UID as precondition;
//                       slices of other drivers, nodes or pools are never touched. The pool
//                       generation goes up by one whenever the node's slices change (a health
//                       change, a restart with other GPUs), starting above every generation of
//                       the driver's slices of the node already there, so that kube-scheduler
//                       never mixes old and new slices of the pool. The layout (1.34 or 1.35,
//                       dra/resource_slices.h) is fixed, or read from the API server's
//                       /version before the first write and again after a write the server
//                       refused as invalid (a control plane upgraded under a running driver).
//                       A failed write is retried at the next Publish(). RBAC: resourceclaims
//                       get; resourceslices get, list, create, update, delete.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "dra/driver.h"
#include "dra/resource_slices.h"
#include "k8s/api/kube_client.h"

namespace vgpu::dra {

class KubeClaimSource final : public ClaimSource {
 public:
  explicit KubeClaimSource(k8s::KubeClient* client) : client_(client) {}
  Result<nlohmann::json> GetClaim(const std::string& ns, const std::string& name) override;

 private:
  k8s::KubeClient* client_;
};

class SlicePublisher {
 public:
  // `layout` null: negotiated with the API server (its /version).
  SlicePublisher(k8s::KubeClient* client, std::string node, std::string driver,
                 std::optional<SliceLayout> layout = std::nullopt);

  // Publishes the slices of `gpus` if they differ from what was last published, and deletes
  // the node's stale slices of this driver.
  Status Publish(const std::vector<SliceGpu>& gpus);
  int64_t generation() const;
  uint64_t writes() const;
  uint64_t deletes() const;
  // True once a Publish() succeeded and no later one failed.
  bool published() const;
  // The layout in use; null before it is known.
  std::optional<SliceLayout> layout() const;

 private:
  Status Negotiate();
  Result<std::vector<nlohmann::json>> ListOwn();
  Status Write(const std::vector<nlohmann::json>& slices);
  Status DeleteStale(const std::vector<nlohmann::json>& before,
                     const std::vector<nlohmann::json>& slices);

  k8s::KubeClient* client_;
  const std::string node_;
  const std::string driver_;
  const bool negotiate_;
  mutable std::mutex mu_;
  std::optional<SliceLayout> layout_;
  int64_t generation_ = 0;  // 0: not read from the server yet
  std::string last_;        // the specs last published (generation 0), "" when none
  uint64_t writes_ = 0;
  uint64_t deletes_ = 0;
  bool published_ = false;
};

}  // namespace vgpu::dra
