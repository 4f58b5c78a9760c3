// The DRA driver's use of the API server, over src/k8s's KubeClient:
//   KubeClaimSource     GET resourceclaims/<name> in the claim's namespace
//   SlicePublisher      keeps the node's ResourceSlices equal to BuildResourceSlices(): each
//                       slice is created, or replaced (PUT with its resourceVersion) when its
//                       spec differs; the pool generation goes up by one whenever the node's
//                       slices change (a health change, a restart with other GPUs), starting
//                       above the generation already published so that kube-scheduler never
//                       mixes old and new slices of the pool. A failed write is retried at the
//                       next Publish(). RBAC: resourceclaims get; resourceslices get, create,
//                       update.
#pragma once

#include <mutex>
#include <string>
#include <vector>

#include "dra/driver.h"
#include "dra/resource_slices.h"
#include "k8s/kube_client.h"

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
  SlicePublisher(k8s::KubeClient* client, std::string node, std::string driver);

  // Publishes the slices of `gpus` if they differ from what was last published.
  Status Publish(const std::vector<SliceGpu>& gpus);
  int64_t generation() const;
  uint64_t writes() const;

 private:
  Status Write(const std::vector<nlohmann::json>& slices);

  k8s::KubeClient* client_;
  const std::string node_;
  const std::string driver_;
  mutable std::mutex mu_;
  int64_t generation_ = 0;  // 0: not read from the server yet
  std::string last_;        // the specs last published (generation 0), "" when none
  uint64_t writes_ = 0;
};

}  // namespace vgpu::dra
