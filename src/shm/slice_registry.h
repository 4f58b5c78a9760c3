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
#include "shm/region.h"

namespace vgpu::shm {

std::string DefaultStateDir();

// A slice as found on disk.
struct SliceEntry {
  std::string dir;        // <state>/slices/<name>
  std::string name;       // directory name
  std::string command;    // from meta ("" if unknown)
  pid_t creator_pid = 0;  // the `vgpu run` that owns it (0 if unknown)
  bool creator_alive = false;
  std::string error;  // why the region could not be read ("" if it could)
  Region region{};    // a snapshot of the region (valid when error is empty)
};

// Reads every slice under `state_dir`. Slices whose region cannot be read are returned with
// `error` set (a foreign version, a corrupted file); nothing is modified.
std::vector<SliceEntry> ReadSlices(const std::string& state_dir);

// Meta file contents written by `vgpu run`.
struct SliceMeta {
  pid_t creator_pid = 0;
  std::string command;
};
Status WriteSliceMeta(const std::string& dir, const SliceMeta& meta);

}  // namespace vgpu::shm
