#include "intercept/hooks/hook_util.h"

#include "common/log.h"
#include "intercept/gate/gate.h"
#include "intercept/memory/spill.h"
#include "intercept/telemetry.h"

namespace vgpu::intercept {

bool CurrentDeviceContext(DeviceContext* out) {
  CUcontext ctx = nullptr;
  if (g_cuda.cuCtxGetCurrent == nullptr || g_cuda.cuCtxGetDevice == nullptr) return false;
  if (g_cuda.cuCtxGetCurrent(&ctx) != CUDA_SUCCESS || ctx == nullptr) return false;
  CUdevice dev = -1;
  if (g_cuda.cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0) return false;
  out->context = ctx;
  out->device = dev;
  return true;
}

namespace {

// User allocations (not contexts, not graph instantiations) are counted (telemetry.h).
bool UserSpace(Space space) {
  return space == Space::kPointer || space == Space::kVmm || space == Space::kArray ||
         space == Space::kMipmap;
}

}  // namespace

void ReleaseEntry(const AllocEntry& entry) {
  Runtime& rt = GetRuntime();
  if (UserSpace(entry.space)) CountAdd(Counters()->frees, 1);
  if (entry.pool >= 0) {
    rt.pools.OnFree(entry.pool, entry.size);
  } else {
    rt.accountant.Uncharge(entry.device, entry.size);
  }
  if ((entry.flags & kEntrySpilled) != 0) {
    NoteUnspilled(rt.accountant.region(), entry.device, entry.size);
  }
}

void ReleaseContextAllocations(CUcontext context) {
  if (context == nullptr) return;
  if (g_compute_limited.load(std::memory_order_relaxed)) GateForgetContext(context);
  uint64_t key = ContextKey(context);
  GetRuntime().table.RemoveIf(
      [](const AllocEntry& e, void* arg) {
        return e.context == *static_cast<uint64_t*>(arg) && e.space != Space::kVmm &&
               e.space != Space::kContext;
      },
      [](const AllocEntry& e, void*) { ReleaseEntry(e); }, &key);
}

bool ChargeOrRefuse(int device, uint64_t bytes, const char* what) {
  Runtime& rt = GetRuntime();
  if (rt.accountant.Charge(device, bytes)) return true;
  // Pool memory the driver has released since the last reconciliation may make room.
  if (rt.pools.HasSpare()) {
    rt.pools.OnSynchronize();
    if (rt.accountant.Charge(device, bytes)) return true;
  }
  VGPU_LOG_INFO("%s of %llu bytes on device %d refused: over the slice's memory limit", what,
                static_cast<unsigned long long>(bytes), device);
  return false;
}

void Track(uint64_t key, Space space, int device, CUcontext context, uint64_t bytes, int pool,
           uint16_t flags) {
  AllocEntry e;
  e.key = key;
  e.space = space;
  e.device = static_cast<int16_t>(device);
  e.context = ContextKey(context);
  e.size = bytes;
  e.pool = static_cast<int16_t>(pool);
  e.flags = flags;
  if (UserSpace(space)) CountAdd(Counters()->allocations, 1);
  if (!GetRuntime().table.Insert(e)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      VGPU_LOG_ERROR("allocation table full: some device memory will stay charged until exit");
    }
  }
}

}  // namespace vgpu::intercept
