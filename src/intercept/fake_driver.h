// A fake CUDA driver and NVML for the unit tests of libvgpu: a DriverApi/NvmlApi table whose
// functions work on simple in-memory state (one process, one or two devices). Test-only.
//
// Behaviour worth knowing in tests:
//   - device memory is a counter per device (`physical`), addresses are handed out upwards;
//   - pitch = width rounded up to `pitch_alignment`;
//   - a pool reserves in chunks of `pool_chunk` and keeps freed memory until trimmed or until a
//     stream, event or context synchronize, which (as the real driver does) gives back what it
//     reserves above max(used, release_threshold) (threshold 0 by default; tests set
//     `release_threshold` as cuMemPoolSetAttribute would);
//   - `synchronizations` counts the synchronize calls that reached the fake driver;
//   - arrays report `array_padding` extra bytes through cuArrayGetMemoryRequirements;
//   - `fail_next` makes the next allocating call fail with CUDA_ERROR_UNKNOWN;
//   - `calls` counts calls that reached the fake driver's allocators;
//   - managed memory (cuMemAllocManaged) lives on the host: it takes none of `physical`; its
//     bytes are in `managed`, and cuMemAdvise calls are recorded in `advice`;
//   - kernels take no time: an event completes when it is recorded (at the host time of the
//     record), so launch tracking works and every launch measures 0 ns.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "intercept/driver_api.h"

namespace vgpu::intercept::testing {

struct FakeGraph {
  std::vector<CUDA_MEM_ALLOC_NODE_PARAMS> alloc_nodes;
  std::vector<FakeGraph*> children;
};

struct FakeState {
  uint64_t physical[2] = {80ULL << 30, 80ULL << 30};
  uint64_t used[2] = {0, 0};
  int current_device = 0;
  bool has_context = true;
  uint64_t pitch_alignment = 512;
  uint64_t pool_chunk = 2ULL << 20;
  uint64_t array_padding = 0;
  bool capturing = false;
  bool fail_next = false;
  bool internal_proc_pointers = false;  // cuGetProcAddress returns non-exported addresses
  int calls = 0;                        // allocating calls that reached the driver
  int launches = 0;
  int launch_kinds[16] = {};  // per launch entry point (LaunchKind), for the gate's tests
  int events_live = 0;
  int synchronizations = 0;
  uint64_t next_address = 0x7f0000000000ULL;
  std::map<uint64_t, std::pair<int, uint64_t>> allocations;  // address -> (device, bytes)
  std::map<uint64_t, uint64_t> managed;                      // address -> bytes (on the host)
  struct Advice {
    uint64_t address;
    uint64_t bytes;
    int advice;
    int device;
  };
  std::vector<Advice> advice;
  struct Pool {
    int device = 0;
    uint64_t reserved = 0;
    uint64_t used = 0;
    uint64_t release_threshold = 0;
    bool host = false;
  };
  std::map<CUmemoryPool, Pool> pools;
  std::map<uint64_t, CUmemoryPool> pool_allocations;
  std::map<uint64_t, std::pair<int, uint64_t>> arrays;  // handle -> (device, bytes)
  int primary_refs[2] = {0, 0};
  std::vector<CUcontext> created_contexts;
  std::vector<FakeGraph*> graphs;
  std::map<uint64_t, std::string> exported_extra;  // symbols the fake "library" also exports
};

// Launch entry points of the fake driver, counted in FakeState::launch_kinds.
enum LaunchKind {
  kKernel,
  kKernelPtsz,
  kEx,
  kExPtsz,
  kCoop,
  kCoopPtsz,
  kGraph,
  kGraphPtsz,
  kLaunch,
  kGrid,
  kGridAsync,
  kLaunchKinds
};

FakeState& Fake();

// Resets the fake state and returns tables wired to it.
DriverApi MakeFakeDriver();
NvmlApi MakeFakeNvml();

// Handles the fake uses.
CUcontext FakePrimaryContext(int device);
CUmemoryPool FakeDefaultPool(int device);
nvmlDevice_t FakeNvmlDevice(int index);

// Installs the fake tables with a config whose memory limit on device 0 is `limit` (and
// `limit1` on device 1), a context overhead of `overhead` and a private region.
void InstallFake(uint64_t limit, uint64_t overhead = 0, uint64_t limit1 = ~0ULL);

// Bytes charged by the slice on `device`.
uint64_t SliceUsed(int device = 0);

}  // namespace vgpu::intercept::testing
