#include "simgpu/shared_state.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "simgpu/mig_state.h"

namespace vgpu::simgpu {
namespace {

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

Status InitMutex(pthread_mutex_t* mutex) {
  pthread_mutexattr_t attr;
  if (pthread_mutexattr_init(&attr) != 0) return Status::Internal("pthread_mutexattr_init");
  int rc = pthread_mutexattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (rc == 0) rc = pthread_mutexattr_setrobust(&attr, PTHREAD_MUTEX_ROBUST);
  if (rc == 0) rc = pthread_mutex_init(mutex, &attr);
  pthread_mutexattr_destroy(&attr);
  if (rc != 0) return Status::Internal(std::string("robust mutex: ") + std::strerror(rc));
  return Status::Ok();
}

Status Validate(const SharedStateLayout* layout, const Config& config, const std::string& path) {
  const StateHeader& h = layout->header;
  if (std::memcmp(h.magic, kStateMagic, sizeof(kStateMagic)) != 0) {
    return Status::FailedPrecondition(path + ": not a simulated GPU state file (bad magic)");
  }
  if (h.major != kStateMajor) {
    return Status::FailedPrecondition(path + ": state version " + std::to_string(h.major) + "." +
                                      std::to_string(h.minor) + ", this library reads " +
                                      std::to_string(kStateMajor) + ".x; remove the file");
  }
  if (h.total_size != sizeof(SharedStateLayout)) {
    return Status::FailedPrecondition(path + ": unexpected state size " +
                                      std::to_string(h.total_size));
  }
  if (h.config_hash != config.Hash() || h.device_count != config.devices.size()) {
    return Status::FailedPrecondition(
        path +
        ": made for another device configuration (set VGPU_SIMGPU_STATE to another path, "
        "or remove the file)");
  }
  return Status::Ok();
}

Result<SharedStateLayout*> MapFd(int fd, const std::string& path) {
  void* p = mmap(nullptr, sizeof(SharedStateLayout), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return Status::IoError(Errno("mmap " + path));
  return static_cast<SharedStateLayout*>(p);
}

// Creates and fills a new state file under a temporary name and links it into place. Returns
// false (and no error) if another process linked its file first.
Result<bool> CreateState(const Config& config, const std::string& path) {
  char suffix[64];
  std::snprintf(suffix, sizeof(suffix), ".tmp.%d.%" PRIu64, static_cast<int>(getpid()),
                MonotonicNs());
  std::string tmp = path + suffix;
  int fd = open(tmp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return Status::IoError(Errno("create " + tmp));
  if (ftruncate(fd, static_cast<off_t>(sizeof(SharedStateLayout))) != 0) {
    Status s = Status::IoError(Errno("ftruncate " + tmp));
    close(fd);
    unlink(tmp.c_str());
    return s;
  }
  Result<SharedStateLayout*> mapped = MapFd(fd, tmp);
  close(fd);
  if (!mapped) {
    unlink(tmp.c_str());
    return mapped.error();
  }
  SharedStateLayout* layout = *mapped;
  StateHeader& h = layout->header;
  h.major = kStateMajor;
  h.minor = kStateMinor;
  h.total_size = sizeof(SharedStateLayout);
  h.config_hash = config.Hash();
  h.device_count = static_cast<uint32_t>(config.devices.size());
  Status s = InitMutex(&h.mutex);
  uint64_t now = MonotonicNs();
  for (size_t i = 0; i < config.devices.size(); ++i) {
    layout->devices[i].total_bytes = config.devices[i].memory_bytes;
    layout->devices[i].settled_until_ns = now;
  }
  MigState(layout, &config).InitializeFromConfig();
  std::memcpy(h.magic, kStateMagic, sizeof(kStateMagic));
  munmap(layout, sizeof(SharedStateLayout));
  if (!s.ok()) {
    unlink(tmp.c_str());
    return s;
  }
  int rc = link(tmp.c_str(), path.c_str());
  int link_errno = errno;
  unlink(tmp.c_str());
  if (rc == 0) return true;
  if (link_errno == EEXIST) return false;
  errno = link_errno;
  return Status::IoError(Errno("link " + path));
}

}  // namespace

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

int FindProcessSlot(const SharedStateLayout* layout, int32_t pid) {
  for (int i = 0; i < kMaxProcesses; ++i) {
    if (pid != 0 && layout->processes[i].pid == pid) return i;
  }
  return -1;
}

namespace {

// Reads the state (field 3) and start time (field 22) of /proc/<pid>/stat. False if unreadable.
bool ReadProcStat(int32_t pid, char* state, uint64_t* start_time) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[1024];
  ssize_t n = read(fd, buf, sizeof(buf) - 1);
  close(fd);
  if (n <= 0) return false;
  buf[n] = '\0';
  // The command name (field 2) is in parentheses and may hold spaces: start after the last ')'.
  char* p = std::strrchr(buf, ')');
  if (p == nullptr) return false;
  ++p;
  while (*p == ' ') ++p;
  *state = *p;
  for (int field = 3; field < 22; ++field) {  // skip fields 3..21
    while (*p != ' ' && *p != '\0') ++p;
    while (*p == ' ') ++p;
  }
  *start_time = std::strtoull(p, nullptr, 10);
  return true;
}

}  // namespace

uint64_t ProcessStartTime(int32_t pid) {
  char state = 0;
  uint64_t start = 0;
  return ReadProcStat(pid, &state, &start) ? start : 0;
}

bool ProcessAlive(int32_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno != EPERM) return false;
  char state = 0;
  uint64_t now_start = 0;
  // Unreadable /proc (another pid namespace): trust kill().
  if (!ReadProcStat(pid, &state, &now_start)) return true;
  if (state == 'Z' || state == 'X') return false;  // killed, not yet reaped: its memory is free
  return start_time == 0 || now_start == start_time;
}

std::string SharedState::DefaultPath(const Config& config) {
  if (const char* p = std::getenv("VGPU_SIMGPU_STATE"); p != nullptr && *p != '\0') return p;
  char buf[64];
  // The layout's version is in the name: builds of another layout keep to their own files.
  std::snprintf(buf, sizeof(buf), "/dev/shm/vgpu-simgpu-%u.%u-%016" PRIx64, kStateMajor,
                kStateMinor, config.Hash());
  return buf;
}

Result<std::unique_ptr<SharedState>> SharedState::Open(const Config& config,
                                                       const std::string& path) {
  if (config.devices.empty() || config.devices.size() > kMaxDevices) {
    return Status::InvalidArgument("simulated GPU: 1 to 16 devices are supported");
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT) {
      Result<bool> created = CreateState(config, path);
      if (!created) return created.error();
      continue;  // open what was linked (ours or a racing creator's)
    }
    if (fd < 0) return Status::IoError(Errno("open " + path));
    struct stat st;
    if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) < sizeof(SharedStateLayout)) {
      close(fd);
      return Status::FailedPrecondition(path + ": too small to be a simulated GPU state file");
    }
    Result<SharedStateLayout*> mapped = MapFd(fd, path);
    close(fd);
    if (!mapped) return mapped.error();
    Status valid = Validate(*mapped, config, path);
    if (!valid.ok()) {
      munmap(*mapped, sizeof(SharedStateLayout));
      return valid;
    }
    return std::unique_ptr<SharedState>(new SharedState(*mapped, path));
  }
  return Status::Unavailable(path + ": could not be created or opened");
}

SharedState::SharedState(SharedStateLayout* layout, std::string path)
    : layout_(layout), path_(std::move(path)) {}

SharedState::~SharedState() { munmap(layout_, sizeof(SharedStateLayout)); }

SharedState::Lock::Lock(SharedState* state) : state_(state) {
  int rc = pthread_mutex_lock(&state_->layout_->header.mutex);
  if (rc == EOWNERDEAD) {
    pthread_mutex_consistent(&state_->layout_->header.mutex);
    VGPU_LOG_WARN("simulated GPU: a process died holding the state lock; repairing %s",
                  state_->path_.c_str());
    state_->Repair();
  }
}

SharedState::Lock::~Lock() { pthread_mutex_unlock(&state_->layout_->header.mutex); }

void SharedState::Repair() {
  for (int d = 0; d < kMaxRecords; ++d) {
    DeviceRecord& dev = layout_->devices[d];
    uint64_t used = 0;
    for (const ProcessRecord& p : layout_->processes) {
      if (p.pid != 0) used += p.used_bytes[d];
    }
    dev.used_bytes = used;
    if (dev.pending_tail - dev.pending_head > kPendingCapacity) dev.pending_head = dev.pending_tail;
    if (dev.pending_tail != dev.pending_head) {
      const PendingKernel& last = dev.pending[(dev.pending_tail - 1) % kPendingCapacity];
      if (last.end_ns > dev.busy_until_ns) dev.busy_until_ns = last.end_ns;
    }
  }
  ReclaimDead();
}

Result<int> SharedState::RegisterProcess(int32_t pid) {
  for (int i = 0; i < kMaxProcesses; ++i) {
    if (layout_->processes[i].pid == pid) return i;
  }
  ReclaimDead();
  for (int i = 0; i < kMaxProcesses; ++i) {
    ProcessRecord& p = layout_->processes[i];
    if (p.pid != 0) continue;
    uint32_t generation = p.generation;
    std::memset(&p, 0, sizeof(p));
    p.generation = generation;
    p.start_time = ProcessStartTime(pid);
    for (int d = 0; d < kMaxRecords; ++d) {
      std::memset(layout_->process_buckets[d][i], 0, sizeof(layout_->process_buckets[d][i]));
    }
    p.pid = pid;
    return i;
  }
  return Status::ResourceExhausted("simulated GPU: more than " + std::to_string(kMaxProcesses) +
                                   " processes use the device");
}

void SharedState::ReleaseProcess(int slot) {
  ProcessRecord& p = layout_->processes[slot];
  for (int d = 0; d < kMaxRecords; ++d) {
    DeviceRecord& dev = layout_->devices[d];
    dev.used_bytes -= p.used_bytes[d] <= dev.used_bytes ? p.used_bytes[d] : dev.used_bytes;
    p.used_bytes[d] = 0;
    p.contexts[d] = 0;
    layout_->managed_resident[slot][d] = 0;
  }
  p.pid = 0;
  p.generation++;
}

uint64_t SharedState::ManagedResident(int device, int except_slot) const {
  uint64_t sum = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    if (i != except_slot && layout_->processes[i].pid != 0) {
      sum += layout_->managed_resident[i][device];
    }
  }
  return sum;
}

int SharedState::ReclaimDead() {
  layout_->header.last_reclaim_ns = MonotonicNs();
  int freed = 0;
  for (int i = 0; i < kMaxProcesses; ++i) {
    ProcessRecord& p = layout_->processes[i];
    if (p.pid == 0 || ProcessAlive(p.pid, p.start_time)) continue;
    VGPU_LOG_DEBUG("simulated GPU: reclaiming dead process %d", p.pid);
    ReleaseProcess(i);
    ++freed;
  }
  return freed;
}

void SharedState::MaybeReclaim(uint64_t now_ns) {
  if (now_ns - layout_->header.last_reclaim_ns >= kReclaimPeriodNs) ReclaimDead();
}

bool SharedState::TryReserve(int slot, int device, uint64_t bytes) {
  DeviceRecord& dev = layout_->devices[device];
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (bytes <= dev.total_bytes && dev.used_bytes <= dev.total_bytes - bytes) {
      dev.used_bytes += bytes;
      layout_->processes[slot].used_bytes[device] += bytes;
      return true;
    }
    if (attempt == 0 && ReclaimDead() == 0) break;
  }
  return false;
}

void SharedState::Release(int slot, int device, uint64_t bytes) {
  DeviceRecord& dev = layout_->devices[device];
  uint64_t& mine = layout_->processes[slot].used_bytes[device];
  if (bytes > mine) bytes = mine;
  mine -= bytes;
  dev.used_bytes -= bytes <= dev.used_bytes ? bytes : dev.used_bytes;
}

}  // namespace vgpu::simgpu
