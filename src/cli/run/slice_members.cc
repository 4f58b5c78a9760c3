#include "cli/run/slice_members.h"

#include <dirent.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "shm/proc_identity.h"
#include "shm/region_file.h"

namespace vgpu::cli {

RegionMembers ReadRegionMembers(const std::string& region_path, pid_t except) {
  RegionMembers m;
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenExisting(region_path.c_str(), false, &mapping);
  if (e != shm::RegionError::kOk) {
    m.error = shm::RegionErrorText(e);
    return m;
  }
  m.readable = true;
  const uint64_t my_ns = shm::CurrentProcIdentity().pid_ns;
  for (const shm::ProcSlot& slot : mapping.region()->slots) {
    int32_t pid = shm::LoadPid(slot);
    if (pid <= 0 || pid == except) continue;
    switch (shm::CheckLiveness(slot, my_ns)) {
      case shm::Liveness::kAlive:
        m.alive.push_back(pid);
        break;
      case shm::Liveness::kUnknown:
        ++m.unknown;
        break;
      case shm::Liveness::kDead:
        break;
    }
  }
  return m;
}

std::vector<pid_t> RegionHolders(const std::string& region_path, pid_t except) {
  if (region_path.empty()) return {};
  return ReadRegionMembers(region_path, except).alive;
}

std::vector<pid_t> ProcessesMapping(const std::string& path) {
  std::vector<pid_t> out;
  std::error_code ec;
  std::string target = std::filesystem::weakly_canonical(path, ec).string();
  if (ec || target.empty()) target = path;
  DIR* dir = opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = readdir(dir)) {
    char* end = nullptr;
    long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    std::ifstream maps(std::string("/proc/") + e->d_name + "/maps");
    std::string line;
    while (std::getline(maps, line)) {
      // "... inode   /path" or "... /path (deleted)" once the file is removed.
      size_t at = line.find(target);
      if (at == std::string::npos || at == 0 || line[at - 1] != ' ') continue;
      std::string rest = line.substr(at + target.size());
      if (rest.empty() || rest == " (deleted)") {
        out.push_back(static_cast<pid_t>(pid));
        break;
      }
    }
  }
  closedir(dir);
  return out;
}

}  // namespace vgpu::cli
