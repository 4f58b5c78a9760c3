#include "shm/region_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <unistd.h>

#include <utility>

namespace vgpu::shm {
namespace {

// Maps `length` bytes of fd. Returns nullptr on failure.
void* MapFd(int fd, size_t length, bool writable) {
  int prot = writable ? (PROT_READ | PROT_WRITE) : PROT_READ;
  void* p = ::mmap(nullptr, length, prot, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? nullptr : p;
}

bool HeaderLooksEmpty(const Region* r) {
  uint32_t state = std::atomic_ref<uint32_t>(const_cast<uint32_t&>(r->header.state)).load();
  return (r->header.magic == 0 || r->header.magic == kRegionMagic) && state != kStateReady &&
         (r->header.magic == 0 || r->header.major == kRegionMajor);
}

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

}  // namespace

Mapping::~Mapping() { Reset(); }

Mapping::Mapping(Mapping&& other) noexcept { *this = std::move(other); }

Mapping& Mapping::operator=(Mapping&& other) noexcept {
  if (this != &other) {
    Reset();
    region_ = std::exchange(other.region_, nullptr);
    size_ = std::exchange(other.size_, 0);
    writable_ = other.writable_;
    saved_errno_ = other.saved_errno_;
  }
  return *this;
}

Region* Mapping::Detach() {
  Region* r = region_;
  region_ = nullptr;
  size_ = 0;
  return r;
}

void Mapping::Reset() {
  if (region_ != nullptr) ::munmap(region_, size_);
  region_ = nullptr;
  size_ = 0;
}

RegionError Mapping::OpenOrCreate(const char* path, const RegionConfig& config, Mapping* out) {
  out->Reset();
  int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
  if (fd < 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  FdCloser closer(fd);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) {
      out->saved_errno_ = errno;
      return RegionError::kIo;
    }
  }
  // The flock is released when fd is closed (closer), also on every early return.
  off_t end = ::lseek(fd, 0, SEEK_END);
  if (end < 0) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  size_t file_size = static_cast<size_t>(end);
  bool fresh = file_size == 0;
  if (fresh) {
    if (::ftruncate(fd, sizeof(Region)) != 0) {
      out->saved_errno_ = errno;
      return RegionError::kIo;
    }
    file_size = sizeof(Region);
  }
  if (file_size < sizeof(Region)) {
    // Read enough to tell a foreign version from garbage.
    void* p = MapFd(fd, file_size, false);
    if (p == nullptr) {
      out->saved_errno_ = errno;
      return RegionError::kIo;
    }
    RegionError e = ValidateRegion(static_cast<const Region*>(p), file_size);
    ::munmap(p, file_size);
    return e == RegionError::kOk ? RegionError::kTooSmall : e;
  }
  void* p = MapFd(fd, sizeof(Region), true);
  if (p == nullptr) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  auto* region = static_cast<Region*>(p);
  if (fresh || HeaderLooksEmpty(region)) InitializeRegion(region, config, true);
  RegionError e = ValidateRegion(region, sizeof(Region));
  if (e != RegionError::kOk) {
    ::munmap(p, sizeof(Region));
    return e;
  }
  out->region_ = region;
  out->size_ = sizeof(Region);
  out->writable_ = true;
  return RegionError::kOk;
}

RegionError Mapping::OpenExisting(const char* path, bool writable, Mapping* out) {
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
  size_t file_size = static_cast<size_t>(end);
  if (file_size < 16) return RegionError::kTooSmall;
  size_t map_size = file_size < sizeof(Region) ? file_size : sizeof(Region);
  void* p = MapFd(fd, map_size, writable);
  if (p == nullptr) {
    out->saved_errno_ = errno;
    return RegionError::kIo;
  }
  RegionError e = ValidateRegion(static_cast<const Region*>(p), map_size);
  if (e != RegionError::kOk) {
    ::munmap(p, map_size);
    return e;
  }
  out->region_ = static_cast<Region*>(p);
  out->size_ = map_size;
  out->writable_ = writable;
  return RegionError::kOk;
}

}  // namespace vgpu::shm
