// The per-GPU compute arbiter region: one fixed-size file per physical GPU, named after the GPU's
// UUID in a node-wide directory (<arbiter dir>/<uuid>.arbiter), mapped MAP_SHARED by every process
// of every slice that has compute settings on that GPU. It holds each slice's compute
// configuration, its credits and usage, and the current time-slice owner; libvgpu.so's launch
// gate reads and writes it (arbiter_policy.h), `vgpu top` and the node daemon read it.
//
// Layout (version 1.x; minor 1 gave meaning to bytes that are zero in 1.0: the slice's
// last_seq, idle_gap_ns, gvtime, next_estimate_us, idle_gaps and config.latency_slack_us). Integers
// are little-endian host order; the file never crosses machines. Offsets are static_assert'ed below
// and never change within a major version.
//
//   ArbiterHeader (offset 0, 4096 bytes)
//     magic            u64  kArbiterMagic ("VGPUARBT")
//     major, minor     u32  kArbiterMajor / kArbiterMinor; a reader refuses another major
//     region_size      u32  sizeof(Arbiter)
//     max_slices       u32  kMaxArbiterSlices
//     max_procs        u32  kMaxArbiterProcs
//     state            u32  0 empty, 1 being initialised, 2 ready (written last)
//     creator_pid      i32  informational
//     last_proc        i32  process record of the launch admitted last (-1: none): a launch
//                          admitted right after one of its own process queues behind it
//     created_unix_ns  u64  informational
//     uuid[48]         char the GPU's UUID ("GPU-..."), set at creation
//     mutex            robust, process-shared pthread_mutex_t in a 64-byte cell; guards every
//                      write to the fields below and to the records
//     generation       u32  futex word: incremented (and waiters woken) whenever a waiting gate
//                          could now proceed (a turn ended or changed hands, a slice left)
//     sleepers         u32  gates currently sleeping on `generation` (skip the wake when 0)
//     owner            i32  slice record holding the current turn; -1: none
//     turn_launches    u32  launches admitted in the current turn
//     turn_epoch       u64  incremented at every new turn
//     turn_start_ns    u64  CLOCK_MONOTONIC: device time at which the turn's work starts
//     turn_end_ns      u64  the turn's work must be estimated to end by then
//     busy_until_ns    u64  estimated end of all admitted work on the GPU (all slices)
//     last_sweep_ns    u64  last dead-process sweep
//     repairs          u64  times a lock holder died and the region was repaired
//     reclaimed        u64  process records freed from dead processes
//     turns            u64  turns granted
//     preemptions      u64  turns ended early for a waiter of a higher class
//     next_seq         u64  admission number of the next launch
//   ArbiterSlice[kMaxArbiterSlices] (offset 4096, 512 bytes each) — one per slice on this GPU
//     key              u64  identity of the slice (hash of its accounting region path); 0 free
//     name[64]         char display name (the slice directory's name)
//     config           ArbiterSliceConfig (below), fixed by the first process that joins
//     members          i32  live process records of this slice
//     waiters          i32  gate threads of this slice waiting for a turn
//     credit_g_ns      i64  guarantee credit: +guarantee% of elapsed time, -device time used,
//                          kept within [-burst_g, +burst_g]
//     credit_m_ns      i64  maximum credit (token bucket of the cap): +max% of elapsed time (at
//                          most burst_m), -device time used; the slice may start work only
//                          while it is positive
//     vtime            i64  weighted virtual time: device time used * kWeightScale / weight
//     accrued_at_ns    u64  credits are accrued up to this instant
//     last_launch_ns   u64  last admitted launch
//     last_demand_ns   u64  last time a gate of the slice asked for the GPU
//     busy_until_ns    u64  estimated end of the slice's admitted work
//     used_ns          u64  device time charged in total (estimates corrected by measurement)
//     measured_ns      u64  device time measured at completion (part of used_ns)
//     kernels          u64  launches admitted
//     held_ns          u64  total time gates of the slice waited for the GPU
//     turns            u64  turns granted to the slice
//     preempted        u64  turns the slice lost early to a higher class
//     joined_unix_ns   u64  when the record was created (informational)
//     usage[16]        {u64 index, u64 ns}: device time charged per 100 ms (index = t / 100 ms)
//     last_seq         u64  admission number of the slice's last launch (1.1; 0: unknown)
//     idle_gap_ns      u64  learnt time from the slice's queue running dry to its next launch
//                          (1.1; arbiter_policy.h, "Arrival pattern")
//     gvtime           i64  guaranteed virtual time: device time used * kWeightScale /
//                          guarantee (1.1): slices below their guarantees share by guarantee
//     next_estimate_us u32  estimate of the launch the slice's gates wait with, µs (1.1)
//     idle_gaps        u32  gaps learnt so far (saturates; 1.1)
//   ArbiterProc[kMaxArbiterProcs] (offset 4096 + 512 * 64, 64 bytes each)
//     pid              i32  process id in its pid namespace; 0 = free
//     slice            i32  its slice record
//     start_time       u64  /proc/<pid>/stat field 22 (pid reuse guard)
//     pid_ns           u64  pid namespace inode
//     waiters          i32  threads of this process waiting for a turn
//     reserved         u32
//     joined_ns        u64  CLOCK_MONOTONIC of the join
//   LaunchRecord[kLaunchRecords] (after the process records, 64 bytes each): the last admitted
//     launches in admission order (= the GPU's queue order, see arbiter_policy.h), slot
//     seq % kLaunchRecords: seq, the slice's key and records, flags (ended, measured),
//     launch time, estimate, end on the GPU, measured device time.
//
// Crash safety: as the accounting region (region.h). The mutex is robust; a holder that dies
// leaves EOWNERDEAD and the next locker repairs (recounts members and waiters from the process
// records, frees records of dead processes and slices without members, drops a turn whose owner
// is gone). Dead processes that did not hold the lock are found by a sweep (kill(pid, 0) and the
// start time) run by waiting gates at most every kArbiterSweepIntervalNs. A turn is time-bounded
// (turn_end_ns), so even an undetected dead owner never holds the GPU longer than one turn.
//
// Dependency-free (libc, the C++ standard library headers and common/thread_annotations.h's
// macros), exception- and allocation-free: libvgpu.so uses it inside the user's process.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "shm/priority.h"
#include "shm/region.h"

namespace vgpu::shm {

inline constexpr uint64_t kArbiterMagic = 0x5442524155504756ULL;  // "VGPUARBT" little-endian
inline constexpr uint32_t kArbiterMajor = 1;
inline constexpr uint32_t kArbiterMinor = 1;
inline constexpr int kMaxArbiterSlices = 64;
inline constexpr int kMaxArbiterProcs = 256;
inline constexpr int kUsageBuckets = 16;
inline constexpr uint64_t kUsageBucketNs = 100ULL * 1000 * 1000;  // 100 ms
inline constexpr int64_t kWeightScale = 1024;
inline constexpr uint64_t kArbiterSweepIntervalNs = 100ULL * 1000 * 1000;

enum ComputeMode : uint32_t {
  kModeCapped = 0,   // never above max; the guarantee is the max
  kModeElastic = 1,  // guarantee reserved; idle GPU time used up to max
};

inline constexpr uint64_t kDefaultTimeSliceNs = 5ULL * 1000 * 1000;  // 5 ms
inline constexpr uint64_t kMinTimeSliceNs = 500ULL * 1000;           // 0.5 ms
inline constexpr uint64_t kMaxTimeSliceNs = 1000ULL * 1000 * 1000;   // 1 s
inline constexpr uint32_t kMaxWeight = 10000;
inline constexpr uint32_t kMaxLatencySlackUs = 1000 * 1000;  // 1 s

// A slice's compute settings on one GPU.
struct ArbiterSliceConfig {
  uint32_t guarantee_pct;  // 0..100; in capped mode max_pct (0 when max_pct is 100)
  uint32_t max_pct;        // 1..100
  uint32_t weight;         // 1..kMaxWeight, share of spare time among slices of equal rank
  int32_t level;           // PriorityLevel
  uint32_t mode;           // ComputeMode
  // How much later a launch of this slice may start than it would alone because less important
  // slices use the GPU's idle time between its launches (arbiter_policy.h, "Priorities").
  // Microseconds, 0..kMaxLatencySlackUs; 0 (the default, and in 1.0 files) = none.
  uint32_t latency_slack_us;
  uint64_t time_slice_ns;  // length of this slice's turns (and of its queue-ahead bound)
};
static_assert(sizeof(ArbiterSliceConfig) == 32);

struct UsageBucket {
  uint64_t index;
  uint64_t ns;
};

struct ArbiterHeader {
  uint64_t magic;
  uint32_t major;
  uint32_t minor;
  uint32_t region_size;
  uint32_t max_slices;
  uint32_t max_procs;
  uint32_t state;
  int32_t creator_pid;
  int32_t last_proc;
  uint64_t created_unix_ns;
  char uuid[kUuidLength];
  MutexCell mutex;
  alignas(64) uint32_t generation;
  uint32_t sleepers;
  int32_t owner;
  uint32_t turn_launches;
  uint64_t turn_epoch;
  uint64_t turn_start_ns;
  uint64_t turn_end_ns;
  uint64_t busy_until_ns;
  uint64_t last_sweep_ns;
  uint64_t repairs;
  uint64_t reclaimed;
  uint64_t turns;
  uint64_t preemptions;
  uint64_t next_seq;
  uint8_t spare[4096 - 288];
};

struct alignas(64) ArbiterSlice {
  uint64_t key;
  char name[64];
  ArbiterSliceConfig config;
  int32_t members;
  int32_t waiters;
  int64_t credit_g_ns;
  int64_t credit_m_ns;
  int64_t vtime;
  uint64_t accrued_at_ns;
  uint64_t last_launch_ns;
  uint64_t last_demand_ns;
  uint64_t busy_until_ns;
  uint64_t used_ns;
  uint64_t measured_ns;
  uint64_t kernels;
  uint64_t held_ns;
  uint64_t turns;
  uint64_t preempted;
  uint64_t joined_unix_ns;
  UsageBucket usage[kUsageBuckets];
  uint64_t last_seq;
  uint64_t idle_gap_ns;
  int64_t gvtime;
  uint32_t next_estimate_us;
  uint32_t idle_gaps;
};

struct alignas(64) ArbiterProc {
  int32_t pid;
  int32_t slice;
  uint64_t start_time;
  uint64_t pid_ns;
  int32_t waiters;
  uint32_t reserved;
  uint64_t joined_ns;
  uint8_t spare[64 - 40];
};

// One admitted launch in the GPU's queue order (see arbiter_policy.h, "Measurement").
struct alignas(64) LaunchRecord {
  uint64_t seq;  // admission number; the record is valid when it equals its slot's seq
  uint64_t key;  // the slice's key (its record may have been reused)
  int32_t slice;
  int32_t proc;
  uint32_t flags;  // kLaunchEnded, kLaunchMeasured
  uint32_t reserved;
  uint64_t launch_ns;    // when it reached the driver
  uint64_t estimate_ns;  // charged on admission
  uint64_t end_ns;       // when it ended on the GPU (kLaunchEnded)
  uint64_t duration_ns;  // its device time (kLaunchMeasured)
};
inline constexpr uint32_t kLaunchEnded = 1;
inline constexpr uint32_t kLaunchMeasured = 2;
inline constexpr int kLaunchRecords = 4096;

struct Arbiter {
  ArbiterHeader header;
  ArbiterSlice slices[kMaxArbiterSlices];
  ArbiterProc procs[kMaxArbiterProcs];
  LaunchRecord launches[kLaunchRecords];
};

static_assert(offsetof(ArbiterHeader, uuid) == 48);
static_assert(offsetof(ArbiterHeader, mutex) == 128);
static_assert(offsetof(ArbiterHeader, generation) == 192);
static_assert(offsetof(ArbiterHeader, owner) == 200);
static_assert(offsetof(ArbiterHeader, turn_epoch) == 208);
static_assert(offsetof(ArbiterHeader, busy_until_ns) == 232);
static_assert(offsetof(ArbiterHeader, preemptions) == 272);
static_assert(sizeof(ArbiterHeader) == 4096);
static_assert(offsetof(ArbiterSlice, config) == 72);
static_assert(offsetof(ArbiterSlice, members) == 104);
static_assert(offsetof(ArbiterSlice, credit_g_ns) == 112);
static_assert(offsetof(ArbiterSlice, used_ns) == 168);
static_assert(offsetof(ArbiterSlice, usage) == 224);
static_assert(offsetof(ArbiterSlice, last_seq) == 480);
static_assert(offsetof(ArbiterSlice, idle_gap_ns) == 488);
static_assert(offsetof(ArbiterSlice, gvtime) == 496);
static_assert(offsetof(ArbiterSlice, next_estimate_us) == 504);
static_assert(offsetof(ArbiterSlice, idle_gaps) == 508);
static_assert(offsetof(ArbiterSliceConfig, latency_slack_us) == 20);
static_assert(sizeof(ArbiterSlice) == 512);
static_assert(offsetof(ArbiterProc, waiters) == 24);
static_assert(sizeof(ArbiterProc) == 64);
static_assert(offsetof(Arbiter, slices) == 4096);
static_assert(offsetof(Arbiter, procs) == 4096 + 512 * kMaxArbiterSlices);
static_assert(offsetof(ArbiterHeader, next_seq) == 280);
static_assert(sizeof(LaunchRecord) == 64);
static_assert(offsetof(Arbiter, launches) ==
              4096 + 512 * kMaxArbiterSlices + 64 * kMaxArbiterProcs);
static_assert(sizeof(Arbiter) ==
              4096 + 512 * kMaxArbiterSlices + 64 * kMaxArbiterProcs + 64 * kLaunchRecords);

// Racy-but-atomic accessors for readers outside the lock.
inline int32_t LoadI32(const int32_t& field) {
  return std::atomic_ref<int32_t>(const_cast<int32_t&>(field)).load(std::memory_order_acquire);
}
inline void StoreI32(int32_t& field, int32_t value) {
  std::atomic_ref<int32_t>(field).store(value, std::memory_order_release);
}
inline int64_t LoadI64(const int64_t& field) {
  return std::atomic_ref<int64_t>(const_cast<int64_t&>(field)).load(std::memory_order_acquire);
}
inline void StoreI64(int64_t& field, int64_t value) {
  std::atomic_ref<int64_t>(field).store(value, std::memory_order_release);
}

// Checks a mapped arbiter of `size` bytes (magic, version, sizes, state, value ranges). Never
// writes. Errors are those of the accounting region.
RegionError ValidateArbiter(const Arbiter* arbiter, size_t size);

// Fills an empty arbiter in place: header, robust mutex (process-shared unless
// `process_shared` is false: the private fallback), owner -1, state ready (last).
void InitializeArbiter(Arbiter* arbiter, const char* uuid, bool process_shared);

// True when `config` is within the documented ranges.
bool ValidSliceConfig(const ArbiterSliceConfig& config);

// Device time charged to `slice` within [now - window, now), from its usage buckets (window of
// at most (kUsageBuckets - 1) buckets; whole buckets only). Lock-free reader.
uint64_t SliceUsageInWindow(const ArbiterSlice& slice, uint64_t now_ns, uint64_t window_ns);

}  // namespace vgpu::shm
