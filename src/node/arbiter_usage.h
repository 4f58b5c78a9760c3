// The per-GPU compute arbiters (shm/arbiter.h) as the node daemon sees them: for each GPU, the
// slices that take part in its arbitration, their configured shares and the GPU time they got.
// Read-only: the arbiter files are copied into a private snapshot and never written, so a
// reader cannot disturb the launch gates of the containers.
//
// Slices are found by key: libvgpu.so names a slice in the arbiter by shm::SliceKey(the path of
// its accounting region), and the node mounts the region at its host path, so SliceKeyOf(the
// slice's region path) is the key its processes use.
//
// Built on src/shm when that library is part of the build; without it, ReadArbiters reports
// every GPU as unreadable.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace vgpu::node {

struct ArbiterSliceUsage {
  uint64_t key = 0;
  std::string name;  // display name (the region's directory name)
  int max_pct = 100;
  int guarantee_pct = 0;
  int weight = 1;
  int level = 2;  // priority level (compute_settings.h kLevel*)
  bool elastic = false;
  uint64_t time_slice_ns = 0;
  int members = 0;           // live processes
  int waiters = 0;           // gate threads waiting for a turn
  double achieved = 0;       // share of the GPU's time charged over the last second (0..1)
  uint64_t used_ns = 0;      // device time charged in total
  uint64_t kernels = 0;      // launches admitted
  uint64_t held_ns = 0;      // time its gates waited in total
  uint64_t turns = 0;        // turns granted
  uint64_t preempted = 0;    // turns lost early to a more important slice
  double idle_seconds = -1;  // since its last admitted launch; -1: none yet
};

struct ArbiterUsage {
  std::string uuid;
  std::string path;
  std::string error;  // why it could not be read; "" if it could (a missing file is an error)
  uint64_t turns = 0;
  uint64_t preemptions = 0;
  uint64_t owner_key = 0;  // the slice holding the current turn; 0: none
  std::vector<ArbiterSliceUsage> slices;

  const ArbiterSliceUsage* Find(uint64_t key) const;
};

// Creates (or validates) "<dir>/<uuid>.arbiter" for each of `uuids`, so that the files exist
// with the right modes before any container starts (the directory 01777, the files 0666).
// Errors name the file.
Status CreateArbiters(const std::string& dir, const std::vector<std::string>& uuids);

// Reads "<dir>/<uuid>.arbiter" for each of `uuids` (by UUID). Never modifies anything.
std::map<std::string, ArbiterUsage> ReadArbiters(const std::string& dir,
                                                 const std::vector<std::string>& uuids);

// The arbiter key of the slice whose accounting region is at `region_path`.
uint64_t SliceKeyOf(const std::string& region_path);

}  // namespace vgpu::node
