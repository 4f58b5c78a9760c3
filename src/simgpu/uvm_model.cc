#include "simgpu/uvm_model.h"

namespace vgpu::simgpu {

UvmModel::UvmModel(const UvmParams& params)
    : params_(params), capacity_(params.device_bytes / params.page_bytes) {}

int UvmModel::AddOwner(bool high) {
  owners_.push_back(Owner{high, {}});
  return static_cast<int>(owners_.size()) - 1;
}

uint64_t UvmModel::Allocate(int owner, uint64_t pages) {
  uint64_t first = pages_.size();
  Page p;
  p.owner = owner;
  pages_.resize(pages_.size() + pages, p);
  return first;
}

uint64_t UvmModel::TimeAt(uint64_t bytes, uint64_t rate) const {
  if (rate == 0) return 0;
  return static_cast<uint64_t>(
      (static_cast<unsigned __int128>(bytes) * 1'000'000'000ULL + rate - 1) / rate);
}

void UvmModel::EvictPage(uint64_t page, bool write_back, uint64_t* ns) {
  Page& v = pages_[page];
  if (!v.resident) return;
  if (!owners_[v.owner].high) lru_.erase(v.lru);
  v.resident = false;
  if (v.dirty && write_back) *ns += TimeAt(params_.page_bytes, params_.link_bytes_per_s);
  v.dirty = false;
  if (write_back) owners_[v.owner].stats.evicted++;
  --resident_;
}

bool UvmModel::EvictOne(uint64_t* ns) {
  if (lru_.empty()) return false;
  EvictPage(lru_.front(), true, ns);
  return true;
}

uint64_t UvmModel::SetCapacity(uint64_t pages, uint64_t* ns) {
  capacity_ = pages;
  while (resident_ > capacity_ && EvictOne(ns)) {
  }
  return resident_ > capacity_ ? resident_ - capacity_ : 0;
}

void UvmModel::Release(uint64_t first, uint64_t pages) {
  uint64_t ignored = 0;
  for (uint64_t p = first; p < first + pages && p < pages_.size(); ++p) {
    EvictPage(p, false, &ignored);
  }
}

void UvmModel::Evict(uint64_t first, uint64_t pages, uint64_t* ns) {
  for (uint64_t p = first; p < first + pages && p < pages_.size(); ++p) EvictPage(p, true, ns);
}

bool UvmModel::Touch(uint64_t page, bool write, uint64_t* ns) {
  *ns = 0;
  Page& p = pages_[page];
  Owner& o = owners_[p.owner];
  o.stats.touches++;
  if (p.resident) {
    if (!o.high) lru_.splice(lru_.end(), lru_, p.lru);  // most recently used
    *ns = TimeAt(params_.page_bytes, params_.device_bytes_per_s);
  } else {
    if (resident_ >= capacity_ && !EvictOne(ns)) return false;
    p.resident = true;
    ++resident_;
    if (!o.high) p.lru = lru_.insert(lru_.end(), page);
    o.stats.faults++;
    *ns += params_.fault_latency_ns + TimeAt(params_.page_bytes, params_.link_bytes_per_s) +
           TimeAt(params_.page_bytes, params_.device_bytes_per_s);
  }
  p.dirty = p.dirty || write;
  o.stats.ns += *ns;
  return true;
}

}  // namespace vgpu::simgpu
