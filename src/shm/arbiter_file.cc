#include "shm/arbiter_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

namespace vgpu::shm {
namespace {

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

bool LooksEmpty(const Arbiter* a) {
  uint32_t state = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(a->header.state)).load();
  return (a->header.magic == 0 || a->header.magic == kArbiterMagic) && state != kStateReady &&
         (a->header.magic == 0 || a->header.major == kArbiterMajor);
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

bool ArbiterPath(const char* dir, const char* uuid, char* out, size_t size) {
  if (dir == nullptr || uuid == nullptr || dir[0] == '\0' || uuid[0] == '\0') return false;
  for (const char* p = uuid; *p != '\0'; ++p) {
    if (*p == '/') return false;
  }
  int n = std::snprintf(out, size, "%s/%s.arbiter", dir, uuid);
  return n > 0 && static_cast<size_t>(n) < size;
}

ArbiterMapping::~ArbiterMapping() { Reset(); }

void ArbiterMapping::Reset() {
  if (arbiter_ != nullptr) ::munmap(arbiter_, size_);
  arbiter_ = nullptr;
  size_ = 0;
}

Arbiter* ArbiterMapping::Detach() {
  Arbiter* a = arbiter_;
  arbiter_ = nullptr;
  size_ = 0;
  return a;
}

RegionError ArbiterMapping::OpenOrCreate(const char* path, const char* uuid, ArbiterMapping* out) {
  out->Reset();
  int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0 && errno == ENOENT) {
    MakeParentDirs(path);
    fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  }
  if (fd < 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  ::fchmod(fd, 0666);  // best effort: other users' slices share the GPU
  FdCloser closer(fd);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      out->saved_errno_ = errno;
      return RegionError::kIo;
    }
  }
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  bool fresh = end == 0;
  if (fresh && ::ftruncate(fd, sizeof(Arbiter)) != 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  if (!fresh && static_cast<size_t>(end) < sizeof(Arbiter)) {
    void* p = ::mmap(nullptr, static_cast<size_t>(end), PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      out->saved_errno_ = errno;
      return RegionError::kIo;
    }
    RegionError e = ValidateArbiter(static_cast<const Arbiter*>(p), static_cast<size_t>(end));
    ::munmap(p, static_cast<size_t>(end));
    return e == RegionError::kOk ? RegionError::kTooSmall : e;
  }
  void* p = ::mmap(nullptr, sizeof(Arbiter), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  auto* arbiter = static_cast<Arbiter*>(p);
  if (fresh || LooksEmpty(arbiter)) InitializeArbiter(arbiter, uuid, true);
  RegionError e = ValidateArbiter(arbiter, sizeof(Arbiter));
  if (e != RegionError::kOk) {
    ::munmap(p, sizeof(Arbiter));
    return e;
  }
  out->arbiter_ = arbiter;
  out->size_ = sizeof(Arbiter);
  return RegionError::kOk;
}

RegionError ArbiterMapping::OpenExisting(const char* path, bool writable, ArbiterMapping* out) {
  out->Reset();
  int fd = ::open(path, (writable ? O_RDWR : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  FdCloser closer(fd);
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  if (end < 16) return RegionError::kTooSmall;
  size_t map_size =
      static_cast<size_t>(end) < sizeof(Arbiter) ? static_cast<size_t>(end) : sizeof(Arbiter);
  void* p =
      ::mmap(nullptr, map_size, writable ? (PROT_READ | PROT_WRITE) : PROT_READ, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  RegionError e = ValidateArbiter(static_cast<const Arbiter*>(p), map_size);
  if (e != RegionError::kOk) {
    ::munmap(p, map_size);
    return e;
  }
  out->arbiter_ = static_cast<Arbiter*>(p);
  out->size_ = map_size;
  return RegionError::kOk;
}

}  // namespace vgpu::shm
