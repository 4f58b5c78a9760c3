// What the DRA driver reads from a ResourceClaim (resource.k8s.io/v1) that kube-scheduler
// allocated: the allocation results of this driver (request, pool, device, consumed capacity,
// share ID) and the opaque configs meant for it (from the claim or its DeviceClass).
//
//   status.allocation.devices.results[i]: {request, driver, pool, device, consumedCapacity,
//                                          shareID}
//   status.allocation.devices.config[j]:  {source, requests, opaque: {driver, parameters}}
//
// ParseClaim fails with kInvalidArgument naming the claim ("claim <ns>/<name>") and the field
// when the claim is not allocated, was replaced (another UID), or a field has the wrong shape.
// Results of other drivers are skipped. Pure logic.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::dra {

struct ClaimRef {
  std::string ns;
  std::string uid;
  std::string name;
  std::string Describe() const { return "claim " + ns + "/" + name; }
};

struct AllocatedDevice {
  std::string request;
  std::string pool;
  std::string device;
  std::string share_id;      // "" for a device given to one claim only
  bool has_memory = false;   // consumedCapacity.memory was given
  int64_t memory_bytes = 0;  // consumedCapacity.memory
  bool has_cores = false;    // consumedCapacity.cores was given
  int cores = 0;             // consumedCapacity.cores (percent)
  std::string field;         // "status.allocation.devices.results[i]"
};

struct OpaqueConfig {
  std::vector<std::string> requests;  // empty: every request
  nlohmann::json parameters;
  std::string field;  // "status.allocation.devices.config[j].opaque.parameters"
  bool Applies(const std::string& request) const;
};

struct ClaimAllocation {
  ClaimRef ref;
  std::vector<AllocatedDevice> devices;  // this driver's, in the allocation's order
  std::vector<OpaqueConfig> configs;     // this driver's, class configs before claim configs
};

Result<ClaimAllocation> ParseClaim(const nlohmann::json& claim, const ClaimRef& ref,
                                   const std::string& driver);

}  // namespace vgpu::dra
