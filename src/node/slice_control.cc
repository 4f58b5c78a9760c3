#include "node/slice_control.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "shm/proc_identity.h"
#include "shm/region.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

namespace vgpu::node {

std::optional<SliceProcess> IdentityOfHostPid(const std::string& proc_root, uint32_t pid) {
  const std::string dir = proc_root + "/" + std::to_string(pid);
  SliceProcess p;
  struct stat st;
  if (::stat((dir + "/ns/pid").c_str(), &st) != 0) return std::nullopt;
  p.pid_ns = st.st_ino;
  std::ifstream status(dir + "/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream in(line.substr(6));
    int32_t v = 0;
    while (in >> v) p.pid = v;  // the innermost namespace's pid comes last
  }
  if (p.pid == 0) return std::nullopt;
  std::ifstream stat_file(dir + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat_file)), std::istreambuf_iterator<char>());
  shm::StatFields f;
  if (shm::ParseStat(text.c_str(), text.size(), &f)) p.start_time = f.start_time;
  return p;
}

std::vector<uint32_t> HostPidsOf(const std::string& proc_root,
                                 const std::vector<SliceProcess>& processes) {
  std::vector<uint32_t> out;
  if (processes.empty()) return out;
  DIR* d = ::opendir(proc_root.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    unsigned long pid = std::strtoul(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid == 0) continue;
    auto id = IdentityOfHostPid(proc_root, static_cast<uint32_t>(pid));
    if (!id) continue;
    for (const SliceProcess& p : processes) {
      if (p.pid == id->pid && p.pid_ns == id->pid_ns &&
          (p.start_time == 0 || id->start_time == 0 || p.start_time == id->start_time)) {
        out.push_back(static_cast<uint32_t>(pid));
        break;
      }
    }
  }
  ::closedir(d);
  return out;
}

Result<SliceControlView> ReadSliceControl(const std::string& region_path) {
  shm::Mapping mapping;
  shm::RegionError e =
      shm::Mapping::OpenExisting(region_path.c_str(), /*writable=*/false, &mapping);
  if (e != shm::RegionError::kOk) {
    return Status::Unavailable("accounting region " + region_path + ": " + shm::RegionErrorText(e));
  }
  const shm::Region* r = mapping.region();
  const shm::TenantControl& c = r->header.control;
  auto load = [](const uint64_t& f) { return shm::LoadU64(f); };
  SliceControlView v;
  v.pause_until_ns = load(c.pause_until_ns);
  v.level = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(c.level)).load();
  v.share_cap_pct = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(c.share_cap_pct)).load();
  v.launch_failures = load(c.launch_failures);
  v.oom_refusals = load(c.oom_refusals);
  v.held_launches = load(c.held_launches);
  const shm::SpillState& spill = r->header.spill;
  v.memory_mode = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(spill.mode)).load();
  v.protected_slice =
      std::atomic_ref<uint32_t>(const_cast<uint32_t&>(spill.protected_slice)).load() != 0;
  v.spilled_bytes = load(spill.spilled_bytes);
  const uint32_t n = r->header.config.device_count;
  for (uint32_t d = 0; d < n && d < static_cast<uint32_t>(shm::kMaxDevices); ++d) {
    v.used_bytes.push_back(shm::DeviceUsed(r, static_cast<int>(d)));
    uint64_t limit = r->header.config.memory_limit[d];
    v.limit_bytes.push_back(limit == shm::kNoLimit ? 0 : limit);
  }
  for (int s = 0; s < shm::kMaxProcs; ++s) {
    const shm::ProcSlot& slot = r->slots[s];
    int32_t pid = shm::LoadPid(slot);
    if (pid == 0) continue;
    v.processes.push_back({pid, slot.pid_ns, slot.start_time});
  }
  return v;
}

Status WriteSliceControl(const std::string& region_path, const SliceControlUpdate& u) {
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenExisting(region_path.c_str(), /*writable=*/true, &mapping);
  if (e != shm::RegionError::kOk) {
    return Status::Unavailable("accounting region " + region_path + ": " + shm::RegionErrorText(e));
  }
  shm::TenantControl& c = mapping.region()->header.control;
  if (u.level) std::atomic_ref<uint32_t>(c.level).store(*u.level);
  if (u.share_cap_pct) std::atomic_ref<uint32_t>(c.share_cap_pct).store(*u.share_cap_pct);
  if (u.pause_until_ns) shm::StoreU64(c.pause_until_ns, *u.pause_until_ns);
  return Status::Ok();
}

}  // namespace vgpu::node
