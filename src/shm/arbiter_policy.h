// The compute arbiter's protocol: who may put work on a GPU now. Every launch gate of every
// slice on the GPU calls TryAdmit() before it lets a launch reach the driver; the decision is made
// under the arbiter's robust mutex from the shared state alone, so there is no daemon to wait for
// and no single process whose death stops the others.
//
// Model. Kernels of different processes take turns on a GPU without MPS, so what a slice can be
// given is a share of the GPU's time. The arbiter gives out *turns*: one slice at a time owns the
// GPU and may queue work whose estimated end lies within its turn (turn length = the slice's
// time slice, 5 ms by default) and at most one time slice ahead of now (the first launch of a
// turn excepted: it may queue behind the previous owner's work). Launches are asynchronous, so
// the arbiter models the GPU's queue: each admitted launch moves the GPU's estimated busy-until
// forward by its estimated duration (learnt by the gate, intercept/gate/gate.h) and is charged that
// estimate; the charge is corrected when the launch's real device time is known (Measurement).
// When an admitted launch uses up its slice's turn (or cap) and another slice waits, the turn is
// handed over at once, so the next owner queues its work while the last one's still runs.
//
// Who gets the next turn (rank, highest first), among slices that are not over their cap (max
// credit positive), not held by priority, and have a waiting gate or still *claim* the GPU (work
// queued, or their queue ran dry less than a grace ago: a tenth of their time slice, at least
// 0.2 ms; a tenant with few kernels in flight comes back within it):
//   1. tier: realtime slices; then slices below their guarantee (guarantee credit positive);
//      then the rest;
//   2. priority level (realtime, high, normal, low, idle);
//   3. among slices below their guarantees, the smallest guaranteed virtual time (device time
//      used / guarantee); otherwise the smallest weighted virtual time (used / weight).
// Priorities conserve work (arbiter_rules.h): a launch of a slice is held while a slice of a more
// important level has a waiting gate, or is between launches and expected back (end of its
// queue + its learnt gap) before the launch would end, plus that slice's latency slack. Once the
// more important slice is later than twice its gap, one kernel at a time may run on an idle GPU;
// after 20 of its time slices (or 4 gaps) it holds nothing; a waiting slice that is itself held
// holds nothing of its own. A claim without a waiting gate competes with slices of its own level
// only. A slice below its guarantee is held by realtime slices only. A waiting slice of a higher
// tier or level than the owner, or a more important slice expected back before the owner's next
// launch would end, ends the owner's turn at once (preemption at the next kernel boundary; its
// queued work, at most one time slice, still runs). A turn also ends when its work reaches the
// turn's end, when the owner's cap credit runs out, when the owner's claim lapses (a grace after
// its queue ran dry), when a less important slice's launch fits in the gap of an owner with no gate
// waiting, or when its processes are gone. The turn is handed over at admission when the launch
// uses the turn up, or when the owner's queue had run dry (one kernel in flight: turns a kernel at
// a time) and another ranks first, or when a less important slice's launch fits before the owner is
// expected back.
//
// Credits. guarantee credit += guarantee% of elapsed time, max credit += max% of elapsed time,
// both -= device time charged, accrued only while the slice has work (an idle slice hoards
// nothing); each is capped at a burst of its share of max(20 time slices, 100 ms) (room to catch
// up after a late wake-up); the guarantee credit is also floored at minus that burst (a slice that
// borrowed idle time gives it back at once instead of paying off a debt). Capped slices have
// guarantee = max (none when the max is 100). Slices start with no credit.
//
// Measurement. The arbiter runs the admitted launch (AdmitRequest::submit) while it holds its
// lock, so launches reach the GPU in admission order, and it numbers them (LaunchRecord). A GPU
// without MPS runs the queued work of all processes in that order, so a launch started when it
// was launched or when its predecessor in that order ended, whichever is later:
//     device time = end - max(launch, end of the previous admitted launch).
// Each process reports the ends of its own launches (from events, ReportEnds); when both ends of
// a pair are known the arbiter computes the device time, corrects the slice's charge by
// (device time - estimate) and keeps the device time for the launching process to learn from
// (LaunchDuration). Exact on the simulated GPU; on a real one, errors in docs/compute.md.
//
// All functions take the arbiter lock themselves and never block on anything but that lock;
// `now` is passed in, so tests drive them with a synthetic clock. No allocation, no exceptions.
#pragma once

#include <cstdint>

#include "shm/arbiter.h"
#include "shm/proc_identity.h"

namespace vgpu::shm {

// Holds the arbiter mutex; repairs the arbiter when the previous holder died.
class ArbiterLock {
 public:
  ArbiterLock(Arbiter* arbiter, const ProcIdentity& self, int timeout_ms);
  ~ArbiterLock();
  ArbiterLock(const ArbiterLock&) = delete;
  ArbiterLock& operator=(const ArbiterLock&) = delete;
  bool held() const { return status_ == RegionError::kOk; }
  RegionError status() const { return status_; }

 private:
  Arbiter* arbiter_;
  RegionError status_ = RegionError::kLockBroken;
};

// Joins the slice `key` (creating its record with `config` and `name` if it has none) with a
// process record for `self`. A record already holding `self` (an exec'd image) is reused.
// kNoSlot when all records are taken by live processes.
RegionError JoinArbiter(Arbiter* arbiter, uint64_t key, const char* name,
                        const ArbiterSliceConfig& config, const ProcIdentity& self, uint64_t now_ns,
                        int* slice, int* proc);

// Frees the process record (and the slice record when it was the last member); ends the turn if
// the slice held it and has no member left. Returns true if waiters should be woken.
bool LeaveArbiter(Arbiter* arbiter, int slice, int proc, const ProcIdentity& self, uint64_t now_ns);

struct AdmitRequest {
  int slice = -1;
  int proc = -1;
  uint64_t now_ns = 0;
  uint64_t estimate_ns = 0;   // estimated device time of the launch
  int64_t correction_ns = 0;  // measured minus charged device time of completed work
  uint64_t measured_ns = 0;   // measured device time of completed work (statistics)
  uint64_t held_ns = 0;       // on admission: how long this launch waited (statistics)
  bool waiting = false;       // this thread is registered as waiting (an earlier call said so)
  // Called on admission with the lock held (the real launch); a non-zero result means the
  // driver refused the launch: it is not charged.
  int (*submit)(void* arg) = nullptr;
  void* submit_arg = nullptr;
};

struct AdmitDecision {
  RegionError status = RegionError::kOk;  // kNoSlot: the records are gone (join again)
  bool admitted = false;
  bool waiting = false;      // the thread is now registered as waiting
  bool wake = false;         // the caller should wake sleeping gates (WakeArbiter)
  uint64_t start_ns = 0;     // admitted: estimated device start of the launch
  uint64_t seq = 0;          // admitted: its admission number (LaunchRecord)
  uint64_t turn_epoch = 0;   // admitted: the turn it was admitted in
  uint64_t retry_at_ns = 0;  // not admitted: ask again no later than this
  uint32_t generation = 0;   // not admitted: value to sleep on (WaitArbiter)
  bool submitted = false;    // `submit` ran
  int submit_rc = 0;         // and returned this
};

// Decides whether the launch may go to the driver now. On admission the estimate is charged to
// the slice and the GPU's busy-until is moved forward. Otherwise the thread is registered as
// waiting and should sleep until retry_at_ns or a generation change, then ask again with
// `waiting` set (or call CancelWait).
AdmitDecision TryAdmit(Arbiter* arbiter, const AdmitRequest& request, const ProcIdentity& self);

// Reports the ends (host clock) of launches `seqs` of this process; computes what can now be
// measured and corrects the charges.
void ReportEnds(Arbiter* arbiter, int slice, int proc, const uint64_t* seqs, const uint64_t* ends,
                int count, const ProcIdentity& self, uint64_t now_ns);

// The measured device time of launch `seq`, once known (lock-free). False while its end or its
// predecessor's end is missing, or when the record has been reused.
bool LaunchDuration(const Arbiter* arbiter, uint64_t seq, uint64_t* duration_ns);

// The thread stops waiting without launching; `correction_ns` is applied as in TryAdmit.
void CancelWait(Arbiter* arbiter, int slice, int proc, int64_t correction_ns, uint64_t measured_ns,
                const ProcIdentity& self, uint64_t now_ns);

// Applies a correction (measured minus charged device time) outside a launch.
void ApplyCorrection(Arbiter* arbiter, int slice, int proc, int64_t correction_ns,
                     uint64_t measured_ns, const ProcIdentity& self, uint64_t now_ns);

// Frees the records of dead processes (same pid namespace only) and of slices left without
// members. Returns true if waiters should be woken. System calls: kill(2) and /proc reads.
bool SweepArbiter(Arbiter* arbiter, const ProcIdentity& self, uint64_t now_ns);

// SweepArbiter if the last sweep is older than kArbiterSweepIntervalNs (one sweeper at a time).
bool MaybeSweepArbiter(Arbiter* arbiter, const ProcIdentity& self, uint64_t now_ns);

// Sleeps until `generation` differs from `seen` or CLOCK_MONOTONIC reaches `until_ns` (futex on
// the shared mapping). Returns at once if the generation already moved.
void WaitArbiter(Arbiter* arbiter, uint32_t seen, uint64_t until_ns);
// Wakes every sleeping gate.
void WakeArbiter(Arbiter* arbiter);

// Key of a slice: FNV-1a of its accounting region path (never 0).
uint64_t SliceKey(const char* region_path);

// --- Exposed for tests and observers (REQUIRE the lock, or a private copy) ---

// Brings the slice's credits up to `now_ns`.
void AccrueCredits(ArbiterSlice* slice, uint64_t now_ns);
// The burst (cap of each credit) of a slice for a share of `pct` percent.
int64_t CreditBurst(const ArbiterSliceConfig& config, uint32_t pct);
// True if the slice has work for the purpose of holding lower priorities.
bool SliceActive(const ArbiterSlice& slice, uint64_t now_ns);

}  // namespace vgpu::shm
