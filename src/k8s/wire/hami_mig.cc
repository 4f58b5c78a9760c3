#include "k8s/wire/hami_mig.h"

#include "k8s/api/json_scan.h"

namespace vgpu::k8s {

Result<std::vector<HamiMigAllocation>> ParseHamiMigAllocations(std::string_view text) {
  if (JsonNestsDeeperThan(text)) return Status::InvalidArgument("nested too deeply");
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_array()) return Status::InvalidArgument("not a JSON list");
  std::vector<HamiMigAllocation> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    const std::string where = "[" + std::to_string(i) + "]";
    if (!e.is_object()) return Status::InvalidArgument(where + ": must be an object");
    const auto str = [&](const char* key) -> std::string {
      auto it = e.find(key);
      return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    HamiMigAllocation a;
    a.gpu_uuid = str("gpuUUID");
    if (a.gpu_uuid.empty()) {
      return Status::InvalidArgument(where + ".gpuUUID: must be a non-empty string");
    }
    a.mig.profile = str("profile");
    if (a.mig.profile.empty()) {
      return Status::InvalidArgument(where + ".profile: must be a non-empty string");
    }
    auto p = e.find("placement");
    if (p == e.end() || !p->is_object() || !p->contains("start") ||
        !(*p)["start"].is_number_integer() || (*p)["start"].get<int64_t>() < 0 ||
        (*p)["start"].get<int64_t>() > 7) {
      return Status::InvalidArgument(where + ".placement.start: must be an integer 0..7");
    }
    a.mig.start = static_cast<int>((*p)["start"].get<int64_t>());
    a.mig.uuid = str("migUUID");
    out.push_back(std::move(a));
  }
  return out;
}

void ApplyHamiMigAllocations(const std::vector<HamiMigAllocation>& allocations, PodAssignment* a) {
  for (const HamiMigAllocation& m : allocations) {
    bool done = false;
    for (ContainerAssignment& c : a->containers) {
      for (AssignedGpu& g : c.gpus) {
        if (!done && g.uuid == m.gpu_uuid && !g.mig) {
          g.mig = m.mig;
          done = true;
        }
      }
    }
  }
}

}  // namespace vgpu::k8s
