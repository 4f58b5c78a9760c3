// Who still uses a slice: the live processes recorded in its accounting region and the
// processes that have the region mapped. `vgpu run` ends them with its command
// (run_supervisor.h); `vgpu gc` never removes a slice that has any.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace vgpu::cli {

struct RegionMembers {
  bool readable = false;     // the region could be opened and validated
  std::string error;         // why not
  std::vector<pid_t> alive;  // live processes with a slot (pid reuse detected by start time)
  int unknown = 0;           // slots of processes in other pid namespaces (cannot be checked)
};

// The members recorded in the region at `region_path`, other than `except`.
RegionMembers ReadRegionMembers(const std::string& region_path, pid_t except);

// The live processes with memory in the region at `region_path`, other than `except` (those of
// other pid namespaces are left out).
std::vector<pid_t> RegionHolders(const std::string& region_path, pid_t except);

// The processes of this pid namespace that have the file at `path` mapped, from
// /proc/<pid>/maps (processes whose maps cannot be read, another user's, are not seen).
std::vector<pid_t> ProcessesMapping(const std::string& path);

}  // namespace vgpu::cli
