#include "shm/shared_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

namespace vgpu::shm {
namespace {

// Closes the descriptor, dropping its flock first: a mapping keeps the open file description
// (and with it the flock) alive after close(), so the lock must be released explicitly.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ < 0) return;
    ::flock(fd_, LOCK_UN);
    ::close(fd_);
  }

 private:
  int fd_;
};

// Maps `length` bytes of fd. Returns nullptr on failure (errno set).
void* MapFd(int fd, size_t length, bool writable) {
  int prot = writable ? (PROT_READ | PROT_WRITE) : PROT_READ;
  void* p = ::mmap(nullptr, length, prot, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

RegionError IoError(SharedMapping* out) {
  out->saved_errno = errno;
  return RegionError::kIo;
}

}  // namespace

void MakeParentDirs(const char* path) {
  char buf[512];
  size_t n = std::strlen(path);
  if (n >= sizeof(buf)) return;
  std::memcpy(buf, path, n + 1);
  for (size_t i = 1; i < n; ++i) {
    if (buf[i] != '/') continue;
    buf[i] = '\0';
    if (::mkdir(buf, 01777) == 0) ::chmod(buf, 01777);  // not narrowed by the umask
    buf[i] = '/';
  }
}

int OpenFileSharedByUsers(const char* path) {
  int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0 && errno == ENOENT) {
    MakeParentDirs(path);
    fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  }
  if (fd >= 0) ::fchmod(fd, 0666);  // best effort: other users' slices share the file
  return fd;
}

RegionError OpenOrCreateSharedFile(const char* path, const SharedFileKind& kind,
                                   const void* context, SharedMapping* out) {
  int fd = kind.shared_by_users ? OpenFileSharedByUsers(path)
                                : ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) return IoError(out);
  FdCloser closer(fd);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return IoError(out);
  }
  // The flock is released when fd is closed (closer), also on every early return.
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) return IoError(out);
  size_t file_size = static_cast<size_t>(end);
  bool fresh = file_size == 0;
  if (fresh) {
    if (::ftruncate(fd, static_cast<off_t>(kind.size)) != 0) return IoError(out);
    file_size = kind.size;
  }
  if (file_size < kind.size) {
    // Read enough to tell a foreign version from garbage.
    void* p = MapFd(fd, file_size, false);
    if (p == nullptr) return IoError(out);
    RegionError e = kind.validate(p, file_size);
    ::munmap(p, file_size);
    return e == RegionError::kOk ? RegionError::kTooSmall : e;
  }
  void* p = MapFd(fd, kind.size, true);
  if (p == nullptr) return IoError(out);
  if (fresh || kind.looks_empty(p)) kind.initialize(p, context);
  RegionError e = kind.validate(p, kind.size);
  if (e != RegionError::kOk) {
    ::munmap(p, kind.size);
    return e;
  }
  out->addr = p;
  out->size = kind.size;
  return RegionError::kOk;
}

RegionError OpenExistingSharedFile(const char* path, const SharedFileKind& kind, bool writable,
                                   SharedMapping* out) {
  int fd = ::open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) return IoError(out);
  FdCloser closer(fd);
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) return IoError(out);
  size_t file_size = static_cast<size_t>(end);
  if (file_size < 16) return RegionError::kTooSmall;
  size_t map_size = file_size < kind.size ? file_size : kind.size;
  void* p = MapFd(fd, map_size, writable);
  if (p == nullptr) return IoError(out);
  RegionError e = kind.validate(p, map_size);
  if (e != RegionError::kOk) {
    ::munmap(p, map_size);
    return e;
  }
  out->addr = p;
  out->size = map_size;
  return RegionError::kOk;
}

}  // namespace vgpu::shm
