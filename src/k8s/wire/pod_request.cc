#include "k8s/wire/pod_request.h"

#include <algorithm>
#include <cctype>

#include "k8s/api/quantity.h"
#include "sched/types.h"
#include "topo/nvlink_sets.h"
#include "topo/pattern.h"

namespace vgpu::k8s {
namespace {

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  size_t p = 0;
  while (p <= s.size()) {
    size_t comma = s.find(',', p);
    if (comma == std::string::npos) comma = s.size();
    std::string item = s.substr(p, comma - p);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back()))) item.pop_back();
    size_t lead = 0;
    while (lead < item.size() && std::isspace(static_cast<unsigned char>(item[lead]))) ++lead;
    item.erase(0, lead);
    if (!item.empty()) out.push_back(item);
    p = comma + 1;
  }
  return out;
}

// The value of resource `name` in a container: limits first, then requests.
const Json* ResourceValue(const Json& container, const std::string& name) {
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return nullptr;
  for (const char* section : {"limits", "requests"}) {
    auto sec = res->find(section);
    if (sec == res->end() || !sec->is_object()) continue;
    auto it = sec->find(name);
    if (it != sec->end()) return &*it;
  }
  return nullptr;
}

Status CheckKnownResources(const Json& container, const std::string& cname,
                           const ResourceNames& names) {
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return Status::Ok();
  const std::string prefix = names.prefix + "/";
  const std::string known[] = {names.Gpu(), names.Memory(), names.MemoryPercent(), names.Cores(),
                               names.Priority()};
  for (const char* section : {"limits", "requests"}) {
    auto sec = res->find(section);
    if (sec == res->end() || !sec->is_object()) continue;
    for (const auto& [key, value] : sec->items()) {
      if (key.rfind(prefix, 0) != 0) continue;
      if (std::find(std::begin(known), std::end(known), key) != std::end(known)) continue;
      if (key.starts_with(names.MigPrefix()) && key.size() > names.MigPrefix().size()) continue;
      return Status::InvalidArgument("container '" + cname + "': unknown resource " + key +
                                     " (vgpu understands " + names.Gpu() + ", " + names.Memory() +
                                     ", " + names.MemoryPercent() + ", " + names.Cores() + ", " +
                                     names.Priority() + ", " + names.MigPrefix() + "<profile>)");
    }
  }
  return Status::Ok();
}

Result<std::optional<int64_t>> ReadValue(const Json& container, const std::string& cname,
                                         const std::string& resource, int64_t min, int64_t max) {
  const Json* v = ResourceValue(container, resource);
  if (v == nullptr) return std::optional<int64_t>();
  auto q = WholeQuantityOf(*v);
  if (!q) {
    return Status::InvalidArgument("container '" + cname + "': " + resource + ": " +
                                   q.error().message());
  }
  if (*q < min || *q > max) {
    return Status::InvalidArgument("container '" + cname + "': " + resource + "=" +
                                   std::to_string(*q) + " is outside " + std::to_string(min) +
                                   ".." + std::to_string(max));
  }
  return std::optional<int64_t>(*q);
}

// The <prefix>/mig-<profile> resources a container names (limits and requests), "" when none;
// an error for two different profiles.
Result<std::string> MigProfileOf(const Json& container, const std::string& cname,
                                 const ResourceNames& names) {
  std::string found;
  auto res = container.find("resources");
  if (res == container.end() || !res->is_object()) return found;
  const std::string prefix = names.MigPrefix();
  for (const char* section : {"limits", "requests"}) {
    auto sec = res->find(section);
    if (sec == res->end() || !sec->is_object()) continue;
    for (const auto& [key, value] : sec->items()) {
      if (!key.starts_with(prefix) || key.size() == prefix.size()) continue;
      if (!found.empty() && found != key) {
        return Status::InvalidArgument("container '" + cname + "': asks for two MIG profiles, " +
                                       found + " and " + key);
      }
      found = key;
    }
  }
  return found;
}

Result<std::optional<ContainerGpuRequest>> ParseContainer(const Json& c, bool init,
                                                          const RequestOptions& o) {
  if (!c.is_object()) return Status::InvalidArgument("a container is not an object");
  const std::string name =
      c.contains("name") && c["name"].is_string() ? c["name"].get<std::string>() : "?";
  VGPU_RETURN_IF_ERROR(CheckKnownResources(c, name, o.names));
  const ResourceNames& n = o.names;
  auto count = ReadValue(c, name, n.Gpu(), 0, sched::kMaxGpusPerNode);
  if (!count) return count.error();
  auto mem = ReadValue(c, name, n.Memory(), 0, int64_t{1} << 40);
  if (!mem) return mem.error();
  auto pct = ReadValue(c, name, n.MemoryPercent(), 1, 100);
  if (!pct) return pct.error();
  auto cores = ReadValue(c, name, n.Cores(), 1, 100);
  if (!cores) return cores.error();
  auto prio = ReadValue(c, name, n.Priority(), 0, 1);
  if (!prio) return prio.error();
  auto mig_resource = MigProfileOf(c, name, n);
  if (!mig_resource) return mig_resource.error();
  const bool has_mem = mem->has_value() && **mem > 0;
  if (!mig_resource->empty()) {
    auto mig_count = ReadValue(c, name, *mig_resource, 0, 1);
    if (!mig_count) return mig_count.error();
    if (**mig_count == 0) return std::optional<ContainerGpuRequest>();
    if (count->has_value() || pct->has_value()) {
      return Status::InvalidArgument("container '" + name + "': " + *mig_resource +
                                     " cannot be combined with " + n.Gpu() + " or " +
                                     n.MemoryPercent());
    }
    ContainerGpuRequest r;
    r.name = name;
    r.init = init;
    r.count = 1;
    r.mig_profile = mig_resource->substr(n.MigPrefix().size());
    if (has_mem) r.memory_mib = **mem;
    if (cores->has_value()) r.cores = static_cast<int>(**cores);
    if (prio->has_value()) r.priority = static_cast<int>(**prio);
    return std::optional<ContainerGpuRequest>(std::move(r));
  }
  const bool asks_share = has_mem || pct->has_value() || cores->has_value();
  if (count->has_value() && **count == 0) {
    if (asks_share) {
      return Status::InvalidArgument("container '" + name + "': " + n.Gpu() +
                                     "=0 but it asks for GPU memory or cores");
    }
    return std::optional<ContainerGpuRequest>();
  }
  if (!count->has_value() && !asks_share) return std::optional<ContainerGpuRequest>();
  ContainerGpuRequest r;
  r.name = name;
  r.init = init;
  r.count = count->has_value() ? static_cast<int>(**count) : 1;
  if (has_mem) r.memory_mib = **mem;
  if (pct->has_value()) r.memory_percent = static_cast<int>(**pct);
  if (cores->has_value()) r.cores = static_cast<int>(**cores);
  if (prio->has_value()) r.priority = static_cast<int>(**prio);
  return std::optional<ContainerGpuRequest>(std::move(r));
}

}  // namespace

bool PodGpuRequest::AllowsModel(const std::string& model) const {
  const std::string m = Upper(model);
  if (!use_types.empty() &&
      std::none_of(use_types.begin(), use_types.end(),
                   [&](const std::string& t) { return m.find(Upper(t)) != std::string::npos; })) {
    return false;
  }
  return std::none_of(nouse_types.begin(), nouse_types.end(),
                      [&](const std::string& t) { return m.find(Upper(t)) != std::string::npos; });
}

bool PodGpuRequest::AllowsUuid(const std::string& uuid) const {
  if (!use_uuids.empty()) {
    return std::find(use_uuids.begin(), use_uuids.end(), uuid) != use_uuids.end();
  }
  return std::find(nouse_uuids.begin(), nouse_uuids.end(), uuid) == nouse_uuids.end();
}

Result<PodGpuRequest> ParsePodGpuRequest(const Json& pod, const RequestOptions& o) {
  if (!pod.is_object()) return Status::InvalidArgument("the pod is not a JSON object");
  auto spec = pod.find("spec");
  if (spec == pod.end() || !spec->is_object())
    return Status::InvalidArgument("the pod has no spec");
  PodGpuRequest out;
  for (const char* list : {"initContainers", "containers"}) {
    auto it = spec->find(list);
    if (it == spec->end() || it->is_null()) continue;
    if (!it->is_array())
      return Status::InvalidArgument(std::string("spec.") + list + " is not a list");
    const bool init_list = std::string_view(list) == "initContainers";
    for (const Json& c : *it) {
      // A restartable init container (a sidecar) runs beside the app containers.
      const bool sidecar = init_list && c.is_object() && c.contains("restartPolicy") &&
                           c["restartPolicy"] == "Always";
      auto r = ParseContainer(c, init_list && !sidecar, o);
      if (!r) return r.error();
      if (r->has_value()) out.containers.push_back(std::move(**r));
    }
  }
  const ResourceNames& n = o.names;
  out.use_types = SplitList(AnnotationOf(pod, n.UseTypes()));
  out.nouse_types = SplitList(AnnotationOf(pod, n.NoUseTypes()));
  out.use_uuids = SplitList(AnnotationOf(pod, n.UseUuids()));
  out.nouse_uuids = SplitList(AnnotationOf(pod, n.NoUseUuids()));
  out.allow_shared_fault_domain = AnnotationOf(pod, "vgpu.io/allow-shared-fault-domain") == "true";
  auto host = PodHostRequestOf(pod);
  if (!host) return host.error();
  out.host = *host;
  int app_gpus = 0;
  for (const auto& c : out.containers) app_gpus += c.init ? 0 : c.count;
  const bool any_mig = std::any_of(out.containers.begin(), out.containers.end(),
                                   [](const auto& c) { return !c.mig_profile.empty(); });
  if (any_mig && out.containers.size() > 1) {
    return Status::InvalidArgument(
        "a pod that asks for a MIG profile (" + n.MigPrefix() +
        "<profile>) may have only one container that asks for GPUs; this one has " +
        std::to_string(out.containers.size()));
  }
  if (app_gpus > sched::kMaxGpusPerNode) {
    return Status::InvalidArgument("the containers ask for " + std::to_string(app_gpus) + " " +
                                   n.Gpu() + " together; a node has at most " +
                                   std::to_string(sched::kMaxGpusPerNode));
  }
  // The communication pattern (docs/topology.md): checked here, so a malformed one is the pod's
  // unschedulable reason, naming the annotation and the field.
  const std::string pattern = AnnotationOf(pod, std::string(topo::kCommPatternAnnotation));
  if (!pattern.empty()) {
    if (app_gpus < 2) {
      return Status::InvalidArgument(std::string(topo::kCommPatternAnnotation) +
                                     ": a communication pattern needs 2 or more GPUs, the pod "
                                     "asks for " +
                                     std::to_string(app_gpus));
    }
    auto parsed = topo::ParseCommPattern(pattern, app_gpus);
    if (!parsed) return parsed.error();
    out.comm_pattern = pattern;
  }
  // vgpu.io/topology (docs/topology.md, "Requiring NVLink").
  auto nvlink =
      topo::ParseTopologyAnnotation(AnnotationOf(pod, std::string(topo::kTopologyAnnotation)));
  if (!nvlink) return nvlink.error();
  if (*nvlink && app_gpus < 2) {
    return Status::InvalidArgument(
        std::string(topo::kTopologyAnnotation) + ": " + std::string(topo::kRequireNvlink) +
        " needs 2 or more GPUs, the pod asks for " + std::to_string(app_gpus));
  }
  out.require_nvlink = *nvlink;
  return out;
}

Result<GpuShape> ShapeOn(const ContainerGpuRequest& c, int64_t capacity_mib,
                         const RequestOptions& o) {
  GpuShape s;
  const bool states_memory = c.memory_mib.has_value() || c.memory_percent.has_value();
  if (c.memory_mib) {
    s.memory_mib = *c.memory_mib;
  } else if (c.memory_percent) {
    s.memory_mib = capacity_mib * *c.memory_percent / 100;
  } else if (o.default_memory_percent > 0 || !c.cores) {
    s.memory_mib =
        capacity_mib * (o.default_memory_percent > 0 ? o.default_memory_percent : 100) / 100;
  } else {
    s.memory_mib = capacity_mib * *c.cores / 100;
  }
  if (s.memory_mib > capacity_mib) {
    return Status::ResourceExhausted("container '" + c.name + "' asks " +
                                     std::to_string(s.memory_mib) + " MiB per GPU");
  }
  if (c.cores) {
    s.milli = *c.cores * 10;
    s.cores = *c.cores;
  } else if (!states_memory) {
    s.milli = sched::kGpuMilli;
  } else {
    const int64_t m =
        capacity_mib > 0 ? (s.memory_mib * 1000 + capacity_mib - 1) / capacity_mib : 1;
    s.milli = static_cast<int32_t>(std::clamp<int64_t>(m, 1, sched::kGpuMilli));
  }
  if (s.memory_mib < 1) s.memory_mib = 1;
  return s;
}

Result<PodShape> PodShapeOn(const PodGpuRequest& r, int64_t capacity_mib, const RequestOptions& o) {
  PodShape p;
  int app = 0, init = 0;
  for (const ContainerGpuRequest& c : r.containers) {
    auto s = ShapeOn(c, capacity_mib, o);
    if (!s) return s.error();
    p.milli = std::max(p.milli, s->milli);
    p.memory_mib = std::max(p.memory_mib, s->memory_mib);
    if (c.init) {
      init = std::max(init, c.count);
    } else {
      app += c.count;
    }
  }
  p.num_gpus = std::max(app, init);
  return p;
}

}  // namespace vgpu::k8s
