// Copy-bandwidth pacing of libvgpu.so: a slice's host-to-device and device-to-host copies draw
// tokens from the slice's token buckets (region.h CopyQosState, shared by all its processes)
// before each chunk of a copy is enqueued on the caller's own stream, so stream order is kept
// and the slice's rate over any window is its cap, within one burst.
//
// Bucket: a GCRA (generic cell rate algorithm) on one 64-bit word per direction, the theoretical
// arrival time `tat`. A chunk of n bytes costs n / cap seconds; at `now` it may go at
//   release = max(now, tat - burst)       and moves tat to   max(tat, now) + cost
// (one compare-and-swap; no lock). An idle bucket thus lets one burst through at once, and a
// busy one releases chunks at the cap. The caller sleeps until `release` (the copy APIs may
// block the calling thread: a synchronous copy does, and an asynchronous one with pageable
// memory does too).
//
// Work conservation (copy_borrow on): a chunk that would wait goes at once, without paying,
// while no other paced slice has copied in that direction recently. Every paced slice marks
// itself active in
// a host-link file shared by the node (<arbiter dir>/host-link.copy: per direction, a table of
// {slice, active until}); a paced slice is active until its next chunk is due plus a grace of
// kCopyActiveGraceNs. A slice never borrows while another paced slice is active, so borrowing
// never takes bandwidth a capped neighbour is using; slices without a cap do not mark the file
// (their copy path stays a single load), so a borrower does not yield to them.
//
// Thread safety: Take() may be called from any thread; the state lives in shared memory and is
// updated with atomics. No allocation, no exceptions; Take() makes system calls (clock, sleep)
// only for paced copies.
#pragma once

#include <cstdint>

#include "intercept/config/config.h"
#include "shm/region.h"

namespace vgpu::intercept {

enum CopyDirection : int { kCopyHostToDevice = 0, kCopyDeviceToHost = 1 };

inline constexpr uint64_t kCopyActiveGraceNs = 20'000'000;  // 20 ms
inline constexpr int kCopyLinkEntries = 31;
inline constexpr uint64_t kCopyLinkMagic = 0x4b4e494c59504f43ULL;  // "COPYLINK"

// Nanoseconds that `bytes` take at `rate` bytes/s (rounded up; 0 when rate is 0).
uint64_t CopyCostNs(uint64_t bytes, uint64_t rate);

// One GCRA step (pure): when a chunk costing `cost_ns` may go at `now_ns`, and the new tat.
struct BucketGrant {
  uint64_t release_ns;
  uint64_t tat_ns;
};
BucketGrant GcraStep(uint64_t tat_ns, uint64_t now_ns, uint64_t cost_ns, uint64_t burst_ns);

// The node's host-link file (work conservation). Zero bytes are a valid empty table.
struct CopyLinkEntry {
  uint64_t owner;  // slice id (hash of its region path); 0: free
  uint64_t active_until_ns;
};
struct CopyLinkFile {
  uint64_t magic;
  uint64_t reserved;
  CopyLinkEntry dir[2][kCopyLinkEntries];
};
static_assert(sizeof(CopyLinkFile) == 16 + 2 * kCopyLinkEntries * 16);

// Marks `owner` active in direction `dir` until `until_ns` (takes a free or expired entry).
void MarkLinkActive(CopyLinkFile* link, int dir, uint64_t owner, uint64_t now_ns,
                    uint64_t until_ns);
// True when no slice but `owner` is active in `dir` at `now_ns`.
bool LinkIdleForOthers(const CopyLinkFile* link, int dir, uint64_t owner, uint64_t now_ns);

class CopyPacer {
 public:
  using NowFn = uint64_t (*)();
  using SleepUntilFn = void (*)(uint64_t until_ns);

  // Paces with `config`'s caps against `state` (the slice's buckets). `link` may be null (no
  // borrowing). `owner` identifies the slice in the link file.
  void Init(const Config& config, shm::CopyQosState* state, CopyLinkFile* link, uint64_t owner);
  // Test seam: the clock and the sleep.
  void SetClockForTest(NowFn now, SleepUntilFn sleep);

  bool paced(int dir) const { return rate_[dir] != 0; }
  uint64_t chunk_bytes() const { return chunk_; }
  shm::CopyQosState* state() const { return state_; }

  // Counts a copy call in `dir` (paced or not).
  void CountCall(int dir);
  // Blocks until `bytes` may be enqueued in `dir`, and accounts them. REQUIRES: paced(dir).
  void Take(int dir, uint64_t bytes);

 private:
  uint64_t rate_[2] = {0, 0};
  uint64_t burst_ns_ = 0;
  uint64_t chunk_ = 0;
  bool borrow_ = false;
  uint64_t owner_ = 0;
  shm::CopyQosState* state_ = nullptr;
  CopyLinkFile* link_ = nullptr;
  NowFn now_ = nullptr;
  SleepUntilFn sleep_ = nullptr;
};

// Maps (creating when needed) the host-link file `path`; null when it cannot be used.
CopyLinkFile* OpenCopyLink(const char* path);

}  // namespace vgpu::intercept
