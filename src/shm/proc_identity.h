// Who a process is, in a way that survives pid reuse: pid, start time and pid namespace.
//
// A region slot records the identity of the process that charged memory. Another process decides
// that the slot's owner is dead when kill(pid, 0) fails with ESRCH, or when the pid now belongs
// to a process that started at another time (the pid was reused). Slots from another pid
// namespace cannot be checked from here and are reported as kUnknown (never reclaimed).
//
// No allocation; reads /proc with open/read/close into stack buffers.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "shm/region.h"

namespace vgpu::shm {

struct ProcIdentity {
  int32_t pid = 0;
  uint64_t start_time = 0;  // /proc/<pid>/stat field 22 (clock ticks since boot); 0 if unknown
  uint64_t pid_ns = 0;      // inode of /proc/<pid>/ns/pid; 0 if unknown
};

// The identity of the calling process (system calls: getpid, reads of /proc/self).
ProcIdentity CurrentProcIdentity();

// Start time of `pid` from /proc/<pid>/stat, or 0 if it cannot be read.
uint64_t ReadStartTime(pid_t pid);

struct StatFields {
  char state = '?';         // field 3: R, S, D, Z (zombie), X (dead), ...
  int32_t ppid = 0;         // field 4
  int32_t pgrp = 0;         // field 5
  uint64_t start_time = 0;  // field 22
};

// Parses the text of a /proc/<pid>/stat file. The command name (field 2) may contain spaces and
// parentheses, so parsing starts after the last ')'. Returns false if malformed.
bool ParseStat(const char* text, size_t length, StatFields* out);

// State and start time of `pid`; false if /proc/<pid>/stat cannot be read.
bool ReadStat(pid_t pid, StatFields* out);

enum class Liveness { kAlive, kDead, kUnknown };

// Liveness of the process recorded in `slot`, judged from a process in namespace `my_pid_ns`.
// kDead for a free slot, a vanished pid, a zombie, or a pid now used by another process.
Liveness CheckLiveness(const ProcSlot& slot, uint64_t my_pid_ns);

}  // namespace vgpu::shm
