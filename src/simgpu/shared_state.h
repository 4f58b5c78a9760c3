// The simulated GPU's state shared by every process that uses it: device memory in use, the
// processes on each device, and the kernel timeline (see timeline.h). It lives in a file in
// /dev/shm that all processes map, so several processes use one simulated GPU and NVML sees them.
//
// Layout: a fixed-size POD (SharedStateLayout), versioned by kStateMajor/kStateMinor. A process
// that finds another major version, a foreign magic, a different size or a file made for another
// device configuration refuses it with a message; it never reinterprets it.
//
// Locking: one PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST mutex guards everything. A process
// that dies holding it (SIGKILL) leaves it EOWNERDEAD; the next locker makes it consistent and
// repairs derived fields (Repair), so a killed process never wedges the device.
//
// Dead processes: their records are reclaimed (memory returned to the device) when a scan finds
// them gone, by kill(pid, 0) plus the process start time (which detects a reused pid). Scans run
// when a process registers, when an allocation would not fit, and at most every kReclaimPeriodNs
// when NVML or cuMemGetInfo read usage.
//
// Thread safety: SharedState is safe to use from many threads; every method that reads or writes
// the layout must be called with a Lock held (they say so).
#pragma once

#include <pthread.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>

#include "common/result.h"
#include "simgpu/config.h"

namespace vgpu::simgpu {

inline constexpr char kStateMagic[8] = {'V', 'G', 'S', 'I', 'M', 'G', 'P', 'U'};
inline constexpr uint32_t kStateMajor = 2;
inline constexpr uint32_t kStateMinor = 2;
inline constexpr int kMaxProcesses = 64;
// MIG GPU instances, over all devices. Device record kMaxDevices + i belongs to instance slot i,
// so an instance has its own memory and kernel timeline (see mig_state.h).
inline constexpr int kMaxMigInstances = 48;
inline constexpr int kMaxRecords = kMaxDevices + kMaxMigInstances;
inline constexpr int kMaxComputeInstances = 8;             // per GPU instance
inline constexpr int kUtilBuckets = 512;                   // utilization history: 512 x 10 ms
inline constexpr uint64_t kUtilBucketNs = 10'000'000;      // 10 ms
inline constexpr int kPendingCapacity = 4096;              // queued kernels per device
inline constexpr uint64_t kReclaimPeriodNs = 100'000'000;  // 100 ms

// Busy time of one 10 ms slice of the timeline; `index` is start_ns / kUtilBucketNs.
struct UtilBucket {
  uint64_t index;
  uint64_t busy_ns;
};

// A kernel on the device timeline that has not yet been counted into the buckets in full.
struct PendingKernel {
  uint64_t start_ns;
  uint64_t end_ns;
  uint32_t process_slot;
  uint32_t process_generation;
};

struct DeviceRecord {
  uint64_t total_bytes;       // physical memory of the device
  uint64_t used_bytes;        // sum of ProcessRecord::used_bytes[this device]
  uint64_t busy_until_ns;     // end of the last kernel queued (CLOCK_MONOTONIC)
  uint64_t settled_until_ns;  // buckets hold all busy time before this instant
  uint64_t kernels_total;     // kernels ever queued
  uint64_t busy_total_ns;     // kernel time ever queued
  uint64_t pending_head;      // pending[head % cap] is the oldest unsettled kernel
  uint64_t pending_tail;      // next free entry; tail - head = queued kernels
  PendingKernel pending[kPendingCapacity];
  UtilBucket buckets[kUtilBuckets];
  // (minor 1) The copy engines of the host link, one queue per direction (0 host-to-device,
  // 1 device-to-host; timeline.h EnqueueCopy).
  uint64_t copy_busy_until_ns[2];  // end of the last copy queued in each direction
  uint64_t copy_bytes_total[2];    // bytes ever copied in each direction
  uint64_t copy_busy_total_ns[2];  // copy time ever queued in each direction
};

struct ProcessRecord {
  int32_t pid;                       // 0: free slot
  uint32_t generation;               // incremented when the slot is freed
  uint64_t start_time;               // /proc/<pid>/stat field 22; 0 if unknown
  uint64_t used_bytes[kMaxRecords];  // device memory this process holds, per device record
  uint32_t contexts[kMaxRecords];    // live contexts on each device record
  uint64_t busy_ns[kMaxRecords];     // kernel time queued by this process
  uint64_t wait_ns[kMaxRecords];     // launch-to-start waits of its kernels
  uint64_t kernels[kMaxRecords];     // kernels queued
};

// A compute instance inside a GPU instance. Its placement counts compute slices of the GI.
struct MigComputeRecord {
  uint32_t used;        // 0: free
  uint32_t id;          // compute instance id within the GPU instance
  uint32_t profile_id;  // NVML compute instance profile id
  uint32_t start;
  uint32_t size;
  uint32_t sm_count;
  uint32_t generation;  // incremented on create and destroy: older handles are stale
  uint32_t reserved;
};

// A GPU instance: whole memory slices [start, start + size) of device `parent`.
struct MigGpuInstanceRecord {
  uint32_t used;  // 0: free
  uint32_t parent;
  uint32_t id;          // GPU instance id (a function of the placement, as NVML's look)
  uint32_t profile_id;  // NVML GPU instance profile id
  uint32_t start;
  uint32_t size;
  uint32_t sm_slices;   // compute slices of the profile
  uint32_t generation;  // incremented on create and destroy: older handles are stale
  uint64_t memory_bytes;
  uint32_t sm_count;
  uint32_t reserved;
  MigComputeRecord cis[kMaxComputeInstances];
  char profile_name[32];  // "1g.18gb"
};

// MIG mode of one configured device (NVML_DEVICE_MIG_ENABLE / _DISABLE).
struct MigDeviceState {
  uint32_t current;
  uint32_t pending;
  uint32_t compute_mode;  // nvmlComputeMode_t
  uint32_t reserved;
};

// (minor 1) Stuck kernels (timeline.h, "Stuck kernels"): an injected kernel that does not end
// until it is cleared. Episode k's stuck kernel ends at StuckEnd(k), a time far beyond any clock
// reading; work queued behind it gets times beyond that. Clearing episode k at C records C here
// and maps every time t of episode k to C + (t - StuckEnd(k)).
inline constexpr int kStuckRing = 16;  // clear times kept for the last 16 episodes
struct StuckClear {
  uint64_t episode;  // 0: unused
  uint64_t cleared_ns;
};
struct StuckState {
  uint64_t episodes;               // episodes ever begun (the next is episodes + 1)
  StuckClear cleared[kStuckRing];  // by episode % kStuckRing
  // Per device record: the pid whose next kernel sticks (-1 any process, 0 not armed), the
  // episode stuck on it now (0 none), and its stuck kernel's start and process.
  int32_t armed_pid[kMaxRecords];
  int32_t stuck_pid[kMaxRecords];
  uint64_t active_episode[kMaxRecords];
  uint64_t stuck_since_ns[kMaxRecords];
};

struct StateHeader {
  char magic[8];
  uint32_t major;
  uint32_t minor;
  uint64_t total_size;   // sizeof(SharedStateLayout)
  uint64_t config_hash;  // Config::Hash() of the creator
  uint32_t device_count;
  uint32_t reserved0;
  uint64_t last_reclaim_ns;  // CLOCK_MONOTONIC of the last dead-process scan
  uint64_t reserved1[2];
  alignas(64) pthread_mutex_t mutex;
};

struct SharedStateLayout {
  StateHeader header;
  DeviceRecord devices[kMaxRecords];  // configured devices first, then MIG instance slots
  ProcessRecord processes[kMaxProcesses];
  MigDeviceState mig[kMaxDevices];
  MigGpuInstanceRecord mig_instances[kMaxMigInstances];
  UtilBucket process_buckets[kMaxRecords][kMaxProcesses][kUtilBuckets];
  StuckState stuck;  // (minor 1)
  // (minor 2) Managed memory (driver/managed.cc): bytes of each process's managed pages now
  // resident on each device record. Not part of used_bytes: device allocations do not see them
  // (on a real GPU the driver evicts managed pages to make room), and each process keeps its own
  // resident pages within what the device's allocations and the others' resident pages leave.
  uint64_t managed_resident[kMaxProcesses][kMaxRecords];
  // (minor 2) Bytes managed-memory faults ever moved to each device record over the host link
  // (NVML's PCIe receive throughput counts them with host-to-device copies).
  uint64_t managed_link_bytes[kMaxRecords];
};

static_assert(sizeof(PendingKernel) == 24);
static_assert(sizeof(UtilBucket) == 16);
static_assert(offsetof(StateHeader, mutex) == 64);
static_assert(sizeof(DeviceRecord) == 64 + 24 * kPendingCapacity + 16 * kUtilBuckets + 48);
static_assert(sizeof(ProcessRecord) == 16 + 8 * kMaxRecords * 4 + 4 * kMaxRecords);
static_assert(sizeof(MigComputeRecord) == 32);
static_assert(sizeof(MigGpuInstanceRecord) == 48 + 32 * kMaxComputeInstances + 32);
static_assert(sizeof(StuckState) == 8 + 16 * kStuckRing + 24 * kMaxRecords);
static_assert(std::is_trivially_copyable_v<SharedStateLayout>);

// The slot of process `pid`, or -1 (read with the lock held, or accept a racy answer).
int FindProcessSlot(const SharedStateLayout* layout, int32_t pid);

// CLOCK_MONOTONIC in nanoseconds (the timeline's clock, common to all processes of the machine).
uint64_t MonotonicNs();

class SharedState {
 public:
  // Holds the state's mutex; repairs the state if its previous owner died while holding it.
  class Lock {
   public:
    explicit Lock(SharedState* state);
    ~Lock();
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

   private:
    SharedState* state_;
  };

  // Maps the state file at `path`, creating it for `config` if it does not exist.
  static Result<std::unique_ptr<SharedState>> Open(const Config& config, const std::string& path);
  // VGPU_SIMGPU_STATE if set, else /dev/shm/vgpu-simgpu-<major>.<minor>-<config hash in hex>.
  static std::string DefaultPath(const Config& config);

  ~SharedState();
  SharedState(const SharedState&) = delete;
  SharedState& operator=(const SharedState&) = delete;

  SharedStateLayout* layout() { return layout_; }
  const std::string& path() const { return path_; }
  int device_count() const { return static_cast<int>(layout_->header.device_count); }

  // --- All below: the Lock must be held. ---

  // Returns this pid's slot, taking a free one (after reclaiming dead processes) if it has none.
  Result<int> RegisterProcess(int32_t pid);
  // Frees a slot and returns its memory to the devices.
  void ReleaseProcess(int slot);
  // Frees the slots of processes that no longer exist. Returns how many were freed.
  int ReclaimDead();
  // ReclaimDead() if the last scan is older than kReclaimPeriodNs.
  void MaybeReclaim(uint64_t now_ns);

  // Takes `bytes` of device memory for `slot`; false (and nothing taken) if it does not fit even
  // after reclaiming dead processes.
  bool TryReserve(int slot, int device, uint64_t bytes);
  // Gives back `bytes` (never more than the slot holds).
  void Release(int slot, int device, uint64_t bytes);

  // Bytes of managed pages resident on `device`, of every process (`except_slot` < 0) or of
  // every process but `except_slot`.
  uint64_t ManagedResident(int device, int except_slot = -1) const;

  // Recomputes derived fields after a holder of the lock died.
  void Repair();

 private:
  SharedState(SharedStateLayout* layout, std::string path);
  SharedStateLayout* layout_;
  std::string path_;
};

// True if `pid` runs (exists and is not a zombie) and, when start_time is not 0, started at
// `start_time` (so a reused pid is not taken for the old process).
bool ProcessAlive(int32_t pid, uint64_t start_time);
// Field 22 of /proc/<pid>/stat (start time in clock ticks since boot), or 0.
uint64_t ProcessStartTime(int32_t pid);

}  // namespace vgpu::simgpu
