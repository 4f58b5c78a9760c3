// A model of managed (UVM) memory on an oversubscribed GPU: pages of 2 MiB that live on the
// device or on the host, faulted in over the host link, evicted least-recently-used first, with
// the pages of high-priority owners never evicted (as TGS keeps a production tenant's memory on
// the GPU). Pure and deterministic: callers pass the accesses, the model returns their time, so
// slowdown against working set can be measured (`vgpu bench oversub`).
//
// Cost of touching one page:
//   resident                     page / device_bandwidth
//   not resident (a fault)       fault_latency + page / link_bandwidth   (host to device)
//                                + page / link_bandwidth when a dirty page is evicted for it
// Eviction takes the least recently used page of a *low*-priority owner; when every resident
// page is high-priority (or the faulting owner's own high-priority pages do not fit), the touch
// fails: the model never evicts a high-priority page.
//
// The capacity may change while the model runs (SetCapacity: the simulated driver gives a
// process's managed pages what the device's allocations and the other processes leave); pages
// over a lowered capacity are evicted at once, least recently used first. Pages of a freed
// allocation leave the device (Release) and are never touched again.
//
// Thread safety: none (one model per simulation, or per process of the simulated driver). No I/O.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace vgpu::simgpu {

struct UvmParams {
  uint64_t page_bytes = 2ULL << 20;
  uint64_t device_bytes = 80ULL << 30;
  uint64_t device_bytes_per_s = 3'350'000'000'000ULL;  // HBM3, H100 SXM
  uint64_t link_bytes_per_s = 55'000'000'000ULL;       // host link, each direction
  uint64_t fault_latency_ns = 20'000;                  // one far fault, service and map
};

struct UvmOwnerStats {
  uint64_t touches = 0;
  uint64_t faults = 0;
  uint64_t evicted = 0;  // this owner's pages pushed to the host
  uint64_t ns = 0;       // time of its touches
};

class UvmModel {
 public:
  explicit UvmModel(const UvmParams& params);

  // Adds an owner (a tenant); `high` owners' pages are never evicted. Returns its id.
  int AddOwner(bool high);
  // Reserves `pages` pages for `owner` (initially on the host, not resident). Returns the first
  // page number.
  uint64_t Allocate(int owner, uint64_t pages);

  // Touches `page` (reading, or writing when `write`). False when it cannot be made resident
  // without evicting a high-priority page; *ns gets the time of the touch.
  bool Touch(uint64_t page, bool write, uint64_t* ns);

  // Changes the device pages this model may hold; evicts low-priority pages (LRU first) down to
  // it, adding their write-back time to *ns. Returns how many pages are still over it (resident
  // high-priority pages are never evicted).
  uint64_t SetCapacity(uint64_t pages, uint64_t* ns);
  // Makes pages [first, first + pages) non-resident, without write-back (their memory is freed).
  void Release(uint64_t first, uint64_t pages);
  // Evicts pages [first, first + pages) that are resident (a prefetch to the host); adds the
  // write-back time of dirty ones to *ns.
  void Evict(uint64_t first, uint64_t pages, uint64_t* ns);
  // True when `page` is on the device.
  bool Resident(uint64_t page) const { return pages_[page].resident; }

  const UvmOwnerStats& stats(int owner) const { return owners_[owner].stats; }
  uint64_t resident_pages() const { return resident_; }
  uint64_t capacity_pages() const { return capacity_; }
  const UvmParams& params() const { return params_; }

 private:
  struct Page {
    int owner = 0;
    bool resident = false;
    bool dirty = false;
    std::list<uint64_t>::iterator lru;  // valid while resident and low-priority
  };
  struct Owner {
    bool high = false;
    UvmOwnerStats stats;
  };
  uint64_t TimeAt(uint64_t bytes, uint64_t rate) const;
  bool EvictOne(uint64_t* ns);
  void EvictPage(uint64_t page, bool write_back, uint64_t* ns);

  UvmParams params_;
  uint64_t capacity_ = 0;
  uint64_t resident_ = 0;
  std::vector<Owner> owners_;
  std::vector<Page> pages_;
  std::list<uint64_t> lru_;  // resident low-priority pages, least recently used first
};

}  // namespace vgpu::simgpu
