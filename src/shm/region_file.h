// Mapping a region file into memory: create-or-join for the processes of a slice, read-only
// opening for observers (`vgpu top`, the node daemon).
//
// Creation protocol (shared_file.h): open(O_CREAT), flock(LOCK_EX) while the file is sized and
// initialised, then unlock. flock is dropped by the kernel when its holder dies, so a creator
// killed half-way leaves a file whose state is not ready; the next opener re-initialises it.
//
// Errors are values (RegionError); no exceptions, no allocation beyond the mapping.
#pragma once

#include <cstddef>

#include "shm/region.h"
#include "shm/shared_file.h"

namespace vgpu::shm {

class Mapping {
 public:
  Mapping() = default;
  ~Mapping();
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  Mapping(Mapping&& other) noexcept;
  Mapping& operator=(Mapping&& other) noexcept;

  // Opens the region at `path`, creating and initialising it with `config` when the file does
  // not exist, is empty or was left half-initialised. An existing region keeps its own config
  // (the caller compares). Validates before returning kOk.
  static RegionError OpenOrCreate(const char* path, const RegionConfig& config, Mapping* out);

  // Opens an existing region without creating it. `writable` false maps it read-only.
  static RegionError OpenExisting(const char* path, bool writable, Mapping* out);

  Region* region() const { return region_; }
  bool writable() const { return writable_; }
  // errno of the failing system call after kIo.
  int saved_errno() const { return saved_errno_; }
  void Reset();
  // Gives up ownership without unmapping: the region stays mapped for the life of the process
  // (libvgpu uses this so that no exit handler unmaps memory other threads still use).
  Region* Detach();

 private:
  // Takes what an open of shared_file.h returned `e` with, mapped `writable`.
  RegionError Adopt(RegionError e, const SharedMapping& m, bool writable);

  Region* region_ = nullptr;
  size_t size_ = 0;
  bool writable_ = false;
  int saved_errno_ = 0;
};

}  // namespace vgpu::shm
