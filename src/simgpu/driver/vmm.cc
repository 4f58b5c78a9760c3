// Virtual memory management: physical allocations (cuMemCreate) are memfd files charged to the
// device; address reservations are PROT_NONE mappings; cuMemMap maps the file into a
// reservation, so two mappings of one handle really alias, and cuMemSetAccess opens it.
#include <sys/mman.h>
#include <unistd.h>

#include <map>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {

struct VmmHandle {
  size_t size = 0;
  int fd = -1;
  int device = 0;
  int phys = 0;
  int refs = 1;  // cuMemCreate + cuMemRetainAllocationHandle - cuMemRelease
  int maps = 0;  // live cuMemMap mappings
  CUmemAllocationProp prop{};
};

namespace {

std::map<CUmemGenericAllocationHandle, VmmHandle*>& Handles() {
  static auto* handles = new std::map<CUmemGenericAllocationHandle, VmmHandle*>;
  return *handles;
}
std::map<uintptr_t, size_t>& Reservations() {
  static auto* reservations = new std::map<uintptr_t, size_t>;
  return *reservations;
}

VmmHandle* FindHandle(CUmemGenericAllocationHandle h) {
  auto it = Handles().find(h);
  return it == Handles().end() ? nullptr : it->second;
}

void MaybeFreeHandleLocked(VmmHandle* h) {
  if (h->refs > 0 || h->maps > 0) return;
  UnchargeLocked(h->phys, h->size);
  close(h->fd);
  Handles().erase(reinterpret_cast<CUmemGenericAllocationHandle>(h));
  delete h;
}

CUresult CheckProp(const CUmemAllocationProp* prop) {
  if (prop == nullptr || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (prop->location.id < 0 || prop->location.id >= static_cast<int>(D().visible.size())) {
    return CUDA_ERROR_INVALID_DEVICE;
  }
  return CUDA_SUCCESS;
}

// True if [p, p + n) lies inside one reservation.
bool InReservation(uintptr_t p, size_t n) {
  auto& r = Reservations();
  auto it = r.upper_bound(p);
  if (it == r.begin()) return false;
  --it;
  return p >= it->first && n <= it->second && p - it->first <= it->second - n;
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuMemGetAllocationGranularity(size_t* granularity,
                                                  const CUmemAllocationProp* prop,
                                                  CUmemAllocationGranularity_flags option) {
  (void)option;
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (granularity == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (CUresult rc = CheckProp(prop); rc != CUDA_SUCCESS) return rc;
    *granularity = kGranularity;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                const CUmemAllocationProp* prop, unsigned long long flags) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (handle == nullptr || flags != 0 || size == 0 || size % kGranularity != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (CUresult rc = CheckProp(prop); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    int device = prop->location.id;
    int phys = D().visible[device];
    if (!ChargeLocked(phys, size)) return CUDA_ERROR_OUT_OF_MEMORY;
    int fd = memfd_create("vgpu-simgpu-vmm", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, static_cast<off_t>(size)) != 0) {
      if (fd >= 0) close(fd);
      UnchargeLocked(phys, size);
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    auto* h = new VmmHandle;
    h->size = size;
    h->fd = fd;
    h->device = device;
    h->phys = phys;
    h->prop = *prop;
    auto key = reinterpret_cast<CUmemGenericAllocationHandle>(h);
    Handles()[key] = h;
    *handle = key;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    VmmHandle* h = FindHandle(handle);
    if (h == nullptr || h->refs <= 0) return CUDA_ERROR_INVALID_VALUE;
    h->refs--;
    MaybeFreeHandleLocked(h);  // memory returns once the last mapping is gone too
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags) {
  (void)addr;  // a hint only
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (ptr == nullptr || size == 0 || size % kGranularity != 0 || flags != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (alignment == 0) alignment = kGranularity;
    if ((alignment & (alignment - 1)) != 0) return CUDA_ERROR_INVALID_VALUE;
    size_t len = size + alignment;
    void* raw = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (raw == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t start = RoundUp(reinterpret_cast<uintptr_t>(raw), alignment);
    uintptr_t raw_start = reinterpret_cast<uintptr_t>(raw);
    if (start > raw_start) munmap(raw, start - raw_start);
    uintptr_t end = start + size;
    if (raw_start + len > end) munmap(reinterpret_cast<void*>(end), raw_start + len - end);
    std::lock_guard<std::mutex> lock(D().mu);
    Reservations()[start] = size;
    *ptr = static_cast<CUdeviceptr>(start);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    auto it = Reservations().find(static_cast<uintptr_t>(ptr));
    if (it == Reservations().end() || it->second != size) return CUDA_ERROR_INVALID_VALUE;
    // Mappings still inside are unmapped with it (their handles stay alive until released).
    std::vector<uintptr_t> inside;
    for (auto& [base, a] : D().allocations) {
      if (a->kind == AllocKind::kVmm && base >= ptr && base < ptr + size) inside.push_back(base);
    }
    for (uintptr_t base : inside) {
      Allocation* a = RemoveAllocationLocked(base);
      a->vmm->maps--;
      MaybeFreeHandleLocked(a->vmm);
      delete a;
    }
    munmap(reinterpret_cast<void*>(ptr), size);
    Reservations().erase(it);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (flags != 0 || size == 0 || size % kGranularity != 0 || offset % kGranularity != 0) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    VmmHandle* h = FindHandle(handle);
    if (h == nullptr || h->refs <= 0) return CUDA_ERROR_INVALID_HANDLE;
    if (offset > h->size || size > h->size - offset) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t p = static_cast<uintptr_t>(ptr);
    if (!InReservation(p, size)) return CUDA_ERROR_INVALID_VALUE;
    for (auto& [base, a] : D().allocations) {
      if (a->kind == AllocKind::kVmm && base < p + size && p < base + a->size) {
        return CUDA_ERROR_INVALID_VALUE;  // overlaps an existing mapping
      }
    }
    void* m = mmap(reinterpret_cast<void*>(p), size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd,
                   static_cast<off_t>(offset));
    if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    auto* a = new Allocation;
    a->base = p;
    a->size = size;
    a->kind = AllocKind::kVmm;
    a->device = h->device;
    a->phys = h->phys;
    a->vmm = h;
    AddAllocationLocked(a);
    h->maps++;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    std::lock_guard<std::mutex> lock(D().mu);
    uintptr_t p = static_cast<uintptr_t>(ptr);
    std::vector<uintptr_t> inside;
    for (auto& [base, a] : D().allocations) {
      if (a->kind != AllocKind::kVmm || base + a->size <= p || base >= p + size) continue;
      if (base < p || base + a->size > p + size) return CUDA_ERROR_INVALID_VALUE;  // partial
      inside.push_back(base);
    }
    if (inside.empty()) return CUDA_ERROR_INVALID_VALUE;
    for (uintptr_t base : inside) {
      Allocation* a = RemoveAllocationLocked(base);
      mmap(reinterpret_cast<void*>(base), a->size, PROT_NONE,
           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
      a->vmm->maps--;
      MaybeFreeHandleLocked(a->vmm);
      delete a;
    }
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc,
                                   size_t count) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (desc == nullptr || count == 0) return CUDA_ERROR_INVALID_VALUE;
    unsigned long long access = 0;
    for (size_t i = 0; i < count; ++i) {
      if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
          desc[i].location.id >= static_cast<int>(D().visible.size())) {
        return CUDA_ERROR_INVALID_DEVICE;
      }
      access |= desc[i].flags;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    uintptr_t p = static_cast<uintptr_t>(ptr);
    size_t covered = 0;
    for (auto& [base, a] : D().allocations) {
      if (a->kind != AllocKind::kVmm || base + a->size <= p || base >= p + size) continue;
      covered += a->size;
    }
    if (covered < size) return CUDA_ERROR_INVALID_VALUE;  // part of the range is not mapped
    int prot = access == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? PROT_READ | PROT_WRITE
               : access == CU_MEM_ACCESS_FLAGS_PROT_READ    ? PROT_READ
                                                            : PROT_NONE;
    if (mprotect(reinterpret_cast<void*>(p), size, prot) != 0) return CUDA_ERROR_INVALID_VALUE;
    for (auto& [base, a] : D().allocations) {
      if (a->kind == AllocKind::kVmm && base >= p && base < p + size) a->access = access;
    }
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location,
                                   CUdeviceptr ptr) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (flags == nullptr || location == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Allocation* a = FindAllocationLocked(static_cast<uintptr_t>(ptr));
    if (a == nullptr || a->kind != AllocKind::kVmm) return CUDA_ERROR_INVALID_VALUE;
    *flags = a->access;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp* prop,
                                                           CUmemGenericAllocationHandle handle) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (prop == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    VmmHandle* h = FindHandle(handle);
    if (h == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *prop = h->prop;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Allocation* a = FindAllocationLocked(reinterpret_cast<uintptr_t>(addr));
    if (a == nullptr || a->kind != AllocKind::kVmm) return CUDA_ERROR_INVALID_VALUE;
    a->vmm->refs++;
    *handle = reinterpret_cast<CUmemGenericAllocationHandle>(a->vmm);
    return CUDA_SUCCESS;
  });
}
