// Opening and mapping the fixed-size files that processes share (the accounting region,
// region_file.h; the per-GPU arbiters, arbiter_file.h), for the mappings of those two headers.
//
// Creation protocol: open(O_CREAT), flock(LOCK_EX) while the file is sized and initialised, then
// unlock. flock is dropped by the kernel when its holder dies, so a creator killed half-way
// leaves a file whose state is not ready; the next opener re-initialises it.
//
// Errors are values (RegionError); no exceptions, no allocation beyond the mapping, libc only
// (this is part of libvgpu.so).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shm/region.h"

namespace vgpu::shm {

// mkdir -p for the directory part of `path`, each new level with mode 01777 (shared by users).
void MakeParentDirs(const char* path);

// Opens `path` read-write, creating it (and, when `path`'s directory is missing, its parent
// directories with MakeParentDirs) and making it 0666 whatever the umask, for a file that the
// slices of several users share. Returns the descriptor (O_CLOEXEC), or -1 with errno set.
int OpenFileSharedByUsers(const char* path);

// One layout kept in a shared file.
struct SharedFileKind {
  size_t size;  // bytes of a complete file, all of which are mapped
  // Checks the first `mapped` bytes (at most `size`) at `p`: kOk, or why they are not the layout.
  RegionError (*validate)(const void* p, size_t mapped);
  // Create-or-join: true when the mapped file is zeroed or was left half-initialised.
  bool (*looks_empty)(const void* p);
  // Create-or-join: fills the layout in place from the opener's `context`.
  void (*initialize)(void* p, const void* context);
  // Create-or-join: the file is opened with OpenFileSharedByUsers rather than a plain open.
  bool shared_by_users;
};

// What an open maps: `size` bytes at `addr` (nullptr when nothing), or the errno of the failing
// system call after kIo.
struct SharedMapping {
  void* addr = nullptr;
  size_t size = 0;
  int saved_errno = 0;
};

// Opens the file at `path`, creating and initialising it (kind.initialize with `context`) when it
// does not exist, is empty or looks empty. A shorter file than kind.size is kTooSmall, or what
// validation says of what it holds. Maps it read-write and validates before returning kOk.
RegionError OpenOrCreateSharedFile(const char* path, const SharedFileKind& kind,
                                   const void* context, SharedMapping* out);

// Opens an existing file without creating it: maps at most kind.size bytes (read-only unless
// `writable`) and validates them. A file under 16 bytes is kTooSmall.
RegionError OpenExistingSharedFile(const char* path, const SharedFileKind& kind, bool writable,
                                   SharedMapping* out);

// The SharedFileKind of layout T: a struct with a `header` of `magic`, `major` and `state`,
// checked by Validate(const T*, size_t) and filled by Initialize(T*, Context, true) from the
// Context that the opener's `context` points to. Empty: zeroed or of version kMagic / kMajor,
// and not ready.
template <typename T, typename Context, auto Validate, auto Initialize, uint64_t kMagic,
          uint32_t kMajor>
struct SharedLayout {
  static RegionError ValidateAt(const void* p, size_t mapped) {
    return Validate(static_cast<const T*>(p), mapped);
  }
  static bool LooksEmptyAt(const void* p) {
    const auto& h = static_cast<const T*>(p)->header;
    uint32_t state = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(h.state)).load();
    return (h.magic == 0 || h.magic == kMagic) && state != kStateReady &&
           (h.magic == 0 || h.major == kMajor);
  }
  static void InitializeAt(void* p, const void* context) {
    Initialize(static_cast<T*>(p), *static_cast<const Context*>(context), true);
  }
  static constexpr SharedFileKind Kind(bool shared_by_users) {
    return {sizeof(T), ValidateAt, LooksEmptyAt, InitializeAt, shared_by_users};
  }
};

}  // namespace vgpu::shm
