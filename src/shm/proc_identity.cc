#include "shm/proc_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace vgpu::shm {
namespace {

// Reads up to size-1 bytes of a small file into buf; returns the length or -1.
ssize_t ReadSmallFile(const char* path, char* buf, size_t size) {
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  size_t total = 0;
  while (total + 1 < size) {
    ssize_t n = ::read(fd, buf + total, size - 1 - total);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    total += static_cast<size_t>(n);
  }
  ::close(fd);
  buf[total] = '\0';
  return static_cast<ssize_t>(total);
}

// The inode of a namespace link, read from its target "pid:[4026531836]" (readlink rather than
// stat keeps the library loadable with old glibc versions).
uint64_t NamespaceInode(const char* path) {
  char target[64];
  ssize_t n = ::readlink(path, target, sizeof(target) - 1);
  if (n <= 0) return 0;
  target[n] = '\0';
  const char* p = target;
  while (*p != '\0' && *p != '[') ++p;
  if (*p != '[') return 0;
  uint64_t value = 0;
  for (++p; *p >= '0' && *p <= '9'; ++p) value = value * 10 + static_cast<uint64_t>(*p - '0');
  return *p == ']' ? value : 0;
}

}  // namespace

bool ParseStat(const char* text, size_t length, StatFields* out) {
  size_t i = length;
  while (i > 0 && text[i - 1] != ')') --i;
  if (i == 0) return false;
  // text[i] starts " S ppid ...": field 3 is the state.
  int field = 2;
  uint64_t value = 0;
  bool in_token = false;
  StatFields fields;
  for (; i <= length; ++i) {
    char c = i < length ? text[i] : ' ';
    if (c == ' ' || c == '\n') {
      if (in_token && field == 22) {
        fields.start_time = value;
        *out = fields;
        return true;
      }
      if (in_token) ++field;
      in_token = false;
      value = 0;
      continue;
    }
    if (!in_token && field == 2) field = 3;  // first token after ')'
    in_token = true;
    if (field == 3) {
      fields.state = c;
    } else if (field == 4 || field == 5) {
      if (c < '0' || c > '9') return false;  // ppid and pgrp are never negative
      int32_t& f = field == 4 ? fields.ppid : fields.pgrp;
      if (f > (INT32_MAX - 9) / 10) return false;
      f = f * 10 + (c - '0');
    } else if (field == 22) {
      if (c < '0' || c > '9') return false;
      if (value > (~0ULL - 9) / 10) return false;
      value = value * 10 + static_cast<uint64_t>(c - '0');
    }
  }
  return false;
}

bool ReadStat(pid_t pid, StatFields* out) {
  char path[64];
  std::snprintf(path, sizeof(path), "/proc/%d/stat", static_cast<int>(pid));
  char buf[1024];
  ssize_t n = ReadSmallFile(path, buf, sizeof(buf));
  if (n <= 0) return false;
  return ParseStat(buf, static_cast<size_t>(n), out);
}

uint64_t ReadStartTime(pid_t pid) {
  StatFields f;
  return ReadStat(pid, &f) ? f.start_time : 0;
}

ProcIdentity CurrentProcIdentity() {
  ProcIdentity id;
  id.pid = static_cast<int32_t>(::getpid());
  id.start_time = ReadStartTime(id.pid);
  id.pid_ns = NamespaceInode("/proc/self/ns/pid");
  return id;
}

Liveness CheckLiveness(const ProcSlot& slot, uint64_t my_pid_ns) {
  int32_t pid = LoadPid(slot);
  if (pid <= 0) return Liveness::kDead;
  uint64_t slot_ns = LoadU64(slot.pid_ns);
  if (slot_ns != 0 && my_pid_ns != 0 && slot_ns != my_pid_ns) return Liveness::kUnknown;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return Liveness::kDead;
  // The pid exists (or we may not signal it): make sure it is the same, running process.
  StatFields now;
  if (!ReadStat(pid, &now)) {
    // Gone between the two checks, or /proc is not readable: trust kill().
    return (::kill(pid, 0) != 0 && errno == ESRCH) ? Liveness::kDead : Liveness::kAlive;
  }
  if (now.state == 'Z' || now.state == 'X') return Liveness::kDead;
  uint64_t recorded = LoadU64(slot.start_time);
  if (recorded != 0 && now.start_time != recorded) return Liveness::kDead;
  return Liveness::kAlive;
}

}  // namespace vgpu::shm
