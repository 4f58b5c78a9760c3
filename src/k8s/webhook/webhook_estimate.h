// FillFromEstimate: the admission webhook's handling of the vgpu.io/estimate annotation
// (src/estimate/pod_estimate.h gives the syntax). A pod that carries it and whose containers name
// neither <prefix>/gpumem nor <prefix>/gpumem-percentage gets, in the chosen container,
// <prefix>/gpumem = the estimate in MiB (limits, and requests when the container has them), and
// the estimate recorded in the annotation vgpu.io/estimate-result. The rest of the webhook then
// treats the pod as if it had been written with that request (the GPU count, the scheduler name).
// A pod that already names its memory keeps it (with a warning). An annotation that cannot be
// read, or an estimate larger than any GPU, refuses the pod with the reason.
#pragma once

#include <string>

#include "k8s/api/kube_client.h"
#include "k8s/wire/pod_request.h"

namespace vgpu::k8s {

struct EstimateFill {
  bool applied = false;
  Json pod;                  // the pod with the request filled in (applied only)
  Json ops = Json::array();  // RFC 6902 operations that do it
  std::string change;        // for the log
  std::string warning;
  std::string denial;  // non-empty: refuse the pod
};

EstimateFill FillFromEstimate(const Json& pod, const ResourceNames& names);

}  // namespace vgpu::k8s
