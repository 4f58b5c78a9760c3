#include "intercept/memory/spill.h"

#include <atomic>

#include "common/log.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

std::atomic_ref<uint64_t> Ref(uint64_t& field) { return std::atomic_ref<uint64_t>(field); }

}  // namespace

void PublishSpillMode(shm::Region* region, const Config& config) {
  if (region == nullptr) return;
  shm::SpillState& s = region->header.spill;
  std::atomic_ref<uint32_t>(s.mode).store(config.memory_mode, std::memory_order_relaxed);
  std::atomic_ref<uint32_t>(s.protected_slice)
      .store(ProtectedPriority(config.priority) ? 1 : 0, std::memory_order_relaxed);
}

CUresult SpillAllocate(CUdeviceptr* dptr, size_t bytes, int device) {
  if (g_cuda.cuMemAllocManaged == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = g_cuda.cuMemAllocManaged(dptr, bytes, kMemAttachGlobal);
  if (r != CUDA_SUCCESS) return r;
  if (g_cuda.cuMemAdvise == nullptr) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      VGPU_LOG_WARN(
          "the driver has no cuMemAdvise: spilled memory is managed memory without "
          "advice, its pages may take the GPU's memory");
    }
    return CUDA_SUCCESS;
  }
  // Advice failures leave a usable allocation; they are logged, not returned.
  CUresult a = g_cuda.cuMemAdvise(*dptr, bytes, CU_MEM_ADVISE_SET_PREFERRED_LOCATION, kDeviceCpu);
  CUresult b = g_cuda.cuMemAdvise(*dptr, bytes, CU_MEM_ADVISE_SET_ACCESSED_BY, device);
  if (a != CUDA_SUCCESS || b != CUDA_SUCCESS) {
    VGPU_LOG_WARN("cuMemAdvise on spilled memory failed (%d, %d)", static_cast<int>(a),
                  static_cast<int>(b));
  }
  return CUDA_SUCCESS;
}

void NoteSpilled(shm::Region* region, int device, uint64_t bytes) {
  if (region == nullptr) return;
  shm::SpillState& s = region->header.spill;
  uint64_t now = Ref(s.spilled_bytes).fetch_add(bytes, std::memory_order_relaxed) + bytes;
  uint64_t peak = Ref(s.spilled_peak).load(std::memory_order_relaxed);
  while (now > peak &&
         !Ref(s.spilled_peak).compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  Ref(s.spill_allocs).fetch_add(1, std::memory_order_relaxed);
  if (device >= 0 && device < shm::kSpillDevices) {
    Ref(s.device_spilled[device]).fetch_add(bytes, std::memory_order_relaxed);
  }
}

void NoteUnspilled(shm::Region* region, int device, uint64_t bytes) {
  if (region == nullptr) return;
  shm::SpillState& s = region->header.spill;
  auto sub = [bytes](uint64_t& field) {
    uint64_t v = Ref(field).load(std::memory_order_relaxed);
    while (!Ref(field).compare_exchange_weak(v, v > bytes ? v - bytes : 0,
                                             std::memory_order_relaxed)) {
    }
  };
  sub(s.spilled_bytes);
  if (device >= 0 && device < shm::kSpillDevices) sub(s.device_spilled[device]);
}

void NoteGpuRefusal(shm::Region* region) {
  if (region == nullptr) return;
  Ref(region->header.spill.gpu_refusals).fetch_add(1, std::memory_order_relaxed);
}

}  // namespace vgpu::intercept
