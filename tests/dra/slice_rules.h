// The API server's and kube-scheduler's rules for ResourceSlices, written independently of the
// driver's slice builder so that tests check it against them:
//   ValidateResourceSlices  shapes and limits of resource.k8s.io/v1 (types.go constants and
//                           validation) of one Kubernetes release. 1.35 and later: one node
//                           selector field, devices or sharedCounters not both, <=128 devices
//                           (<=64 when any consumes counters or has taints), <=8 counter sets
//                           of <=32 counters, counters consumed from counter sets anywhere in
//                           the pool. 1.34: devices and sharedCounters in one slice, <=32
//                           counters in all its sets, <=128 devices, <=1024 counters consumed by
//                           its devices, counters consumed only from sets of the same slice.
//                           Both: attribute and capacity names
//                           (C identifiers <=32, optionally domain-qualified), <=32 attributes
//                           plus capacities per device, one typed value each (string <=64,
//                           version a semantic version), requestPolicy inside the capacity,
//                           one pool generation and resourceSliceCount in all slices of a pool.
//   TestAllocator           the structured-parameters allocation of one request per claim
//                           (exactly one device, CEL replaced by an attribute match):
//                           consumable capacity with requestPolicy rounding (default when not
//                           asked; rounded up to min + n*step; rejected above max), the sum of
//                           a device's consumed capacity within its capacity, a shareID per
//                           allocation of a multi-allocatable device, and counters: a device's
//                           consumesCounters are taken when it is first allocated and a device
//                           whose counters do not fit is not allocatable.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace vgpu::dra::testing {

using nlohmann::json;

// Problems found, one line each ("slice <name>: <path>: <why>"); empty when valid.
// `minor`: the Kubernetes 1.<minor> release whose rules apply (34, or 35 for 35 and later).
std::vector<std::string> ValidateResourceSlices(const std::vector<json>& slices, int minor = 35);

struct TestRequest {
  std::string claim_ns, claim_name, claim_uid;
  std::string request = "gpu";
  std::string attribute = "type";               // the device must have this string attribute ...
  std::string value = "gpu";                    // ... with this value
  std::map<std::string, std::string> capacity;  // e.g. {"memory": "4Gi", "cores": "30"}
  // Further string attributes the device must have (a selector's equality tests), e.g.
  // {"profile": "1g.18gb"} with attribute "type" = "mig" (the DeviceClass mig.vgpu.io).
  std::map<std::string, std::string> also{};
};

class TestAllocator {
 public:
  TestAllocator(std::string driver, std::vector<json> slices);
  // The ResourceClaim object, with status.allocation, or nullopt (and why) when nothing fits.
  std::optional<json> Allocate(const TestRequest& request, std::string* why);
  // Gives back the allocation of a claim (by uid).
  void Release(const std::string& claim_uid);

 private:
  struct Device {
    std::string pool;
    json spec;
    std::map<std::string, int64_t> capacity;
    std::map<std::string, int64_t> used;
    int allocations = 0;
  };
  bool TakeCounters(Device& d, int sign, bool dry_run);

  std::string driver_;
  std::vector<Device> devices_;
  std::map<std::string, std::map<std::string, int64_t>> counters_left_;  // "pool/set" -> counters
  struct Held {
    size_t device;
    std::map<std::string, int64_t> consumed;
  };
  std::map<std::string, Held> held_;
  int next_share_ = 0;
};

// Quantity text -> integer (k8s::ParseWholeQuantity); dies on malformed text.
int64_t Quantity(const json& text);

}  // namespace vgpu::dra::testing
