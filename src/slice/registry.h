// The registry of active slices on this machine (tools only, not part of libvgpu.so): one directory
// per slice under <state dir>/slices/, holding the slice's limits file, accounting region and a
// small meta file. `vgpu run` creates and removes entries; `vgpu top` (and the node daemon) read
// them.
//
// State dir: $VGPU_STATE_DIR, else $XDG_RUNTIME_DIR/vgpu, else /run/vgpu when writable, else
// /tmp/vgpu-<uid>; always absolute (a relative directory is taken from the working directory),
// so paths derived from it stay valid for a command that changes directory.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/status.h"
#include "shm/proc_identity.h"
#include "shm/region.h"

namespace vgpu::slice {

std::string DefaultStateDir();

// A slice as found on disk.
struct SliceEntry {
  std::string dir;             // <state>/slices/<name>
  std::string name;            // directory name
  std::string command;         // from meta ("" if unknown)
  pid_t creator_pid = 0;       // the `vgpu run` that owns it (0 if unknown)
  bool creator_alive = false;  // judged by pid, start time and pid namespace (pid reuse safe);
                               // true when it cannot be told (another pid namespace)
  std::string error;           // why the region could not be read ("" if it could)
  shm::Region region{};        // a snapshot of the region (valid when error is empty)
};

// Reads every slice under `state_dir`. Slices whose region cannot be read are returned with
// `error` set (a foreign version, a corrupted file); nothing is modified.
std::vector<SliceEntry> ReadSlices(const std::string& state_dir);

// Meta file contents written by `vgpu run`.
struct SliceMeta {
  pid_t creator_pid = 0;
  std::string command;
  uint64_t creator_start_time = 0;  // /proc/<pid>/stat field 22; 0 if unknown
  uint64_t creator_pid_ns = 0;      // pid namespace inode; 0 if unknown
};
// Writes <dir>/meta. When `meta.creator_pid` is this process and its start time is not given,
// this process's identity (shm/proc_identity.h) is recorded.
Status WriteSliceMeta(const std::string& dir, const SliceMeta& meta);
SliceMeta ReadSliceMeta(const std::string& dir);

// Whether the creator recorded in `meta` is alive (kAlive, kDead, or kUnknown when it cannot be
// told from here: another pid namespace).
shm::Liveness CreatorLiveness(const SliceMeta& meta);

}  // namespace vgpu::slice
