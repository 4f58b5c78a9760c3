#include "k8s/wire/host_request.h"

#include <algorithm>

#include "k8s/api/quantity.h"

namespace vgpu::k8s {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

// CPU in milli and memory in bytes.
struct Amount {
  int64_t cpu = 0, memory = 0;
  Amount& operator+=(const Amount& o) {
    cpu += o.cpu;
    memory += o.memory;
    return *this;
  }
};
Amount Max(const Amount& a, const Amount& b) {
  return {std::max(a.cpu, b.cpu), std::max(a.memory, b.memory)};
}

// cpu / memory of one resource list ({"cpu": "500m", "memory": "1Gi"}); absent = 0.
Result<Amount> ListAmount(const Json& list, const std::string& where) {
  Amount a;
  if (!list.is_object()) return a;
  for (const auto& [key, scale, out] :
       {std::tuple{"cpu", 3, &a.cpu}, std::tuple{"memory", 0, &a.memory}}) {
    auto it = list.find(key);
    if (it == list.end()) continue;
    auto v = CeilQuantityOf(*it, scale);
    if (!v) return Status::InvalidArgument(where + ": " + key + ": " + v.error().message());
    *out = *v;
  }
  return a;
}

// A container's requests, falling back to its limits per resource.
Result<Amount> ContainerAmount(const Json& c) {
  const std::string name = c.is_object() && c.contains("name") && c["name"].is_string()
                               ? c["name"].get<std::string>()
                               : "?";
  const std::string where = "container '" + name + "'";
  Amount out;
  if (!c.is_object()) return out;
  auto res = c.find("resources");
  if (res == c.end() || !res->is_object()) return out;
  const Json empty = Json::object();
  const Json& requests = res->contains("requests") ? (*res)["requests"] : empty;
  const Json& limits = res->contains("limits") ? (*res)["limits"] : empty;
  auto req = ListAmount(requests, where);
  if (!req) return req.error();
  auto lim = ListAmount(limits, where);
  if (!lim) return lim.error();
  out.cpu = requests.is_object() && requests.contains("cpu") ? req->cpu : lim->cpu;
  out.memory = requests.is_object() && requests.contains("memory") ? req->memory : lim->memory;
  return out;
}

}  // namespace

Result<HostResources> PodHostRequestOf(const Json& pod) {
  HostResources out;
  if (!pod.is_object()) return out;
  auto spec_it = pod.find("spec");
  if (spec_it == pod.end() || !spec_it->is_object()) return out;
  const Json& spec = *spec_it;
  Amount apps;
  if (auto cs = spec.find("containers"); cs != spec.end() && cs->is_array()) {
    for (const Json& c : *cs) {
      auto a = ContainerAmount(c);
      if (!a) return a.error();
      apps += *a;
    }
  }
  Amount sidecars, inits;
  if (auto cs = spec.find("initContainers"); cs != spec.end() && cs->is_array()) {
    for (const Json& c : *cs) {
      auto a = ContainerAmount(c);
      if (!a) return a.error();
      const bool sidecar =
          c.is_object() && c.contains("restartPolicy") && c["restartPolicy"] == "Always";
      if (sidecar) {
        apps += *a;
        sidecars += *a;
        inits = Max(inits, sidecars);
      } else {
        Amount with = *a;
        with += sidecars;
        inits = Max(inits, with);
      }
    }
  }
  Amount total = Max(apps, inits);
  if (auto res = spec.find("resources"); res != spec.end() && res->is_object()) {
    if (auto req = res->find("requests"); req != res->end()) {
      auto a = ListAmount(*req, "spec.resources");
      if (!a) return a.error();
      if (req->is_object() && req->contains("cpu")) total.cpu = a->cpu;
      if (req->is_object() && req->contains("memory")) total.memory = a->memory;
    }
  }
  if (auto oh = spec.find("overhead"); oh != spec.end()) {
    auto a = ListAmount(*oh, "spec.overhead");
    if (!a) return a.error();
    total += *a;
  }
  out.cpu_milli = total.cpu;
  out.memory_mib = (total.memory + kMiB - 1) / kMiB;
  return out;
}

HostResources NodeAllocatableOf(const Json& node) {
  HostResources out;
  if (!node.is_object()) return out;
  auto st = node.find("status");
  if (st == node.end() || !st->is_object()) return out;
  auto alloc = st->find("allocatable");
  if (alloc == st->end() || !alloc->is_object()) return out;
  if (auto cpu = alloc->find("cpu"); cpu != alloc->end()) {
    auto v = CeilQuantityOf(*cpu, 3);
    if (v) out.cpu_milli = *v;
  }
  if (auto mem = alloc->find("memory"); mem != alloc->end()) {
    auto v = CeilQuantityOf(*mem, 0);
    if (v) out.memory_mib = *v / kMiB;
  }
  return out;
}

}  // namespace vgpu::k8s
