// State of the compute gate (gate.h), shared by gate.cc (admission) and gate_tracking.cc
// (contexts, events, completion). Internal to libvgpu.
#pragma once

#include <pthread.h>

#include <cstdint>

#include "intercept/gate/gate.h"
#include "intercept/gate/kernel_estimates.h"
#include "shm/arbiter.h"
#include "shm/proc_identity.h"

namespace vgpu::intercept::gate {

inline constexpr int kMaxContexts = 8;
inline constexpr int kRingSize = 1024;   // tracked launches per context
inline constexpr int kLearnSize = 1024;  // completed launches waiting for their measurement
inline constexpr uint64_t kRefRefreshNs = 5ULL * 1000 * 1000 * 1000;
inline constexpr uint64_t kRefTightNs = 50ULL * 1000;  // accept a reference within this

// One tracked launch.
struct Inflight {
  CUevent event;
  CUstream stream;
  uint64_t key;
  uint64_t family;
  uint64_t seq;  // the arbiter's admission number
  bool per_thread;
  bool known;  // the estimate came from a measurement of this site (or its family)
  int device;
};

// A completed launch whose device time the arbiter will tell (shm::LaunchDuration).
struct Learning {
  uint64_t seq;
  uint64_t key;
  uint64_t family;
  int device;
};

// Per CUDA context: its event pool, reference event and tracked launches.
struct ContextGate {
  CUcontext context;  // nullptr: unused
  int device;
  bool broken;  // could not set up events: launches pass ungated
  CUstream private_stream;
  CUevent ref_event;
  uint64_t ref_host_ns;
  uint64_t ref_taken_ns;
  uint64_t ref_error_ns;
  CUevent pool[kRingSize];
  int pool_count;
  Inflight ring[kRingSize];
  uint32_t head;  // oldest
  uint32_t tail;  // next free
  int unmeasured_inflight;
  Learning learn[kLearnSize];
  uint32_t learn_head;
  uint32_t learn_tail;
};

// Per device: this process's membership in the device's arbiter.
struct DeviceGate {
  shm::Arbiter* arbiter;  // nullptr: not joined yet
  int slice;
  int proc;
  bool failed;           // joining failed for good: pass ungated
  bool private_arbiter;  // the arbiter file could not be used
  uint64_t key;          // the slice's key in the arbiter
  bool own_slice;        // the key is this slice's own region (not a parent's)
  uint64_t resize_seq;   // the region's resize seq last applied to the arbiter (gate_resize.cc)
};

// REQUIRES the gate mutex, `dg` joined. When the slice's region was resized live since this
// process last looked (shm/region_resize.h), sets the slice's share in the arbiter to the compute
// limit in force (bounded by the daemon's quarantine cap). One relaxed load when nothing changed.
void ApplyResizeLocked(DeviceGate* dg, int device);

struct State {
  pthread_mutex_t mutex;
  ContextGate contexts[kMaxContexts];
  DeviceGate devices[shm::kMaxDevices];
  KernelEstimates estimates;
  shm::ProcIdentity identity;
  bool identity_valid;
  GateStats stats;
};

State& S();

// REQUIRE S().mutex. The context gate for the current context (set up on first use), or nullptr.
ContextGate* ContextFor(CUcontext context, int device);
// Polls the context's oldest launches, measuring the completed ones.
void PollLocked(ContextGate* cg);
// Starts tracking an admitted launch that reached the driver.
void TrackLocked(ContextGate* cg, const LaunchSite& site, const Inflight& entry);
// True when the ring has no room (the caller waits for the oldest launch first).
bool RingFull(const ContextGate* cg);
// The oldest tracked launch's event (ring not empty).
CUevent OldestEvent(const ContextGate* cg);
// The event of the oldest launch whose site was never measured, or nullptr.
CUevent OldestUnmeasured(const ContextGate* cg);

// Runs the gate's own driver calls in the relaxed capture mode for its lifetime.
class RelaxedCapture {
 public:
  RelaxedCapture();
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  int saved_;
  bool active_;
};

uint64_t NowNs();

}  // namespace vgpu::intercept::gate
