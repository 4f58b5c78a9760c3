#include "intercept/gate/copy_pacer.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include "shm/shared_file.h"

namespace vgpu::intercept {
namespace {

constexpr uint64_t kEntryExpiryNs = 1'000'000'000;  // an entry idle this long may be reused

uint64_t MonotonicNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

void SleepUntilMonotonic(uint64_t until_ns) {
  timespec ts{static_cast<time_t>(until_ns / 1'000'000'000ULL),
              static_cast<long>(until_ns % 1'000'000'000ULL)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
  }
}

std::atomic_ref<uint64_t> Ref(uint64_t& field) { return std::atomic_ref<uint64_t>(field); }
uint64_t Load(const uint64_t& field) {
  return std::atomic_ref<uint64_t>(const_cast<uint64_t&>(field)).load(std::memory_order_relaxed);
}
void Add(uint64_t& field, uint64_t v) { Ref(field).fetch_add(v, std::memory_order_relaxed); }

}  // namespace

uint64_t CopyCostNs(uint64_t bytes, uint64_t rate) {
  if (rate == 0) return 0;
  unsigned __int128 ns =
      (static_cast<unsigned __int128>(bytes) * 1'000'000'000ULL + rate - 1) / rate;
  return ns > ~0ULL ? ~0ULL : static_cast<uint64_t>(ns);
}

BucketGrant GcraStep(uint64_t tat_ns, uint64_t now_ns, uint64_t cost_ns, uint64_t burst_ns) {
  BucketGrant g;
  uint64_t earliest = tat_ns > burst_ns ? tat_ns - burst_ns : 0;
  g.release_ns = earliest > now_ns ? earliest : now_ns;
  g.tat_ns = (tat_ns > now_ns ? tat_ns : now_ns) + cost_ns;
  return g;
}

void MarkLinkActive(CopyLinkFile* link, int dir, uint64_t owner, uint64_t now_ns,
                    uint64_t until_ns) {
  CopyLinkEntry* entries = link->dir[dir];
  for (int i = 0; i < kCopyLinkEntries; ++i) {
    if (Load(entries[i].owner) == owner) {
      Ref(entries[i].active_until_ns).store(until_ns, std::memory_order_relaxed);
      return;
    }
  }
  for (int i = 0; i < kCopyLinkEntries; ++i) {
    uint64_t seen = Load(entries[i].owner);
    uint64_t until = Load(entries[i].active_until_ns);
    if (seen != 0 && until + kEntryExpiryNs > now_ns) continue;
    if (Ref(entries[i].owner).compare_exchange_strong(seen, owner, std::memory_order_relaxed)) {
      Ref(entries[i].active_until_ns).store(until_ns, std::memory_order_relaxed);
      return;
    }
  }
  // A full table: more than kCopyLinkEntries slices copying at once. Borrowers cannot see this
  // slice; the table is sized above the slices one GPU node runs.
}

bool LinkIdleForOthers(const CopyLinkFile* link, int dir, uint64_t owner, uint64_t now_ns) {
  const CopyLinkEntry* entries = link->dir[dir];
  for (int i = 0; i < kCopyLinkEntries; ++i) {
    uint64_t who = Load(entries[i].owner);
    if (who == 0 || who == owner) continue;
    if (Load(entries[i].active_until_ns) > now_ns) return false;
  }
  return true;
}

void CopyPacer::Init(const Config& config, shm::CopyQosState* state, CopyLinkFile* link,
                     uint64_t owner) {
  rate_[0] = config.copy_rate[0];
  rate_[1] = config.copy_rate[1];
  burst_ns_ = config.copy_burst_ns;
  chunk_ = config.copy_chunk_bytes != 0 ? config.copy_chunk_bytes : (4ULL << 20);
  borrow_ = config.copy_borrow && link != nullptr;
  owner_ = owner != 0 ? owner : 1;
  state_ = state;
  link_ = link;
  if (now_ == nullptr) now_ = MonotonicNow;
  if (sleep_ == nullptr) sleep_ = SleepUntilMonotonic;
}

void CopyPacer::SetClockForTest(NowFn now, SleepUntilFn sleep) {
  now_ = now;
  sleep_ = sleep;
}

void CopyPacer::CountCall(int dir) {
  if (state_ != nullptr) Add(state_->dir[dir].calls, 1);
}

void CopyPacer::Take(int dir, uint64_t bytes) {
  shm::CopyDirState& s = state_->dir[dir];
  const uint64_t cost = CopyCostNs(bytes, rate_[dir]);
  uint64_t now = now_();
  uint64_t tat = Load(s.tat_ns);
  BucketGrant g;
  for (;;) {
    g = GcraStep(tat, now, cost, burst_ns_);
    if (g.release_ns > now && borrow_ && LinkIdleForOthers(link_, dir, owner_, now)) {
      // Work conservation: nobody else is copying this way; go now without paying.
      Add(s.borrowed_bytes, bytes);
      Add(s.paced_chunks, 1);
      return;
    }
    if (Ref(s.tat_ns).compare_exchange_weak(tat, g.tat_ns, std::memory_order_relaxed)) break;
  }
  Ref(s.rate).store(rate_[dir], std::memory_order_relaxed);
  if (link_ != nullptr) {
    uint64_t next_due = g.tat_ns > burst_ns_ ? g.tat_ns - burst_ns_ : 0;
    MarkLinkActive(link_, dir, owner_, now, (next_due > now ? next_due : now) + kCopyActiveGraceNs);
  }
  if (g.release_ns > now) {
    sleep_(g.release_ns);
    Add(s.wait_ns, g.release_ns - now);
  }
  Add(s.paced_bytes, bytes);
  Add(s.paced_chunks, 1);
}

CopyLinkFile* OpenCopyLink(const char* path) {
  if (path == nullptr || path[0] == '\0') return nullptr;
  // Slices of several users share the node's link (like the arbiter).
  int fd = shm::OpenFileSharedByUsers(path);
  if (fd < 0) return nullptr;
  off_t end = ::lseek(fd, 0, SEEK_END);  // (not fstat: its glibc 2.33 version, glibc_compat.h)
  bool ok = end >= 0;
  if (ok && static_cast<size_t>(end) < sizeof(CopyLinkFile)) {
    ok = ::ftruncate(fd, sizeof(CopyLinkFile)) == 0;
  }
  void* p = ok ? ::mmap(nullptr, sizeof(CopyLinkFile), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)
               : MAP_FAILED;
  ::close(fd);
  if (p == MAP_FAILED) return nullptr;
  auto* link = static_cast<CopyLinkFile*>(p);
  uint64_t magic = 0;
  Ref(link->magic).compare_exchange_strong(magic, kCopyLinkMagic);
  if (Load(link->magic) != kCopyLinkMagic) {
    ::munmap(p, sizeof(CopyLinkFile));
    return nullptr;
  }
  return link;
}

}  // namespace vgpu::intercept
