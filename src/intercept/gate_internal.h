// State of the compute gate (gate.h), shared by gate.cc (admission) and gate_tracking.cc
// (contexts, events, completion). Internal to libvgpu.
#pragma once

#include <pthread.h>

#include <cstdint>

#include "intercept/gate.h"
#include "intercept/kernel_estimates.h"
#include "shm/arbiter.h"
#include "shm/proc_identity.h"

namespace vgpu::intercept::gate {

inline constexpr int kMaxContexts = 8;
inline constexpr int kRingSize = 1024;  // tracked launches per context
inline constexpr int kStreamEnds = 16;  // streams whose last completion is remembered
inline constexpr uint64_t kRefRefreshNs = 5ULL * 1000 * 1000 * 1000;
inline constexpr uint64_t kRefTightNs = 50ULL * 1000;  // accept a reference within this

// One tracked launch.
struct Inflight {
  CUevent event;
  CUstream stream;
  uint64_t key;
  uint64_t launch_ns;    // host time of admission
  uint64_t estimate_ns;  // charged at admission
  uint64_t start_ns;     // estimated device start at admission
  bool per_thread;
  bool known;  // the estimate came from a measurement of this site
  int device;
};

struct StreamEnd {
  CUstream stream;
  bool per_thread;
  uint64_t end_ns;
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
  StreamEnd ends[kStreamEnds];
  int next_end;
};

// Per device: this process's membership in the device's arbiter.
struct DeviceGate {
  shm::Arbiter* arbiter;  // nullptr: not joined yet
  int slice;
  int proc;
  bool failed;            // joining failed for good: pass ungated
  bool private_arbiter;   // the arbiter file could not be used
  int64_t correction_ns;  // measured - charged, not yet reported
  uint64_t measured_ns;
};

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
