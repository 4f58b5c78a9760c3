// Managed (UVM) memory of the simulated driver, on the UVM model (simgpu/uvm_model.h).
//
// A managed allocation is host memory (always readable and writable by the host) whose 2 MiB
// pages the model places on the device when the device touches them: a kernel that follows the
// "sim_touch" convention (docs/simgpu.md), or cuMemPrefetchAsync to the device. Each process has
// one model per device; its capacity, recomputed at every touch, is what the device's allocations
// (every process's, shared state `used_bytes`) and the other processes' resident managed pages
// leave, so device memory always wins and a process's managed pages are evicted (least recently
// used first) when the device fills. Pages of an allocation advised
// SET_PREFERRED_LOCATION(device) belong to a high-priority owner and are never evicted; every
// other page is low priority. A touch that could only be served by evicting a high-priority page
// is served over the link without making the page resident (a remote access).
//
// Time: the faults of a touch (fault latency, the transfer over the host link at h2d_bandwidth
// and write-backs of evicted dirty pages) stall the launching stream before the kernel starts;
// they do not occupy the device's kernel timeline (another process's kernels run meanwhile) and
// they are not queued on the copy engines (timeline.h), so they do not slow other processes'
// copies. The resident pages are counted in the shared state (managed_resident) and in
// cuMemGetInfo's used memory; the bytes faults move, in managed_link_bytes (NVML's PCIe receive
// throughput).
#include <map>
#include <memory>

#include "simgpu/driver/driver.h"
#include "simgpu/uvm_model.h"

namespace vgpu::simgpu::driver {
namespace {

constexpr int kLowOwner = 0;
constexpr int kHighOwner = 1;

struct Models {
  std::map<int, std::unique_ptr<UvmModel>> by_phys;
};
Models& M() {
  static auto* m = new Models;  // never destroyed: hooks may run while the process exits
  return *m;
}

UvmParams ParamsFor(int phys) {
  // The device record's own spec (a MIG instance's memory for an instance record).
  const DeviceSpec* spec = nullptr;
  for (size_t i = 0; i < D().visible.size(); ++i) {
    if (D().visible[i] == phys) spec = &D().specs[i];
  }
  UvmParams p;
  if (spec == nullptr) return p;
  p.device_bytes = spec->memory_bytes;
  if (spec->memory_clock_mhz > 0 && spec->bus_width_bits > 0) {
    p.device_bytes_per_s = static_cast<uint64_t>(spec->memory_clock_mhz) * 1'000'000ULL * 2 *
                           static_cast<uint64_t>(spec->bus_width_bits) / 8;
  }
  if (spec->h2d_bytes_per_s > 0) p.link_bytes_per_s = spec->h2d_bytes_per_s;
  p.fault_latency_ns = spec->fault_latency_ns;
  return p;
}

UvmModel& ModelLocked(int phys) {
  auto& slot = M().by_phys[phys];
  if (!slot) {
    slot = std::make_unique<UvmModel>(ParamsFor(phys));
    slot->AddOwner(false);  // kLowOwner
    slot->AddOwner(true);   // kHighOwner
  }
  return *slot;
}

uint64_t PageBytes() { return UvmParams{}.page_bytes; }

// Recomputes the model's capacity from the shared state and publishes its resident bytes.
// `ns` gets write-back time of pages evicted to fit.
void FitLocked(int phys, UvmModel& m, uint64_t* ns) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  const DeviceRecord& dev = d.state->layout()->devices[phys];
  uint64_t taken = dev.used_bytes + d.state->ManagedResident(phys, d.slot);
  uint64_t left = taken >= dev.total_bytes ? 0 : dev.total_bytes - taken;
  m.SetCapacity(left / PageBytes(), ns);
  d.state->layout()->managed_resident[d.slot][phys] = m.resident_pages() * PageBytes();
}

void PublishLocked(int phys, const UvmModel& m, uint64_t moved_pages = 0) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  d.state->layout()->managed_resident[d.slot][phys] = m.resident_pages() * PageBytes();
  d.state->layout()->managed_link_bytes[phys] += moved_pages * PageBytes();
}

// Pages [first, last) of `a` that cover [p, p + n).
void PageSpan(const Allocation* a, uintptr_t p, uint64_t n, uint64_t* first, uint64_t* count) {
  uint64_t off = p - a->base;
  uint64_t end = off + n > a->size ? a->size : off + n;
  uint64_t lo = off / PageBytes(), hi = (end + PageBytes() - 1) / PageBytes();
  *first = a->uvm_first + lo;
  *count = hi > lo ? hi - lo : 0;
}

}  // namespace

void ManagedAllocatedLocked(Allocation* a) {
  UvmModel& m = ModelLocked(a->phys);
  a->uvm_pages = (a->size + PageBytes() - 1) / PageBytes();
  a->uvm_first = m.Allocate(a->prefer_device ? kHighOwner : kLowOwner, a->uvm_pages);
}

void ManagedFreedLocked(Allocation* a) {
  UvmModel& m = ModelLocked(a->phys);
  m.Release(a->uvm_first, a->uvm_pages);
  PublishLocked(a->phys, m);
}

void ManagedPreferLocked(Allocation* a, bool device) {
  if (a->prefer_device == device) return;
  // The pages change owner: they leave the device and come back under their new owner.
  ManagedFreedLocked(a);
  a->prefer_device = device;
  ManagedAllocatedLocked(a);
}

ManagedCost ManagedTouchLocked(Allocation* a, uintptr_t p, uint64_t n, bool write) {
  ManagedCost cost;
  UvmModel& m = ModelLocked(a->phys);
  uint64_t first = 0, count = 0;
  PageSpan(a, p, n, &first, &count);
  if (count == 0) return cost;
  uint64_t wb = 0;
  FitLocked(a->phys, m, &wb);
  cost.stall_ns += wb;
  const UvmParams& params = m.params();
  uint64_t resident_ns = params.device_bytes_per_s == 0
                             ? 0
                             : params.page_bytes * 1'000'000'000ULL / params.device_bytes_per_s;
  for (uint64_t page = first; page < first + count; ++page) {
    bool was = m.Resident(page);
    uint64_t ns = 0;
    if (m.Touch(page, write, &ns)) {
      if (!was) ++cost.faults;
      cost.stall_ns += ns > resident_ns ? ns - resident_ns : 0;
    } else {
      ++cost.remote;  // no evictable page: served over the link, not made resident
      cost.stall_ns += params.fault_latency_ns +
                       (params.link_bytes_per_s == 0
                            ? 0
                            : params.page_bytes * 1'000'000'000ULL / params.link_bytes_per_s);
    }
  }
  PublishLocked(a->phys, m, cost.faults + cost.remote);
  return cost;
}

uint64_t ManagedEvictLocked(Allocation* a, uintptr_t p, uint64_t n) {
  UvmModel& m = ModelLocked(a->phys);
  uint64_t first = 0, count = 0, ns = 0;
  PageSpan(a, p, n, &first, &count);
  m.Evict(first, count, &ns);
  PublishLocked(a->phys, m);
  return ns;
}

uint64_t ManagedResidentBytes(int phys) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  return d.state->ManagedResident(phys);
}

}  // namespace vgpu::simgpu::driver
