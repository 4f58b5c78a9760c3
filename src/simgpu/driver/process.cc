// Process-wide driver state: cuInit, device visibility, the shared-state connection, context
// stacks, device memory accounting and the allocation registry.
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "common/log.h"
#include "simgpu/driver/driver.h"
#include "simgpu/mig_state.h"

namespace vgpu::simgpu::driver {
namespace {

bool g_forked_child = false;
int32_t g_registered_pid = 0;

void OnForkChild() { g_forked_child = true; }

}  // namespace

void SetUpLogging() {
  SetLogTag("vgpu-simgpu");
  LogLevel level = LogLevel::kInfo;
  if (const char* v = std::getenv("VGPU_SIMGPU_LOG_LEVEL");
      v != nullptr && v[0] >= '0' && v[0] <= '4' && v[1] == '\0') {
    level = static_cast<LogLevel>(v[0] - '0');
  }
  SetLogLevel(level);
}

namespace {

// The MIG device (compute instance) whose UUID starts with `prefix`: its device record and spec
// (the GPU instance's memory, the compute instance's SMs). False if none or ambiguous.
bool FindMigDevice(const Config& config, SharedState* state, const std::string& prefix, int* record,
                   DeviceSpec* spec) {
  SharedState::Lock lock(state);
  const SharedStateLayout* s = state->layout();
  int found = 0;
  for (int g = 0; g < kMaxMigInstances; ++g) {
    const MigGpuInstanceRecord& gi = s->mig_instances[g];
    if (gi.used == 0 || gi.parent >= config.devices.size()) continue;
    const DeviceSpec& parent = config.devices[gi.parent];
    for (const MigComputeRecord& ci : gi.cis) {
      if (ci.used == 0) continue;
      std::string uuid = MigUuid(parent, gi.id, ci.id);
      if (uuid.rfind(prefix, 0) != 0) continue;
      if (++found > 1) return false;
      *record = kMaxDevices + g;
      *spec = parent;
      spec->memory_bytes = gi.memory_bytes;
      spec->sm_count = static_cast<int>(ci.sm_count);
      spec->name = parent.name + " MIG " + gi.profile_name;
      spec->uuid = uuid;
      ParseUuid("GPU-" + uuid.substr(4), &spec->uuid_bytes);
      spec->context_bytes = 0;
    }
  }
  return found == 1;
}

// CUDA_VISIBLE_DEVICES: a comma-separated list of indices, UUID prefixes ("GPU-1a2b...") or MIG
// device UUID prefixes ("MIG-..."). As with the real driver, the list ends at the first entry that
// names no device. A GPU in MIG mode is not a CUDA device itself: only its MIG devices are.
void VisibleDevices(Driver& d) {
  const Config& config = d.config;
  std::vector<bool> mig_on(config.devices.size(), false);
  {
    SharedState::Lock lock(d.state.get());
    for (size_t i = 0; i < config.devices.size(); ++i) {
      mig_on[i] = d.state->layout()->mig[i].current == 1;
    }
  }
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  if (env == nullptr) {
    for (size_t i = 0; i < config.devices.size(); ++i) {
      if (mig_on[i]) continue;
      d.visible.push_back(static_cast<int>(i));
      d.specs.push_back(config.devices[i]);
    }
    return;
  }
  std::string list(env);
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    if (comma == std::string::npos) comma = list.size();
    std::string item = list.substr(pos, comma - pos);
    pos = comma + 1;
    while (!item.empty() && item.front() == ' ') item.erase(item.begin());
    while (!item.empty() && item.back() == ' ') item.pop_back();
    int found = -1;
    DeviceSpec spec;
    if (item.rfind("MIG-", 0) == 0) {
      if (!FindMigDevice(config, d.state.get(), item, &found, &spec)) found = -1;
    } else if (item.rfind("GPU-", 0) == 0) {
      for (size_t i = 0; i < config.devices.size(); ++i) {
        if (config.devices[i].uuid.rfind(item, 0) == 0) {
          if (found >= 0) return;  // ambiguous prefix
          found = static_cast<int>(i);
        }
      }
    } else if (!item.empty() && item.find_first_not_of("0123456789") == std::string::npos &&
               item.size() < 4) {
      int index = std::atoi(item.c_str());
      if (index < static_cast<int>(config.devices.size())) found = index;
    }
    if (found >= 0 && found < kMaxDevices) {
      if (mig_on[found])
        found = -1;
      else
        spec = config.devices[found];
    }
    if (found < 0) break;
    for (int v : d.visible) {
      if (v == found) return;
    }
    d.visible.push_back(found);
    d.specs.push_back(spec);
  }
}

CUresult InitLocked(Driver& d) {
  SetUpLogging();
  Result<Config> config = LoadConfigFromEnvironment();
  if (!config) {
    VGPU_LOG_ERROR("simulated GPU: %s", config.error().message().c_str());
    return CUDA_ERROR_NO_DEVICE;
  }
  d.config = std::move(*config);
  std::string path = SharedState::DefaultPath(d.config);
  Result<std::unique_ptr<SharedState>> state = SharedState::Open(d.config, path);
  if (!state) {
    VGPU_LOG_ERROR("simulated GPU: %s", state.error().message().c_str());
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  d.state = std::move(*state);
  {
    SharedState::Lock lock(d.state.get());
    Result<int> slot = d.state->RegisterProcess(static_cast<int32_t>(getpid()));
    if (!slot) {
      VGPU_LOG_ERROR("simulated GPU: %s", slot.error().message().c_str());
      return CUDA_ERROR_OUT_OF_MEMORY;
    }
    d.slot = *slot;
  }
  g_registered_pid = static_cast<int32_t>(getpid());
  pthread_atfork(nullptr, nullptr, OnForkChild);
  VisibleDevices(d);
  size_t n = d.visible.size();
  d.primaries.assign(n, nullptr);
  d.default_pools.assign(n, nullptr);
  d.current_pools.assign(n, nullptr);
  d.graph_pools.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    Context* c = new Context;
    c->device = static_cast<int>(i);
    c->phys = d.visible[i];
    c->primary = true;
    c->id = d.next_id++;
    c->legacy = new Stream;
    c->legacy->kind = Stream::Kind::kLegacy;
    c->legacy->ctx = c;
    d.primaries[i] = c;
  }
  VGPU_LOG_INFO(
      "SIMULATED GPU: this libcuda is vgpu's simulation, not an NVIDIA driver (%zu device(s), "
      "%s, state %s)",
      n, d.config.source.c_str(), d.state->path().c_str());
  return n == 0 ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}

__attribute__((destructor)) void ReleaseOnExit() {
  Driver& d = D();
  if (d.state == nullptr || d.slot < 0 || g_forked_child) return;
  SharedState::Lock lock(d.state.get());
  if (d.state->layout()->processes[d.slot].pid == g_registered_pid) {
    d.state->ReleaseProcess(d.slot);
  }
}

}  // namespace

Driver& D() {
  static Driver* driver = new Driver;  // never destroyed: other threads may run at exit
  return *driver;
}

CUresult CheckInit() {
  Driver& d = D();
  if (g_forked_child) return CUDA_ERROR_NOT_INITIALIZED;
  if (!d.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return d.init_result;
}

CUresult CheckDevice(CUdevice dev) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (dev < 0 || dev >= static_cast<int>(D().visible.size())) return CUDA_ERROR_INVALID_DEVICE;
  return CUDA_SUCCESS;
}

const DeviceSpec& Spec(int ordinal) { return D().specs[ordinal]; }

std::vector<Context*>& ThreadContextStack() {
  thread_local std::vector<Context*> stack;
  return stack;
}

Context* AsContext(CUcontext c) {
  auto* ctx = reinterpret_cast<Context*>(c);
  if (ctx == nullptr || ctx->tag != Tag::kContext || !ctx->active) return nullptr;
  return ctx;
}

CUresult CurrentContext(Context** out) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::vector<Context*>& stack = ThreadContextStack();
  if (stack.empty()) return CUDA_ERROR_INVALID_CONTEXT;
  Context* c = stack.back();
  if (c->tag != Tag::kContext || !c->active) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = c;
  return CUDA_SUCCESS;
}

CUresult ActivateContextLocked(Context* ctx) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  uint64_t bytes = d.specs[ctx->device].context_bytes;
  if (bytes > 0 && !d.state->TryReserve(d.slot, ctx->phys, bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  d.state->layout()->processes[d.slot].contexts[ctx->phys]++;
  ctx->active = true;
  return CUDA_SUCCESS;
}

void DeactivateContextLocked(Context* ctx) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  uint64_t bytes = d.specs[ctx->device].context_bytes;
  if (bytes > 0) d.state->Release(d.slot, ctx->phys, bytes);
  uint32_t& contexts = d.state->layout()->processes[d.slot].contexts[ctx->phys];
  if (contexts > 0) contexts--;
  ctx->active = false;
}

bool ChargeLocked(int phys, uint64_t bytes) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  return d.state->TryReserve(d.slot, phys, bytes);
}

void UnchargeLocked(int phys, uint64_t bytes) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  d.state->Release(d.slot, phys, bytes);
}

uint64_t DeviceUsedBytes(int phys, bool reclaim) {
  Driver& d = D();
  SharedState::Lock lock(d.state.get());
  if (reclaim) d.state->MaybeReclaim(MonotonicNs());
  return d.state->layout()->devices[phys].used_bytes;
}

Backing AllocateBacking(size_t bytes, bool low32) {
  Backing b;
  if (bytes == 0) bytes = 1;
  if (bytes < (1u << 20) && !low32) {
    b.ptr = std::aligned_alloc(kAllocAlign, RoundUp(bytes, kAllocAlign));
    b.len = bytes;
    return b;
  }
  size_t len = RoundUp(bytes, 4096);
  int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (low32 ? MAP_32BIT : 0);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
  if (p == MAP_FAILED) return b;
  b.ptr = p;
  b.len = len;
  b.mmapped = true;
  return b;
}

void FreeBacking(Backing* b) {
  if (b->ptr == nullptr) return;
  if (b->mmapped) {
    munmap(b->ptr, b->len);
  } else {
    std::free(b->ptr);
  }
  b->ptr = nullptr;
}

void AddAllocationLocked(Allocation* a) { D().allocations[a->base] = a; }

Allocation* RemoveAllocationLocked(uintptr_t base) {
  auto it = D().allocations.find(base);
  if (it == D().allocations.end()) return nullptr;
  Allocation* a = it->second;
  D().allocations.erase(it);
  return a;
}

Allocation* FindAllocationLocked(uintptr_t p) {
  auto& allocs = D().allocations;
  auto it = allocs.upper_bound(p);
  if (it == allocs.begin()) return nullptr;
  --it;
  Allocation* a = it->second;
  uintptr_t extent = a->size == 0 ? 1 : a->size;
  return p - a->base < extent ? a : nullptr;
}

CUresult CheckRangeLocked(uintptr_t p, size_t n) {
  Allocation* a = FindAllocationLocked(p);
  if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (n > a->size - (p - a->base)) return CUDA_ERROR_INVALID_VALUE;
  if (a->kind == AllocKind::kVmm && a->access == 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

void FreeAllocationLocked(Allocation* a) {
  if (a->kind == AllocKind::kPool || a->kind == AllocKind::kGraph) {
    PoolFreeLocked(a);
    return;
  }
  if (a->charged > 0) UnchargeLocked(a->phys, a->charged);
  if (a->kind == AllocKind::kManaged) ManagedFreedLocked(a);
  FreeBacking(&a->backing);
  delete a;
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuInit(unsigned int Flags) {
  SIMGPU_GUARD({
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    Driver& d = D();
    std::lock_guard<std::mutex> lock(d.mu);
    if (!d.initialized) {
      d.init_result = InitLocked(d);
      d.initialized = true;
    }
    return d.init_result;
  });
}

SIMGPU_API CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = CUDA_VERSION;
  return CUDA_SUCCESS;
}
