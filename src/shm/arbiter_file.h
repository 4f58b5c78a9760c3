// Mapping a per-GPU arbiter file (arbiter.h): create-or-join for the launch gates of libvgpu.so,
// read-only opening for observers (`vgpu top`, the node daemon).
//
// The file of a GPU is <dir>/<uuid>.arbiter. Creation follows the shared files' protocol
// (shared_file.h): open(O_CREAT, 0666), flock(LOCK_EX) while the file is sized and initialised,
// unlock; a creator killed half-way leaves a file that is not ready, and the next opener
// re-initialises it. The directory is created (mode 01777, like /tmp, so that the slices of
// several users can share one GPU's arbiter) when it does not exist.
//
// Errors are values (RegionError); no exceptions, no allocation beyond the mapping.
#pragma once

#include <cstddef>

#include "shm/arbiter.h"
#include "shm/shared_file.h"  // MakeParentDirs

namespace vgpu::shm {

// Writes "<dir>/<uuid>.arbiter" into `out`; false if it does not fit or an input is empty.
bool ArbiterPath(const char* dir, const char* uuid, char* out, size_t size);

class ArbiterMapping {
 public:
  ArbiterMapping() = default;
  ~ArbiterMapping();
  ArbiterMapping(const ArbiterMapping&) = delete;
  ArbiterMapping& operator=(const ArbiterMapping&) = delete;

  // Opens the arbiter at `path`, creating the directory and the file (for the GPU `uuid`) when
  // needed. Validates before returning kOk.
  static RegionError OpenOrCreate(const char* path, const char* uuid, ArbiterMapping* out);
  // Opens an existing arbiter without creating it; `writable` false maps it read-only.
  static RegionError OpenExisting(const char* path, bool writable, ArbiterMapping* out);

  Arbiter* arbiter() const { return arbiter_; }
  int saved_errno() const { return saved_errno_; }
  void Reset();
  // Gives up ownership without unmapping (libvgpu keeps the mapping for the process's life).
  Arbiter* Detach();

 private:
  // Takes what an open of shared_file.h returned `e` with.
  RegionError Adopt(RegionError e, const SharedMapping& m);

  Arbiter* arbiter_ = nullptr;
  size_t size_ = 0;
  int saved_errno_ = 0;
};

}  // namespace vgpu::shm
