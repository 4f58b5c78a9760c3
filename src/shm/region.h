// The slice accounting region: one fixed-size file, mapped MAP_SHARED by every process of one
// slice (one container, or one `vgpu run`), that holds the slice's limits and what each process
// has charged against them. libvgpu.so writes it; `vgpu top` and the node daemon read it.
//
// Layout (version 1.x). All integers are little-endian host order; the region never crosses
// machines. Offsets are static_assert'ed below and never change within a major version: a minor
// version may only give meaning to bytes that are spare (zero) in older minors.
//
//   RegionHeader   (offset 0, 4096 bytes)
//     magic            u64  kRegionMagic ("VGPUSLCE"); anything else: not a region
//     major, minor     u32  kRegionMajor / kRegionMinor; a reader refuses another major
//     region_size      u32  sizeof(Region); a reader refuses a different size
//     max_procs        u32  kMaxProcs (slots in the table below)
//     state            u32  0 empty, 1 being initialised, 2 ready (written last, release order)
//     creator_pid      i32  pid of the process that initialised the region (informational)
//     created_unix_ns  u64  wall-clock creation time (informational)
//     config           RegionConfig, immutable once state is ready:
//       device_count     u32  devices configured (1..kMaxDevices)
//       priority         i32  priority level of the slice: 0 realtime, 1 high, 2 normal, 3 low,
//                            4 idle (shm/arbiter.h; minor 0 wrote HAMi's 0 high, 1 low)
//       memory_limit[16] u64  bytes per CUDA device index; kNoLimit when unlimited
//       sm_limit[16]     u32  percent of the device's compute per index; 0 or 100: none
//     config_checksum  u64  FNV-1a of `config`; a mismatch means the region is corrupted
//     mutex            pthread_mutex_t (PTHREAD_PROCESS_SHARED | PTHREAD_MUTEX_ROBUST) in a
//                      64-byte cell; guards every write below
//     device_used[16]  u64  bytes charged per device, the sum of the live slots' used[]
//     last_sweep_ns    u64  CLOCK_MONOTONIC time of the last dead-process sweep
//     repairs          u64  times a holder died with the mutex and the region was repaired
//     reclaimed        u64  slots reclaimed from dead processes
//     uuid[16][48]     char device UUIDs as seen by the processes ("GPU-..."), for display
//     parent[512]      char (minor 2) path of the parent slice's region, NUL-terminated; "" for
//                      none. A nested slice: every charge is made in this region and in each
//                      region up the chain of parents (each under its own limit)
//     parent_flags     u32  (minor 2) kParentCompute: the slice's processes take part in compute
//                      arbitration as members of the parent slice (within the parent's share)
//     reserved         u32  zero
//     parent_checksum  u64  (minor 2) FNV-1a of parent[] and parent_flags; written with them,
//                      before any process joins; a mismatch means the region is corrupted
//     spare0               zero (1768..1791)
//     copy             CopyQosState (minor 3, offsets 1792..2303): the slice's copy-bandwidth
//                      token buckets, one per direction (0 host-to-device, 1 device-to-host),
//                      written lock-free with atomics (intercept/gate/copy_pacer.h):
//       tat_ns           u64  theoretical arrival time of the bucket (GCRA): the CLOCK_MONOTONIC
//                             instant at which everything paced so far has been paid for
//       paced_bytes      u64  bytes that went through the bucket
//       paced_chunks     u64  chunks that went through the bucket
//       wait_ns          u64  time callers slept for tokens
//       borrowed_bytes   u64  bytes sent beyond the cap while no other slice copied
//                             (work conservation)
//       calls            u64  copy calls in this direction (paced or not)
//       rate             u64  the cap in bytes/s of the last process that paced (display)
//       reserved         u64  zero
//     copy.unpaced_graph_copies  u64  memcpy nodes in graphs instantiated by the slice (graph
//                             launches are not paced)
//     copy.peer_bytes    u64  bytes of peer (device-to-device across GPUs) copies, not paced
//     control          TenantControl (minor 3, offset 2304, 64 bytes): the node daemon's
//                      quarantine of the slice (node/faults/tenant_levels.h); atomics only, no
//                      lock, zero in older minors (= no quarantine):
//       pause_until_ns   u64  CLOCK_MONOTONIC deadline: launches are held at the gate until
//                             then (a lease the daemon renews; 0 = not paused)
//       level            u32  the slice's quarantine level (0 normal .. 4 terminate), for display
//       share_cap_pct    u32  compute share the daemon lowered the slice to (0 = not lowered)
//       launch_failures  u64  kernel launches the driver refused (libvgpu.so counts)
//       oom_refusals     u64  allocations refused over the memory limit (libvgpu.so counts)
//       held_launches    u64  launches that waited for a pause to end (libvgpu.so counts)
//     telemetry        SliceTelemetry (minor 4, 2368..2623): the slice's exact counters
//                      (intercept/telemetry.h writes, ReadSliceCounters() reads); zero in older
//                      minors (= nothing counted):
//       fold_seq         u64  even while stable; odd while a freed slot's counters are being
//                             folded into `folded` (a seqlock for lock-free readers)
//       flags            u32  kTelemetryCounting: a libvgpu.so that counts has joined the slice
//       slots_hint       u32  one past the highest slot index ever claimed (under mutex);
//                             readers scan slots [0, slots_hint) only; 0 = unknown: scan all
//       folded           ProcCounters (88 bytes): the counters of processes whose slots were
//                             freed (exit, reclaim, repair), plus what processes counted while
//                             they held no slot. Slice total = folded + the live slots' counters
//       peak_used[16]    u64  the highest device_used[] ever reached, per device (under mutex)
//       last_kernel_ns   u64  (minor 5) the latest last_kernel_ns of the slots freed so far, and
//                             of processes that launched while they held no slot: with the live
//                             slots', the slice's last gated kernel launch; 0 = none (or a
//                             library of an older minor)
//       spare                 zero (2608..2623)
//     resize           ResizeControl (minor 4, offsets 2624..2879): live overrides of the
//                      immutable config, written by `vgpu resize` and the node daemon
//                      (shm/region_resize.h) under `mutex` as a seqlock; libvgpu.so reads them
//                      lock-free on its charge and compute-gate paths. All zero in older minors
//                      (= no override, the config holds):
//       seq              u64  even: stable; odd: being written; 0 = never resized
//       updated_unix_ns  u64  wall-clock time of the last resize (informational)
//       memory_limit[16] u64  bytes per device index replacing config.memory_limit; 0 = no
//                             override; kNoLimit = unlimited
//       sm_limit[16]     u32  percent 1..100 replacing config.sm_limit; 0 = no override
//       checksum         u64  FNV-1a of seq, memory_limit[], sm_limit[] and priority; a
//                             mismatch makes readers fall back to the config (fail closed to
//                             the original)
//       resizes          u32  resizes applied (informational)
//       priority         u32  priority level + 1 replacing config.priority at the compute gate
//                             (1 realtime .. 5 idle); 0 = no override
//       reserved             zero (2848..2879)
//     spill            SpillState (minor 4, offsets 2880..3007): memory spill of the slice
//                      (docs/oversubscription.md); atomics only, zero in older minors (= no spill):
//       mode             u32  the slice's memory mode as libvgpu.so runs it (0 strict,
//                             1 overcommit, 2 spill; intercept/config/config.h MemoryMode)
//       protected_slice  u32  1: the slice's priority keeps its memory on the GPU (never spilled)
//       spilled_bytes    u64  bytes of allocations now served from managed memory (all devices)
//       spilled_peak     u64  the largest spilled_bytes seen
//       spill_allocs     u64  allocations ever served from managed memory
//       gpu_refusals     u64  allocations within the limit that the GPU could not hold and the
//                             slice could not spill (a real out-of-memory error)
//       device_spilled[8] u64 spilled_bytes per device index 0..7 (higher indices: only the total)
//       throttled_ns     u64  the node daemon's thrash control: CLOCK_MONOTONIC instant until
//                             which the slice is throttled for thrashing (display; the throttle
//                             itself is control.share_cap_pct / pause_until_ns)
//       reserved[2]      u64  zero
//     probe_area (minor 4, 3008..3071): reserved for the fault probe; zero = unused
//     spare                 zero (3072..4095)
//   ProcSlot[kMaxProcs] (offset 4096, 256 bytes each)
//     pid            i32  process id in its pid namespace; 0 = free slot
//     flags          u32  reserved
//     start_time     u64  the process's start time (/proc/<pid>/stat field 22): guards against
//                         pid reuse
//     pid_ns         u64  inode of the process's pid namespace (/proc/self/ns/pid)
//     used[16]       u64  bytes this process has charged per device
//     last_kernel_ns u64  (minor 5) CLOCK_MONOTONIC time of the process's last gated kernel
//                         launch (the compute gate writes it, relaxed atomics; 0 = none); the
//                         latest is kept in telemetry.last_kernel_ns when the slot is freed
//     counters       ProcCounters (minor 4, offset 160, 88 bytes): what this process counted,
//                    written by it alone with relaxed atomics (no lock); folded into
//                    telemetry.folded when the slot is freed, so no count is lost:
//       launches        u64  kernel launches the driver accepted (graphs not included)
//       graph_launches  u64  graph launches the driver accepted
//       copy_bytes[4]   u64  bytes of copies the driver accepted, by kind: 0 host-to-device,
//                            1 device-to-host, 2 device-to-device (same GPU), 3 peer
//       allocations     u64  device memory allocations made (charged and accepted)
//       frees           u64  of those, freed
//       gate_wait_ns    u64  time launches waited at the compute gate for their turn
//       pause_wait_ns   u64  time launches waited for a quarantine pause to end
//       busy_ns         u64  device time of the process's gated launches, as measured
//     spare               zero (248..255)
//
// Concurrency: every write happens under `mutex`, so charges are atomic across processes: two
// processes can never together pass the limit. Readers (cuMemGetInfo, NVML, top) read
// device_used[] and slots without the lock through atomic loads.
//
// Crash safety: the mutex is robust. When a holder dies, the next locker gets EOWNERDEAD and
// repairs: device_used[] is recomputed from the slots, dead processes' slots are freed, and the
// mutex is made consistent. Slots of processes that died without holding the lock are freed by
// SweepDeadSlots(), which runs when a charge does not fit and at most every
// kSweepIntervalNs when the region is polled.
//
// This header is dependency-free (libc and the C++ standard headers only), exception-free and
// allocation-free: libvgpu.so uses it inside the user's process.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace vgpu::shm {

inline constexpr uint64_t kRegionMagic = 0x45434c5355504756ULL;  // "VGPUSLCE" little-endian
inline constexpr uint32_t kRegionMajor = 1;
inline constexpr uint32_t kRegionMinor = 5;
inline constexpr int kMaxDevices = 16;
inline constexpr int kMaxProcs = 1024;
inline constexpr uint64_t kNoLimit = ~0ULL;
inline constexpr int kUuidLength = 48;
inline constexpr int kRegionPathMax = 512;
// A nested slice is at most this many levels below its outermost slice.
inline constexpr int kMaxParents = 4;
// parent_flags.
inline constexpr uint32_t kParentCompute = 1;
// A region polled by readers is swept for dead processes at most this often.
inline constexpr uint64_t kSweepIntervalNs = 200ULL * 1000 * 1000;

enum RegionState : uint32_t { kStateEmpty = 0, kStateInitializing = 1, kStateReady = 2 };

struct RegionConfig {
  uint32_t device_count;
  int32_t priority;
  uint64_t memory_limit[kMaxDevices];
  uint32_t sm_limit[kMaxDevices];
};
static_assert(sizeof(RegionConfig) == 200);

struct alignas(64) MutexCell {
  union {
    pthread_mutex_t mutex;
    char bytes[64];
  };
};
static_assert(sizeof(pthread_mutex_t) <= 64);

struct CopyDirState {
  uint64_t tat_ns;
  uint64_t paced_bytes;
  uint64_t paced_chunks;
  uint64_t wait_ns;
  uint64_t borrowed_bytes;
  uint64_t calls;
  uint64_t rate;
  uint64_t reserved;
};

struct CopyQosState {
  CopyDirState dir[2];
  uint64_t unpaced_graph_copies;
  uint64_t peer_bytes;
  uint8_t spare[512 - 144];
};
static_assert(sizeof(CopyQosState) == 512);

struct TenantControl {
  uint64_t pause_until_ns;
  uint32_t level;
  uint32_t share_cap_pct;
  uint64_t launch_failures;
  uint64_t oom_refusals;
  uint64_t held_launches;
  uint8_t reserved[24];
};
static_assert(sizeof(TenantControl) == 64);

// Per-process counters (minor 4); see the layout comment.
struct ProcCounters {
  uint64_t launches;
  uint64_t graph_launches;
  uint64_t copy_bytes[4];
  uint64_t allocations;
  uint64_t frees;
  uint64_t gate_wait_ns;
  uint64_t pause_wait_ns;
  uint64_t busy_ns;
};
static_assert(sizeof(ProcCounters) == 88);

inline constexpr int kCopyKindHostToDevice = 0;
inline constexpr int kCopyKindDeviceToHost = 1;
inline constexpr int kCopyKindDeviceToDevice = 2;
inline constexpr int kCopyKindPeer = 3;
inline constexpr int kCopyKinds = 4;

// SliceTelemetry.flags.
inline constexpr uint32_t kTelemetryCounting = 1;

struct SliceTelemetry {
  uint64_t fold_seq;
  uint32_t flags;
  uint32_t slots_hint;
  ProcCounters folded;
  uint64_t peak_used[kMaxDevices];
  uint64_t last_kernel_ns;  // minor 5
  uint8_t spare[256 - 240];
};
static_assert(sizeof(SliceTelemetry) == 256);

struct ResizeControl {
  uint64_t seq;
  uint64_t updated_unix_ns;
  uint64_t memory_limit[kMaxDevices];
  uint32_t sm_limit[kMaxDevices];
  uint64_t checksum;
  uint32_t resizes;
  uint32_t priority;
  uint8_t reserved[256 - 224];
};
static_assert(sizeof(ResizeControl) == 256);
static_assert(offsetof(ResizeControl, memory_limit) == 16);
static_assert(offsetof(ResizeControl, sm_limit) == 144);
static_assert(offsetof(ResizeControl, checksum) == 208);
static_assert(offsetof(ResizeControl, resizes) == 216);
static_assert(offsetof(ResizeControl, priority) == 220);

inline constexpr int kSpillDevices = 8;

struct SpillState {
  uint32_t mode;
  uint32_t protected_slice;
  uint64_t spilled_bytes;
  uint64_t spilled_peak;
  uint64_t spill_allocs;
  uint64_t gpu_refusals;
  uint64_t device_spilled[kSpillDevices];
  uint64_t throttled_ns;
  uint64_t reserved[2];
};
static_assert(sizeof(SpillState) == 128);

struct RegionHeader {
  uint64_t magic;
  uint32_t major;
  uint32_t minor;
  uint32_t region_size;
  uint32_t max_procs;
  uint32_t state;
  int32_t creator_pid;
  uint64_t created_unix_ns;
  RegionConfig config;
  uint64_t config_checksum;
  MutexCell mutex;
  uint64_t device_used[kMaxDevices];
  uint64_t last_sweep_ns;
  uint64_t repairs;
  uint64_t reclaimed;
  char uuid[kMaxDevices][kUuidLength];
  char parent[kRegionPathMax];
  uint32_t parent_flags;
  uint32_t reserved;
  uint64_t parent_checksum;
  uint8_t spare0[1792 - 1768];
  CopyQosState copy;
  TenantControl control;
  SliceTelemetry telemetry;         // (minor 4) per-slice counters
  ResizeControl resize;             // (minor 4) live resize control
  SpillState spill;                 // (minor 4) memory spill state
  uint8_t probe_area[3072 - 3008];  // (minor 4) fault probe state
  uint8_t spare[4096 - 3072];
};

struct alignas(64) ProcSlot {
  int32_t pid;
  uint32_t flags;
  uint64_t start_time;
  uint64_t pid_ns;
  uint64_t used[kMaxDevices];
  uint64_t last_kernel_ns;
  ProcCounters counters;  // (minor 4)
  uint8_t spare[256 - 248];
};

struct Region {
  RegionHeader header;
  ProcSlot slots[kMaxProcs];
};

static_assert(offsetof(RegionHeader, magic) == 0);
static_assert(offsetof(RegionHeader, major) == 8);
static_assert(offsetof(RegionHeader, minor) == 12);
static_assert(offsetof(RegionHeader, region_size) == 16);
static_assert(offsetof(RegionHeader, max_procs) == 20);
static_assert(offsetof(RegionHeader, state) == 24);
static_assert(offsetof(RegionHeader, creator_pid) == 28);
static_assert(offsetof(RegionHeader, created_unix_ns) == 32);
static_assert(offsetof(RegionHeader, config) == 40);
static_assert(offsetof(RegionHeader, config_checksum) == 240);
static_assert(offsetof(RegionHeader, mutex) == 256);
static_assert(offsetof(RegionHeader, device_used) == 320);
static_assert(offsetof(RegionHeader, last_sweep_ns) == 448);
static_assert(offsetof(RegionHeader, repairs) == 456);
static_assert(offsetof(RegionHeader, reclaimed) == 464);
static_assert(offsetof(RegionHeader, uuid) == 472);
static_assert(offsetof(RegionHeader, parent) == 1240);
static_assert(offsetof(RegionHeader, parent_flags) == 1752);
static_assert(offsetof(RegionHeader, parent_checksum) == 1760);
static_assert(offsetof(RegionHeader, spare0) == 1768);
static_assert(offsetof(RegionHeader, copy) == 1792);
static_assert(offsetof(RegionHeader, control) == 2304);
static_assert(offsetof(RegionHeader, telemetry) == 2368);
static_assert(offsetof(RegionHeader, telemetry) + offsetof(SliceTelemetry, folded) == 2384);
static_assert(offsetof(RegionHeader, telemetry) + offsetof(SliceTelemetry, peak_used) == 2472);
static_assert(offsetof(RegionHeader, telemetry) + offsetof(SliceTelemetry, last_kernel_ns) == 2600);
static_assert(offsetof(RegionHeader, telemetry) + offsetof(SliceTelemetry, spare) == 2608);
static_assert(offsetof(RegionHeader, resize) == 2624);
static_assert(offsetof(RegionHeader, spill) == 2880);
static_assert(offsetof(SpillState, spilled_bytes) == 8);
static_assert(offsetof(SpillState, device_spilled) == 40);
static_assert(offsetof(SpillState, throttled_ns) == 104);
static_assert(offsetof(RegionHeader, probe_area) == 3008);
static_assert(offsetof(RegionHeader, spare) == 3072);
static_assert(offsetof(TenantControl, launch_failures) == 16);
static_assert(offsetof(TenantControl, held_launches) == 32);
static_assert(sizeof(RegionHeader) == 4096);
static_assert(offsetof(ProcSlot, pid) == 0);
static_assert(offsetof(ProcSlot, start_time) == 8);
static_assert(offsetof(ProcSlot, pid_ns) == 16);
static_assert(offsetof(ProcSlot, used) == 24);
static_assert(offsetof(ProcSlot, last_kernel_ns) == 152);
static_assert(offsetof(ProcSlot, counters) == 160);
static_assert(offsetof(ProcSlot, spare) == 248);
static_assert(sizeof(ProcSlot) == 256);
static_assert(offsetof(Region, slots) == 4096);
static_assert(sizeof(Region) == 4096 + 256 * kMaxProcs);
static_assert(std::atomic_ref<uint64_t>::is_always_lock_free);
static_assert(std::atomic_ref<int32_t>::is_always_lock_free);
static_assert(std::atomic_ref<uint32_t>::is_always_lock_free);

// Relaxed/acquire/release access to shared fields (the struct stays a plain POD).
inline uint64_t LoadU64(const uint64_t& field) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(field)).load(std::memory_order_acquire);
}
inline void StoreU64(uint64_t& field, uint64_t value) {
  std::atomic_ref<uint64_t>(field).store(value, std::memory_order_release);
}
inline uint32_t LoadU32(const uint32_t& field) {
  return std::atomic_ref<uint32_t>(const_cast<uint32_t&>(field)).load(std::memory_order_acquire);
}
inline int32_t LoadPid(const ProcSlot& slot) {
  return std::atomic_ref<int32_t>(const_cast<int32_t&>(slot.pid)).load(std::memory_order_acquire);
}
inline void StorePid(ProcSlot& slot, int32_t pid) {
  std::atomic_ref<int32_t>(slot.pid).store(pid, std::memory_order_release);
}

// Outcome of region operations. Text for people: RegionErrorText().
enum class RegionError {
  kOk,
  kIo,              // open/mmap/ftruncate failed (errno in the Mapping)
  kTooSmall,        // the file is shorter than a region
  kBadMagic,        // not a vgpu region
  kForeignVersion,  // another major version
  kBadSize,         // region_size or max_procs differ from this build
  kCorrupt,         // checksum mismatch or an impossible value
  kNotReady,        // initialisation never finished
  kLockTimeout,     // a live process held the lock past the deadline
  kLockBroken,      // the mutex is unrecoverable
  kNoSlot,          // all process slots are taken by live processes
  kOverLimit,       // the charge does not fit under the limit
};
const char* RegionErrorText(RegionError error);

// FNV-1a 64 of the config block.
uint64_t ConfigChecksum(const RegionConfig& config);

// Checks a mapped region of `size` bytes: magic, version, size, checksums, ready state and value
// ranges. Never writes. kOk means the region may be used.
RegionError ValidateRegion(const Region* region, size_t size);

// FNV-1a 64 of the parent link (parent[] and parent_flags).
uint64_t ParentChecksum(const RegionHeader& header);

// Links a freshly created region to its parent slice's region (`parent` at most
// kRegionPathMax - 1 bytes; `flags` kParentCompute or 0). Only for the creator, before any
// process uses the region. False when the path is too long.
bool SetRegionParent(Region* region, const char* parent, uint32_t flags);

// Fills an empty region in place (memory already zeroed or about to be overwritten): header,
// config and checksum, robust process-shared mutex, state = ready (last). `process_shared` false
// gives a mutex usable only inside this process (the fallback region).
void InitializeRegion(Region* region, const RegionConfig& config, bool process_shared);

}  // namespace vgpu::shm
