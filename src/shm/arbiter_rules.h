// The arbiter's ranking and holding rules (arbiter_policy.h states them): who may own the next
// turn, who is held by a more important slice, how long a slice's claim lasts after its queue ran
// dry, and the arrival pattern learnt from each slice's launches. Pure functions of the shared
// state and `now`; internal to src/shm. Every function REQUIRES the arbiter lock (or a private
// copy of the arbiter).
#pragma once

#include <cstdint>

#include "shm/arbiter.h"

namespace vgpu::shm::internal {

inline constexpr uint64_t kMinDemandGraceNs = 200ULL * 1000;  // 0.2 ms
inline constexpr uint64_t kMaxIdleGapNs = 1000ULL * 1000 * 1000;
// A launch asked for with the slice's work still queued, sooner after its last admission than
// half the launch's estimate (and at least this), continues a burst (launch, launch, ...,
// synchronize): it is not an arrival to learn from. A slice that keeps kernels in flight asks
// when one of them ends, about a kernel after its last admission.
inline constexpr uint64_t kFollowUpNs = 50ULL * 1000;
// A slice with no gate waiting that has launched nothing for this long is pausing: it waits for
// its work (a synchronization) or works on the host, rather than still launching a burst.
inline constexpr uint64_t kPauseNs = 100ULL * 1000;
// A slice handed a turn while its gate sleeps keeps it only this long after the GPU runs free
// without its launch: a late wake-up does not leave the GPU idle while another slice asks.
inline constexpr uint64_t kHandOverGraceNs = 100ULL * 1000;

inline uint64_t Min(uint64_t a, uint64_t b) { return a < b ? a : b; }
inline uint64_t Max(uint64_t a, uint64_t b) { return a > b ? a : b; }

// The slice's time slice (the default when unset).
uint64_t TimeSlice(const ArbiterSlice& s);
// How long a slice keeps its claim after its queued work ran dry: a tenth of its time slice, at
// least kMinDemandGraceNs (0.5 ms with the default 5 ms time slice).
uint64_t DemandGrace(const ArbiterSlice& s);
bool InUse(const ArbiterSlice& s);
// 2: realtime; 1: below its guarantee; 0: the rest.
int Tier(const ArbiterSlice& s);
// Larger is more important: tier first, then the priority level.
int Class(const ArbiterSlice& s);
// Not over its cap (its max credit is positive, or it has no cap).
bool CapOk(const ArbiterSlice& s);
// Would `x` be chosen before `y` (class, then the smaller weighted virtual time)?
bool Outranks(const ArbiterSlice& x, const ArbiterSlice& y);
// The estimated end of the slice's admitted work (or its last launch, if later).
uint64_t QueueEnd(const ArbiterSlice& s);
// When the slice's claim lapses: the end of its queue plus its learnt gap (its expected return)
// plus DemandGrace(). A slice that comes back by then keeps its claim on the GPU.
uint64_t ClaimEnd(const ArbiterSlice& s);
// True while the slice has launched and now < ClaimEnd().
bool Claiming(const ArbiterSlice& s, uint64_t now);
// No gate of the slice waits, and its queue ran dry or it has launched nothing for kPauseNs.
bool Pausing(const ArbiterSlice& s, uint64_t now);
// True if slice `claimant`, which has no gate waiting, keeps the GPU from the waiting slice
// `waiter` of the same priority level, whose launch is estimated at `estimate_ns` (0: unknown):
// while its claim lasts, unless the waiter outranks it and it is pausing with its queue dry (or
// with a learnt gap: it is synchronizing), or the waiter's launch, queued behind all admitted
// work, ends before the claimant is expected back (it costs the claimant nothing).
bool ClaimHolds(const Arbiter* a, int claimant, int waiter, uint64_t now, uint64_t estimate_ns);

// True if a more important slice holds the launch of slice `index` with estimate `estimate_ns`
// that would start on the GPU at max(now, the GPU's busy-until) (0: no estimate, fits no gap);
// *lapse is lowered to when the answer may change without a generation change.
bool Held(const Arbiter* a, int index, uint64_t now, uint64_t estimate_ns, uint64_t* lapse);
// May own the next turn: in use, within its cap, not held, and waiting or claiming.
bool Candidate(const Arbiter* a, int index, uint64_t now);
// A candidate with a gate waiting now.
bool Eligible(const Arbiter* a, int index, uint64_t now);
// The candidate that should own the next turn (other than `exclude`), or -1.
int Best(const Arbiter* a, uint64_t now, int exclude);
// A waiting, eligible slice of a higher class than `index`?
bool HigherWaiting(const Arbiter* a, int index, uint64_t now);
// Whether some slice other than `index` has a gate waiting, or (*claiming) claims the GPU.
bool OtherWaiting(const Arbiter* a, int index, uint64_t now, bool* claiming);

// A gate of `s` asks for the GPU while none of its gates waits: learn the gap from the end of its
// queue to now (0 when work is still queued; nothing for a follow-up launch of a burst, see
// kFollowUpNs) into s->idle_gap_ns (rules in arbiter_rules.cc).
void LearnArrival(ArbiterSlice* s, uint64_t now, uint64_t estimate_ns);

}  // namespace vgpu::shm::internal
