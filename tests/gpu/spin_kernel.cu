// The busy kernel of the compute checks on a real GPU (tests/gpu/run.sh): spins on the SM's
// cycle counter (clock64) for `ns` nanoseconds. The cycles per microsecond are calibrated once
// (`vgpu bench tenant --calibrate`) and written into vgpu_cycles_per_us by each tenant.
// Compiled with nvcc into a fatbin that `vgpu bench share --module` loads; the kernel's name and
// its first parameter follow the simulated GPU's convention, so the same tenant runs both.
extern "C" __device__ unsigned long long vgpu_cycles_per_us = 1000;

extern "C" __global__ void sim_sleep_ns(unsigned long long ns) {
  long long cycles = static_cast<long long>(ns * vgpu_cycles_per_us / 1000);
  long long start = clock64();
  while (clock64() - start < cycles) {
  }
}
