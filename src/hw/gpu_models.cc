#include "hw/gpu_models.h"

#include "hw/gpu_models_table.h"

namespace vgpu::hw {
namespace {

constexpr char Lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

constexpr bool EqualFold(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (Lower(a[i]) != Lower(b[i])) return false;
  }
  return true;
}

}  // namespace

std::span<const GpuModel> AllGpuModels() { return kGpuModels; }

const GpuModel* FindGpuModel(std::string_view key) {
  for (const GpuModel& m : kGpuModels) {
    if (EqualFold(m.key, key)) return &m;
  }
  return nullptr;
}

const GpuModel* FindSimPreset(std::string_view model) {
  for (const GpuModel& m : kGpuModels) {
    if (m.sim != nullptr && m.sim->model == model) return &m;
  }
  return nullptr;
}

}  // namespace vgpu::hw
