// Process exit handling of libvgpu.so (not part of the unit-test library): a process that exits
// normally gives its slot and charges back at once; one that is killed is reclaimed by the
// others (region_ops.h).
#include "intercept/gate/gate.h"
#include "intercept/runtime.h"

namespace {

__attribute__((destructor)) void VgpuAtExit() {
  if (vgpu::intercept::g_compute_limited.load(std::memory_order_relaxed)) {
    vgpu::intercept::GateAtExit();
  }
  vgpu::intercept::GetRuntime().accountant.ReleaseProcess();
}

}  // namespace
