// The compute gate's admission path (see gate.h): joining the GPU's arbiter and waiting for the
// slice's turn.
#include "intercept/gate/gate.h"

#include "intercept/telemetry.h"

#include <cstring>

#include "common/log.h"
#include "intercept/gate/gate_internal.h"
#include "intercept/hooks/hook_util.h"
#include "intercept/memory/spill.h"
#include "intercept/telemetry.h"
#include "shm/arbiter_file.h"
#include "shm/arbiter_policy.h"

namespace vgpu::intercept {
namespace gate {
namespace {

// A slice that spills now (spill.h) runs kernels that may wait on host pages far longer than any
// measurement of them says: its launches are estimated at no less than its time slice, so that
// it fills only gaps of a whole time slice in more important slices' work and a turn of its
// admits one such kernel at a time.
uint64_t SpillEstimate(uint64_t estimate_ns) {
  Runtime& rt = GetRuntime();
  if (!SliceSpills(rt.config)) return estimate_ns;
  shm::Region* r = rt.accountant.region();
  if (r == nullptr || shm::LoadU64(r->header.spill.spilled_bytes) == 0) return estimate_ns;
  uint64_t floor = rt.config.time_slice_ns;
  return estimate_ns > floor ? estimate_ns : floor;
}

State g_state = {PTHREAD_MUTEX_INITIALIZER, {}, {}, {}, {}, false, {}};
// Used when a GPU's arbiter file cannot be used: the slice's own limits still hold for this
// process. In .bss, touched only when needed.
shm::Arbiter g_private_arbiters[shm::kMaxDevices];

class Locked {
 public:
  Locked() { pthread_mutex_lock(&g_state.mutex); }
  ~Locked() { pthread_mutex_unlock(&g_state.mutex); }
  Locked(const Locked&) = delete;
  Locked& operator=(const Locked&) = delete;
};

const shm::ProcIdentity& Identity() {
  if (!g_state.identity_valid) {
    g_state.identity = shm::CurrentProcIdentity();
    g_state.identity_valid = true;
  }
  return g_state.identity;
}

// "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" of `device`, or false.
bool DeviceUuid(int device, char* out, size_t size) {
  CUuuid uuid;
  if (g_cuda.cuDeviceGetUuid == nullptr || size < 41 ||
      g_cuda.cuDeviceGetUuid(&uuid, device) != CUDA_SUCCESS) {
    return false;
  }
  static const char kHex[] = "0123456789abcdef";
  std::memcpy(out, "GPU-", 4);
  int pos = 4;
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out[pos++] = '-';
    unsigned char b = static_cast<unsigned char>(uuid.bytes[i]);
    out[pos++] = kHex[b >> 4];
    out[pos++] = kHex[b & 15];
  }
  out[pos] = '\0';
  return true;
}

// The slice's display name: the directory holding its region, else the region file's name.
void SliceName(const char* region_path, char* out, size_t size) {
  const char* end = region_path + std::strlen(region_path);
  const char* slash = std::strrchr(region_path, '/');
  const char* start = region_path;
  if (slash != nullptr && slash > region_path) {
    const char* parent = slash;
    const char* p = slash - 1;
    while (p > region_path && *p != '/') --p;
    start = *p == '/' ? p + 1 : p;
    end = parent;
  } else if (slash != nullptr) {
    start = slash + 1;
  }
  size_t n = static_cast<size_t>(end - start);
  if (n >= size) n = size - 1;
  std::memcpy(out, start, n);
  out[n] = '\0';
}

shm::ArbiterSliceConfig SliceConfig(const Config& c, int device) {
  shm::ArbiterSliceConfig a{};
  a.max_pct = c.sm_limit[device] == 0 ? 100 : c.sm_limit[device];
  a.guarantee_pct = c.guarantee[device] > a.max_pct ? a.max_pct : c.guarantee[device];
  a.weight = c.weight == 0 ? 1 : c.weight;
  a.level = c.priority;
  a.mode = c.compute_mode;
  a.time_slice_ns = c.time_slice_ns;
  uint64_t slack_us = c.latency_slack_ns / 1000;
  a.latency_slack_us = static_cast<uint32_t>(
      slack_us > shm::kMaxLatencySlackUs ? shm::kMaxLatencySlackUs : slack_us);
  return a;
}

// REQUIRES the gate mutex. Joins the arbiter of `device` on first use.
DeviceGate* DeviceFor(int device) {
  DeviceGate& dg = g_state.devices[device];
  if (dg.arbiter != nullptr) return &dg;
  if (dg.failed) return nullptr;
  const Config& config = GetRuntime().config;
  // A nested slice sharing its parent's compute arbitrates as the parent (accountant.h).
  const char* slice_path = GetRuntime().accountant.arbiter_slice_path();
  const char* region = slice_path[0] != '\0' ? slice_path : "vgpu-process";
  char uuid[64] = "";
  char path[kPathMax + 64] = "";
  shm::Arbiter* arbiter = nullptr;
  bool shared = false;
  if (DeviceUuid(device, uuid, sizeof(uuid)) &&
      shm::ArbiterPath(config.arbiter_dir, uuid, path, sizeof(path))) {
    shm::ArbiterMapping mapping;
    shm::RegionError e = shm::ArbiterMapping::OpenOrCreate(path, uuid, &mapping);
    if (e == shm::RegionError::kOk) {
      arbiter = mapping.Detach();
      shared = true;
    } else {
      VGPU_LOG_WARN(
          "cannot use the compute arbiter %s (%s%s%s); the slice's compute limits hold "
          "for this process alone",
          path, shm::RegionErrorText(e), e == shm::RegionError::kIo ? ": " : "",
          e == shm::RegionError::kIo ? std::strerror(mapping.saved_errno()) : "");
    }
  } else {
    VGPU_LOG_WARN(
        "no arbiter for device %d (UUID unknown or arbiter directory unusable); its "
        "compute limits hold for this process alone",
        device);
  }
  if (arbiter == nullptr) {
    arbiter = &g_private_arbiters[device];
    shm::InitializeArbiter(arbiter, uuid, false);
  }
  char name[64];
  SliceName(region, name, sizeof(name));
  int slice = -1, proc = -1;
  shm::RegionError e =
      shm::JoinArbiter(arbiter, shm::SliceKey(region), name, SliceConfig(config, device),
                       Identity(), NowNs(), &slice, &proc);
  if (e != shm::RegionError::kOk) {
    VGPU_LOG_ERROR("cannot join the compute arbiter of device %d (%s); its launches are not gated",
                   device, shm::RegionErrorText(e));
    dg.failed = true;
    return nullptr;
  }
  dg.arbiter = arbiter;
  dg.slice = slice;
  dg.proc = proc;
  dg.private_arbiter = !shared;
  dg.key = shm::SliceKey(region);
  const char* own = GetRuntime().config.region_path;
  dg.own_slice = slice_path[0] != '\0' && std::strcmp(slice_path, own) == 0;
  dg.resize_seq = 0;
  return &dg;
}

// The real launch, run by the arbiter on admission (under its lock).
struct Submit {
  RealLaunch launch;
  void* args;
  uint64_t t_ns;  // when it was called
  static int Run(void* p) {
    auto* s = static_cast<Submit*>(p);
    s->t_ns = NowNs();
    return static_cast<int>(s->launch(s->args));
  }
};

bool Capturing(const LaunchSite& site) {
  auto fn = site.per_thread && g_cuda.cuStreamIsCapturing_ptsz != nullptr
                ? g_cuda.cuStreamIsCapturing_ptsz
                : g_cuda.cuStreamIsCapturing;
  if (fn == nullptr) return false;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return fn(site.stream, &status) == CUDA_SUCCESS && status != CU_STREAM_CAPTURE_STATUS_NONE;
}

// Waits (without the gate mutex) for `event`, then re-polls. REQUIRES the mutex; returns with it.
void WaitForEvent(CUcontext context, int device, CUevent event) {
  pthread_mutex_unlock(&g_state.mutex);
  {
    RelaxedCapture relaxed;
    g_cuda.cuEventSynchronize(event);
  }
  pthread_mutex_lock(&g_state.mutex);
  if (ContextGate* cg = ContextFor(context, device)) PollLocked(cg);
}

}  // namespace

State& S() { return g_state; }

}  // namespace gate

using namespace gate;

CUresult GatedLaunch(const LaunchSite& site, RealLaunch launch, void* args) {
  DeviceContext dc;
  if (!CurrentDeviceContext(&dc) || dc.device >= shm::kMaxDevices || Capturing(site)) {
    __atomic_add_fetch(&g_state.stats.passed, 1, __ATOMIC_RELAXED);
    return launch(args);
  }
  pthread_mutex_lock(&g_state.mutex);
  shm::AdmitDecision d;
  KernelEstimates::Estimate estimate;
  DeviceGate* dg = nullptr;
  {
    ContextGate* cg = ContextFor(dc.context, dc.device);
    dg = cg != nullptr ? DeviceFor(dc.device) : nullptr;
    if (dg == nullptr) {
      __atomic_add_fetch(&g_state.stats.passed, 1, __ATOMIC_RELAXED);
      pthread_mutex_unlock(&g_state.mutex);
      return launch(args);
    }
    PollLocked(cg);
    const uint64_t t_enter = NowNs();
    bool waited_for_room = false;
    // Room in the ring, and at most one launch of a never-measured site in flight.
    estimate = g_state.estimates.Get(site.key, site.family);
    for (int i = 0; i < 64; ++i) {
      cg = ContextFor(dc.context, dc.device);
      if (cg == nullptr) break;
      CUevent wait_for = nullptr;
      if (RingFull(cg)) {
        wait_for = OldestEvent(cg);
      } else if (!estimate.known) {
        wait_for = OldestUnmeasured(cg);
      }
      if (wait_for == nullptr) break;
      waited_for_room = true;
      WaitForEvent(dc.context, dc.device, wait_for);
      estimate = g_state.estimates.Get(site.key, site.family);
    }
    const shm::ProcIdentity& self = Identity();
    uint64_t t_call = NowNs();
    Submit submit{launch, args, 0};
    bool waiting = false;
    bool held = false;
    for (;;) {
      ApplyResizeLocked(dg, dc.device);
      shm::AdmitRequest req;
      req.slice = dg->slice;
      req.proc = dg->proc;
      req.now_ns = NowNs();
      req.estimate_ns = SpillEstimate(estimate.ns);
      req.held_ns = req.now_ns - t_call;
      req.waiting = waiting;
      req.submit = submit.Run;
      req.submit_arg = &submit;
      submit.t_ns = NowNs();
      d = shm::TryAdmit(dg->arbiter, req, self);
      // Waking a peer may hand it this CPU: an admitted launch reaches the driver first.
      if (d.wake && !d.admitted) shm::WakeArbiter(dg->arbiter);
      if (d.status == shm::RegionError::kNoSlot && !waiting) {
        // Our records were reclaimed (a peer took us for dead): join again.
        dg->arbiter = nullptr;
        dg = DeviceFor(dc.device);
        if (dg == nullptr) break;
        continue;
      }
      if (d.status != shm::RegionError::kOk) {
        static bool warned = false;
        if (!warned) {
          warned = true;
          VGPU_LOG_WARN("compute arbiter unavailable (%s): launches pass ungated",
                        shm::RegionErrorText(d.status));
        }
        break;
      }
      if (d.submitted) break;  // admitted and launched (or refused by the driver)
      waiting = true;
      held = true;
      shm::Arbiter* arbiter = dg->arbiter;
      pthread_mutex_unlock(&g_state.mutex);
      shm::MaybeSweepArbiter(arbiter, self, NowNs());
      shm::WaitArbiter(arbiter, d.generation, d.retry_at_ns);
      pthread_mutex_lock(&g_state.mutex);
      if (ContextGate* again = ContextFor(dc.context, dc.device)) PollLocked(again);
    }
    if (dg == nullptr || !d.submitted) {
      // Giving up (the arbiter could not be locked, or our records are gone): stop counting as
      // waiting, or the slice would look busy to the others.
      if (waiting && dg != nullptr && dg->arbiter != nullptr) {
        shm::CancelWait(dg->arbiter, dg->slice, dg->proc, 0, 0, self, NowNs());
      }
      __atomic_add_fetch(&g_state.stats.passed, 1, __ATOMIC_RELAXED);
      pthread_mutex_unlock(&g_state.mutex);
      return launch(args);
    }
    __atomic_add_fetch(&g_state.stats.admitted, 1, __ATOMIC_RELAXED);
    if (held) __atomic_add_fetch(&g_state.stats.held, 1, __ATOMIC_RELAXED);
    // Time held at the gate (telemetry.h): waiting for the turn or for room in the ring.
    if (held || waited_for_room) CountAdd(Counters()->gate_wait_ns, submit.t_ns - t_enter);
    // The slice's last launch (telemetry.h), kept in its region after the process exits.
    if (d.submit_rc == CUDA_SUCCESS) NoteGatedLaunch(submit.t_ns);
  }
  // The launch already ran under the arbiter's lock (submit).
  CUresult rc = static_cast<CUresult>(d.submit_rc);
  if (d.wake) shm::WakeArbiter(dg->arbiter);
  {
    ContextGate* cg = ContextFor(dc.context, dc.device);
    if (rc == CUDA_SUCCESS && cg != nullptr) {
      Inflight entry{};
      entry.key = site.key;
      entry.family = site.family;
      entry.seq = d.seq;
      entry.stream = site.stream;
      entry.per_thread = site.per_thread;
      entry.known = estimate.known;
      entry.device = dc.device;
      TrackLocked(cg, site, entry);
    }
  }
  pthread_mutex_unlock(&g_state.mutex);
  return rc;
}

void GateAfterSynchronize() {
  DeviceContext dc;
  if (!CurrentDeviceContext(&dc) || dc.device >= shm::kMaxDevices) return;
  Locked lock;
  for (ContextGate& cg : g_state.contexts) {
    if (cg.context != dc.context) continue;
    for (int i = 0; i < kRingSize / 64 && cg.head != cg.tail; ++i) PollLocked(&cg);
    PollLocked(&cg);  // the measurements learned last
  }
}

void GateForgetContext(CUcontext context) {
  if (context == nullptr) return;
  Locked lock;
  for (ContextGate& cg : g_state.contexts) {
    if (cg.context != context) continue;
    // Its events die with it; their launches keep their estimated charge.
    cg.context = nullptr;
    cg.head = cg.tail = 0;
    cg.pool_count = 0;
    cg.unmeasured_inflight = 0;
  }
}

void GateAtExit() {
  // Another thread may be inside a launch (the driver can block); the others then sweep this
  // process's records when it is gone, so exit does not wait.
  if (pthread_mutex_trylock(&g_state.mutex) != 0) return;
  for (int d = 0; d < shm::kMaxDevices; ++d) {
    DeviceGate& dg = g_state.devices[d];
    if (dg.arbiter == nullptr) continue;
    uint64_t now = NowNs();
    const shm::ProcIdentity& self = Identity();
    if (shm::LeaveArbiter(dg.arbiter, dg.slice, dg.proc, self, now)) {
      shm::WakeArbiter(dg.arbiter);
    }
    dg.arbiter = nullptr;
  }
  pthread_mutex_unlock(&g_state.mutex);
}

void GateResetInChild() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&g_state.mutex, &fresh, sizeof(fresh));
  for (ContextGate& cg : g_state.contexts) {
    cg.context = nullptr;
    cg.head = cg.tail = 0;
    cg.pool_count = 0;
  }
  for (DeviceGate& dg : g_state.devices) {
    dg.arbiter = nullptr;
    dg.failed = false;
  }
  g_state.identity_valid = false;
  g_state.stats = GateStats{};
}

GateStats GetGateStats() {
  GateStats s;
  s.admitted = __atomic_load_n(&g_state.stats.admitted, __ATOMIC_RELAXED);
  s.held = __atomic_load_n(&g_state.stats.held, __ATOMIC_RELAXED);
  s.passed = __atomic_load_n(&g_state.stats.passed, __ATOMIC_RELAXED);
  Locked lock;
  s.completed = g_state.stats.completed;
  s.measured = g_state.stats.measured;
  s.measured_ns = g_state.stats.measured_ns;
  return s;
}

}  // namespace vgpu::intercept
