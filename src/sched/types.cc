#include "sched/types.h"

namespace vgpu::sched {

std::vector<int> GpuIndices(GpuSet s) {
  std::vector<int> out;
  while (s != 0) {
    out.push_back(std::countr_zero(s));
    s &= s - 1;
  }
  return out;
}

size_t PodRequestHash::operator()(const PodRequest& r) const {
  uint64_t h = 0x9e3779b97f4a7c15ULL;
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h *= 0xff51afd7ed558ccdULL;
  };
  mix(static_cast<uint64_t>(r.cpu_milli));
  mix(static_cast<uint64_t>(r.memory_mib));
  mix(static_cast<uint64_t>(r.num_gpus) << 32 | static_cast<uint32_t>(r.gpu_milli));
  mix(static_cast<uint64_t>(r.gpu_memory_mib));
  mix(r.models.bits());
  mix(r.require_nvlink ? 1 : 0);
  return static_cast<size_t>(h ^ (h >> 29));
}

Status ValidateRequest(const PodRequest& r) {
  if (r.cpu_milli < 0 || r.memory_mib < 0 || r.num_gpus < 0 || r.gpu_milli < 0 ||
      r.gpu_memory_mib < 0) {
    return Status::InvalidArgument("pod request has a negative value");
  }
  if (r.num_gpus > kMaxGpusPerNode) {
    return Status::InvalidArgument("pod asks for " + std::to_string(r.num_gpus) +
                                   " GPUs; at most " + std::to_string(kMaxGpusPerNode));
  }
  if (r.num_gpus == 0 && (r.gpu_milli != 0 || r.gpu_memory_mib != 0)) {
    return Status::InvalidArgument("pod asks for GPU share or memory but for 0 GPUs");
  }
  if (r.num_gpus > 0 && (r.gpu_milli < 1 || r.gpu_milli > kGpuMilli)) {
    return Status::InvalidArgument("GPU share per GPU must be 1..1000 milli, got " +
                                   std::to_string(r.gpu_milli));
  }
  return Status::Ok();
}

}  // namespace vgpu::sched
