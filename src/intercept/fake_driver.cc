#include "intercept/fake_driver.h"

#include <time.h>

#include <cstring>
#include <map>
#include <memory>
#include <mutex>

#include "intercept/runtime.h"

namespace vgpu::intercept::testing {
namespace {

FakeState g_state;
std::recursive_mutex g_mutex;  // the fake's maps are shared by test threads
char g_primary_storage[2];
char g_pool_storage[2];
char g_nvml_storage[2];

// The objects behind the handles the fake hands out (created contexts, graph nodes, events):
// owned here, freed when the handle is destroyed, at the reset of MakeFakeDriver or at exit, so
// that a test may end with handles alive and leak nothing.
template <typename T>
class HandleStore {
 public:
  T* Add() {
    auto owned = std::make_unique<T>();
    T* raw = owned.get();
    items_.emplace(raw, std::move(owned));
    return raw;
  }
  bool Remove(const T* item) { return items_.erase(item) != 0; }
  void Clear() { items_.clear(); }

 private:
  std::map<const T*, std::unique_ptr<T>> items_;
};

struct FakeContext {
  char unused = 0;
};
HandleStore<FakeContext> g_contexts;

uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

bool TakeFailure() {
  if (!g_state.fail_next) return false;
  g_state.fail_next = false;
  return true;
}

CUresult AllocRaw(int device, uint64_t bytes, uint64_t* address) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  if (g_state.used[device] + bytes > g_state.physical[device]) return CUDA_ERROR_OUT_OF_MEMORY;
  g_state.used[device] += bytes;
  *address = g_state.next_address;
  g_state.next_address += RoundUp(bytes == 0 ? 1 : bytes, 1 << 16);
  g_state.allocations[*address] = {device, bytes};
  return CUDA_SUCCESS;
}

CUresult FreeRaw(uint64_t address) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto it = g_state.allocations.find(address);
  if (it == g_state.allocations.end()) return CUDA_ERROR_INVALID_VALUE;
  g_state.used[it->second.first] -= it->second.second;
  g_state.allocations.erase(it);
  g_state.managed.erase(address);
  return CUDA_SUCCESS;
}

// ---- contexts
CUresult CtxGetCurrent(CUcontext* ctx) {
  *ctx = g_state.has_context ? FakePrimaryContext(g_state.current_device) : nullptr;
  return CUDA_SUCCESS;
}
CUresult CtxGetDevice(CUdevice* dev) {
  if (!g_state.has_context) return CUDA_ERROR_INVALID_CONTEXT;
  *dev = g_state.current_device;
  return CUDA_SUCCESS;
}
CUresult PrimaryRetain(CUcontext* ctx, CUdevice dev) {
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  ++g_state.primary_refs[dev];
  *ctx = FakePrimaryContext(dev);
  return CUDA_SUCCESS;
}
CUresult PrimaryRelease(CUdevice dev) {
  if (g_state.primary_refs[dev] == 0) return CUDA_ERROR_INVALID_CONTEXT;
  --g_state.primary_refs[dev];
  return CUDA_SUCCESS;
}
CUresult PrimaryReset(CUdevice) { return CUDA_SUCCESS; }
CUresult CtxCreate2(CUcontext* ctx, unsigned int, CUdevice) {
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  *ctx = reinterpret_cast<CUcontext>(g_contexts.Add());
  g_state.created_contexts.push_back(*ctx);
  return CUDA_SUCCESS;
}
CUresult CtxCreate3(CUcontext* ctx, CUexecAffinityParam*, int, unsigned int f, CUdevice d) {
  return CtxCreate2(ctx, f, d);
}
CUresult CtxCreate4(CUcontext* ctx, CUctxCreateParams*, unsigned int f, CUdevice d) {
  return CtxCreate2(ctx, f, d);
}
CUresult CtxDestroy(CUcontext ctx) {
  for (auto it = g_state.created_contexts.begin(); it != g_state.created_contexts.end(); ++it) {
    if (*it == ctx) {
      g_state.created_contexts.erase(it);
      g_contexts.Remove(reinterpret_cast<FakeContext*>(ctx));
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_CONTEXT;
}

// ---- linear memory
CUresult MemAlloc(CUdeviceptr* dptr, size_t bytes) {
  if (!g_state.has_context) return CUDA_ERROR_INVALID_CONTEXT;
  uint64_t a = 0;
  CUresult r = AllocRaw(g_state.current_device, bytes, &a);
  if (r == CUDA_SUCCESS) *dptr = a;
  return r;
}
// The 32-bit legacy entry points: addresses below 4 GiB.
uint64_t g_low_address = 0x10000000;
CUresult MemAllocV1(CUdeviceptr_v1* dptr, unsigned int bytes) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (!g_state.has_context) return CUDA_ERROR_INVALID_CONTEXT;
  ++g_state.calls;
  int d = g_state.current_device;
  if (g_state.used[d] + bytes > g_state.physical[d]) return CUDA_ERROR_OUT_OF_MEMORY;
  g_state.used[d] += bytes;
  *dptr = static_cast<CUdeviceptr_v1>(g_low_address);
  g_state.allocations[g_low_address] = {d, bytes};
  g_low_address += RoundUp(bytes == 0 ? 1 : bytes, 1 << 16);
  return CUDA_SUCCESS;
}
CUresult MemFreeV1(CUdeviceptr_v1 dptr) { return FreeRaw(dptr); }
CUresult MemGetInfoV1(unsigned int* free, unsigned int* total) {
  *total = 0xFFFFFFFFu;
  *free = 0xFFFFFFFFu;
  return CUDA_SUCCESS;
}

// The same function at another address, as a driver's internal entry point would be.
CUresult MemAllocInternal(CUdeviceptr* dptr, size_t bytes) { return MemAlloc(dptr, bytes); }
CUresult MemAllocManaged(CUdeviceptr* dptr, size_t bytes, unsigned int) {
  if (!g_state.has_context) return CUDA_ERROR_INVALID_CONTEXT;
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  uint64_t address = g_state.next_address;
  g_state.next_address += RoundUp(bytes == 0 ? 1 : bytes, 1 << 16);
  g_state.allocations[address] = {g_state.current_device, 0};  // no device memory
  g_state.managed[address] = bytes;
  *dptr = address;
  return CUDA_SUCCESS;
}
CUresult MemAdvise(CUdeviceptr p, size_t bytes, CUmem_advise advice, CUdevice device) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (g_state.managed.count(p) == 0) return CUDA_ERROR_INVALID_VALUE;
  g_state.advice.push_back({p, bytes, static_cast<int>(advice), device});
  return CUDA_SUCCESS;
}
CUresult MemAllocPitch(CUdeviceptr* dptr, size_t* pitch, size_t width, size_t height,
                       unsigned int) {
  *pitch = RoundUp(width, g_state.pitch_alignment);
  return MemAlloc(dptr, *pitch * height);
}
CUresult MemFree(CUdeviceptr dptr) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto pooled = g_state.pool_allocations.find(dptr);
  if (pooled != g_state.pool_allocations.end()) {
    FakeState::Pool& p = g_state.pools[pooled->second];
    p.used -= g_state.allocations[dptr].second;
    g_state.allocations.erase(dptr);
    g_state.pool_allocations.erase(pooled);
    return CUDA_SUCCESS;
  }
  return FreeRaw(dptr);
}
CUresult MemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                   const CUmemAllocationProp* prop, unsigned long long) {
  int device = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : 0;
  uint64_t a = 0;
  CUresult r = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE
                   ? AllocRaw(device, size, &a)
                   : (++g_state.calls, a = g_state.next_address++, CUDA_SUCCESS);
  if (r == CUDA_SUCCESS) *handle = a;
  return r;
}
CUresult MemRelease(CUmemGenericAllocationHandle handle) {
  if (g_state.allocations.count(handle) == 0) return CUDA_SUCCESS;  // host handles
  return FreeRaw(handle);
}

// ---- pools
CUresult PoolAllocImpl(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool) {
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  FakeState::Pool& p = g_state.pools[pool];
  if (p.used + bytes > p.reserved) {
    uint64_t grow = RoundUp(p.used + bytes - p.reserved, g_state.pool_chunk);
    if (!p.host) {
      if (g_state.used[p.device] + grow > g_state.physical[p.device]) {
        return CUDA_ERROR_OUT_OF_MEMORY;
      }
      g_state.used[p.device] += grow;
    }
    p.reserved += grow;
  }
  p.used += bytes;
  uint64_t a = g_state.next_address;
  g_state.next_address += RoundUp(bytes, 1 << 16);
  g_state.allocations[a] = {p.device, bytes};
  g_state.pool_allocations[a] = pool;
  *dptr = a;
  return CUDA_SUCCESS;
}
CUresult DeviceGetMemPool(CUmemoryPool* pool, CUdevice dev) {
  *pool = FakeDefaultPool(dev);
  return CUDA_SUCCESS;
}
CUresult MemAllocAsync(CUdeviceptr* dptr, size_t bytes, CUstream) {
  return PoolAllocImpl(dptr, bytes, FakeDefaultPool(g_state.current_device));
}
CUresult MemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytes, CUmemoryPool pool, CUstream) {
  return PoolAllocImpl(dptr, bytes, pool);
}
CUresult MemFreeAsync(CUdeviceptr dptr, CUstream) { return MemFree(dptr); }
CUresult PoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  static char handles[1024];
  static size_t next = 0;
  *pool = reinterpret_cast<CUmemoryPool>(&handles[next++ % sizeof(handles)]);
  FakeState::Pool p;
  p.host = props->location.type != CU_MEM_LOCATION_TYPE_DEVICE;
  p.device = p.host ? 0 : props->location.id;
  g_state.pools[*pool] = p;
  return CUDA_SUCCESS;
}
CUresult PoolTrim(CUmemoryPool pool, size_t keep) {
  FakeState::Pool& p = g_state.pools[pool];
  uint64_t floor = RoundUp(p.used > keep ? p.used : keep, g_state.pool_chunk);
  if (p.reserved > floor) {
    if (!p.host) g_state.used[p.device] -= p.reserved - floor;
    p.reserved = floor;
  }
  return CUDA_SUCCESS;
}
// A synchronization: every pool gives back what it reserves above its release threshold.
void ReleaseAboveThresholds() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  ++g_state.synchronizations;
  for (auto& [pool, p] : g_state.pools) {
    if (p.reserved > p.release_threshold) PoolTrim(pool, p.release_threshold);
  }
}
CUresult StreamSynchronize(CUstream) {
  ReleaseAboveThresholds();
  return CUDA_SUCCESS;
}
CUresult CtxSynchronize() {
  ReleaseAboveThresholds();
  return CUDA_SUCCESS;
}
CUresult CtxSynchronize2(CUcontext) { return CtxSynchronize(); }
CUresult PoolDestroy(CUmemoryPool pool) {
  PoolTrim(pool, 0);
  return CUDA_SUCCESS;
}
CUresult PoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void* value) {
  auto it = g_state.pools.find(pool);
  if (it == g_state.pools.end()) return CUDA_ERROR_INVALID_VALUE;
  cuuint64_t v = 0;
  if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)
    v = it->second.reserved;
  else if (attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT)
    v = it->second.used;
  else
    return CUDA_ERROR_INVALID_VALUE;
  std::memcpy(value, &v, sizeof(v));
  return CUDA_SUCCESS;
}
CUresult StreamIsCapturing(CUstream, CUstreamCaptureStatus* status) {
  *status = g_state.capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

// ---- arrays
CUresult ArrayCreateBytes(uint64_t bytes, uint64_t* handle) {
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  int dev = g_state.current_device;
  uint64_t total = bytes + g_state.array_padding;
  if (g_state.used[dev] + total > g_state.physical[dev]) return CUDA_ERROR_OUT_OF_MEMORY;
  g_state.used[dev] += total;
  *handle = g_state.next_address++;
  g_state.arrays[*handle] = {dev, total};
  return CUDA_SUCCESS;
}
uint64_t FakeArrayBytes(uint64_t w, uint64_t h, uint64_t d, CUarray_format f, unsigned c) {
  uint64_t elem = f == CU_AD_FORMAT_FLOAT ? 4 : (f == CU_AD_FORMAT_HALF ? 2 : 1);
  return w * (h ? h : 1) * (d ? d : 1) * elem * c;
}
CUresult ArrayCreate(CUarray* array, const CUDA_ARRAY_DESCRIPTOR* d) {
  uint64_t h = 0;
  CUresult r =
      ArrayCreateBytes(FakeArrayBytes(d->Width, d->Height, 0, d->Format, d->NumChannels), &h);
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<CUarray>(h);
  return r;
}
CUresult Array3DCreate(CUarray* array, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  uint64_t h = 0;
  CUresult r = ArrayCreateBytes(
      FakeArrayBytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels), &h);
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<CUarray>(h);
  return r;
}
CUresult MipmappedCreate(CUmipmappedArray* array, const CUDA_ARRAY3D_DESCRIPTOR* d,
                         unsigned int levels) {
  uint64_t total = 0, w = d->Width, h = d->Height, dd = d->Depth;
  for (unsigned l = 0; l < levels; ++l) {
    total += FakeArrayBytes(w, h, dd, d->Format, d->NumChannels);
    w = w > 1 ? w / 2 : 1;
    h = h > 1 ? h / 2 : h;
    dd = dd > 1 ? dd / 2 : dd;
  }
  uint64_t handle = 0;
  CUresult r = ArrayCreateBytes(total, &handle);
  if (r == CUDA_SUCCESS) *array = reinterpret_cast<CUmipmappedArray>(handle);
  return r;
}
CUresult DestroyArrayHandle(uint64_t h) {
  auto it = g_state.arrays.find(h);
  if (it == g_state.arrays.end()) return CUDA_ERROR_INVALID_HANDLE;
  g_state.used[it->second.first] -= it->second.second;
  g_state.arrays.erase(it);
  return CUDA_SUCCESS;
}
CUresult ArrayDestroy(CUarray a) { return DestroyArrayHandle(reinterpret_cast<uint64_t>(a)); }
CUresult MipmappedDestroy(CUmipmappedArray a) {
  return DestroyArrayHandle(reinterpret_cast<uint64_t>(a));
}
CUresult ArrayRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req, CUarray a, CUdevice) {
  auto it = g_state.arrays.find(reinterpret_cast<uint64_t>(a));
  if (it == g_state.arrays.end()) return CUDA_ERROR_INVALID_HANDLE;
  req->size = it->second.second;
  req->alignment = 512;
  return CUDA_SUCCESS;
}
CUresult MipmappedRequirements(CUDA_ARRAY_MEMORY_REQUIREMENTS* req, CUmipmappedArray a,
                               CUdevice d) {
  return ArrayRequirements(req, reinterpret_cast<CUarray>(a), d);
}

// ---- graphs: a CUgraph is a FakeGraph*, a node is (graph, index) encoded as a pointer into
// the node vector; child graph nodes follow the allocation nodes.
struct NodeRef {
  FakeGraph* graph;
  size_t index;
};
HandleStore<NodeRef> g_nodes;

CUresult GraphGetNodes(CUgraph graph, CUgraphNode* nodes, size_t* count) {
  auto* g = reinterpret_cast<FakeGraph*>(graph);
  size_t n = g->alloc_nodes.size() + g->children.size();
  if (nodes == nullptr) {
    *count = n;
    return CUDA_SUCCESS;
  }
  for (size_t i = 0; i < n && i < *count; ++i) {
    NodeRef* ref = g_nodes.Add();
    *ref = NodeRef{g, i};
    nodes[i] = reinterpret_cast<CUgraphNode>(ref);
  }
  *count = n;
  return CUDA_SUCCESS;
}
CUresult GraphNodeGetType(CUgraphNode node, CUgraphNodeType* type) {
  auto* ref = reinterpret_cast<NodeRef*>(node);
  *type = ref->index < ref->graph->alloc_nodes.size() ? CU_GRAPH_NODE_TYPE_MEM_ALLOC
                                                      : CU_GRAPH_NODE_TYPE_GRAPH;
  return CUDA_SUCCESS;
}
CUresult GraphMemAllocNodeGetParams(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  auto* ref = reinterpret_cast<NodeRef*>(node);
  *params = ref->graph->alloc_nodes[ref->index];
  return CUDA_SUCCESS;
}
CUresult GraphChildGetGraph(CUgraphNode node, CUgraph* graph) {
  auto* ref = reinterpret_cast<NodeRef*>(node);
  *graph =
      reinterpret_cast<CUgraph>(ref->graph->children[ref->index - ref->graph->alloc_nodes.size()]);
  return CUDA_SUCCESS;
}
CUresult GraphAddMemAllocNode(CUgraphNode* node, CUgraph graph, const CUgraphNode*, size_t,
                              CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  ++g_state.calls;
  auto* g = reinterpret_cast<FakeGraph*>(graph);
  g->alloc_nodes.push_back(*params);
  *node = nullptr;
  return CUDA_SUCCESS;
}
CUresult GraphInstantiateWithFlags(CUgraphExec* exec, CUgraph, unsigned long long) {
  ++g_state.calls;
  if (TakeFailure()) return CUDA_ERROR_UNKNOWN;
  *exec = reinterpret_cast<CUgraphExec>(g_state.next_address++);
  return CUDA_SUCCESS;
}
CUresult GraphInstantiateV2(CUgraphExec* exec, CUgraph g, CUgraphNode*, char*, size_t) {
  return GraphInstantiateWithFlags(exec, g, 0);
}
CUresult GraphInstantiateV1(CUgraphExec* exec, CUgraph g, CUgraphNode* n, char* log, size_t size) {
  return GraphInstantiateV2(exec, g, n, log, size);
}
CUresult GraphInstantiateWithParams(CUgraphExec* exec, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS*) {
  return GraphInstantiateWithFlags(exec, g, 0);
}
CUresult GraphExecDestroy(CUgraphExec) { return CUDA_SUCCESS; }
CUresult GraphLaunch(CUgraphExec, CUstream) {
  ++g_state.launches;
  ++g_state.launch_kinds[kGraph];
  return CUDA_SUCCESS;
}
CUresult GraphLaunchPtsz(CUgraphExec, CUstream) {
  ++g_state.launches;
  ++g_state.launch_kinds[kGraphPtsz];
  return CUDA_SUCCESS;
}

// ---- info, launches
CUresult MemGetInfo(size_t* free, size_t* total) {
  int d = g_state.current_device;
  *total = g_state.physical[d];
  *free = g_state.physical[d] - g_state.used[d];
  return CUDA_SUCCESS;
}
CUresult DeviceTotalMem(size_t* bytes, CUdevice dev) {
  *bytes = g_state.physical[dev];
  return CUDA_SUCCESS;
}
CUresult LaunchKernel(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                      unsigned, CUstream, void**, void**) {
  ++g_state.launches;
  ++g_state.launch_kinds[kKernel];
  return CUDA_SUCCESS;
}
CUresult LaunchKernelPtsz(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void**, void**) {
  g_state.launches += 100;
  ++g_state.launch_kinds[kKernelPtsz];
  return CUDA_SUCCESS;
}
template <int kKind>
CUresult LaunchEx(const CUlaunchConfig*, CUfunction, void**, void**) {
  ++g_state.launch_kinds[kKind];
  return CUDA_SUCCESS;
}
template <int kKind>
CUresult LaunchCoop(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                    unsigned, CUstream, void**) {
  ++g_state.launch_kinds[kKind];
  return CUDA_SUCCESS;
}
CUresult LegacyLaunch(CUfunction) {
  ++g_state.launch_kinds[kLaunch];
  return CUDA_SUCCESS;
}
CUresult LegacyGrid(CUfunction, int, int) {
  ++g_state.launch_kinds[kGrid];
  return CUDA_SUCCESS;
}
CUresult LegacyGridAsync(CUfunction, int, int, CUstream) {
  ++g_state.launch_kinds[kGridAsync];
  return CUDA_SUCCESS;
}

// ---- events and streams (the compute gate's tracking): events complete when recorded
struct FakeEvent {
  uint64_t t_ns = 0;
};
HandleStore<FakeEvent> g_events;  // live events; a reset frees them, as a context's end does
uint64_t FakeNow() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}
CUresult EventCreate(CUevent* ev, unsigned int) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  FakeEvent* e = g_events.Add();
  *ev = reinterpret_cast<CUevent>(e);
  ++g_state.events_live;
  return CUDA_SUCCESS;
}
CUresult EventDestroy(CUevent ev) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto* e = reinterpret_cast<FakeEvent*>(ev);
  if (!g_events.Remove(e)) return CUDA_ERROR_INVALID_HANDLE;
  --g_state.events_live;
  return CUDA_SUCCESS;
}
CUresult EventRecord(CUevent ev, CUstream) {
  reinterpret_cast<FakeEvent*>(ev)->t_ns = FakeNow();
  return CUDA_SUCCESS;
}
CUresult EventQuery(CUevent) { return CUDA_SUCCESS; }
CUresult EventSynchronize(CUevent) { return StreamSynchronize(nullptr); }
CUresult EventElapsed(float* ms, CUevent a, CUevent b) {
  double d = static_cast<double>(reinterpret_cast<FakeEvent*>(b)->t_ns) -
             static_cast<double>(reinterpret_cast<FakeEvent*>(a)->t_ns);
  *ms = static_cast<float>(d / 1e6);
  return CUDA_SUCCESS;
}
char g_stream_storage;
CUresult StreamCreate(CUstream* s, unsigned int) {
  *s = reinterpret_cast<CUstream>(&g_stream_storage);
  return CUDA_SUCCESS;
}
thread_local CUstreamCaptureMode t_capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
CUresult ExchangeCaptureMode(CUstreamCaptureMode* mode) {
  CUstreamCaptureMode old = t_capture_mode;
  t_capture_mode = *mode;
  *mode = old;
  return CUDA_SUCCESS;
}
CUresult DeviceGetUuid(CUuuid* uuid, CUdevice dev) {
  for (int i = 0; i < 16; ++i) uuid->bytes[i] = static_cast<char>(0x10 * dev + i);
  return CUDA_SUCCESS;
}

// ---- cuGetProcAddress: the driver's own table of (base, since, per-thread) -> function.
struct ProcEntry {
  const char* base;
  int since;
  bool per_thread;
  void* fn;
};
const ProcEntry* ProcTable(size_t* n) {
  static const ProcEntry kTable[] = {
      {"cuMemAlloc", 3020, false, reinterpret_cast<void*>(&MemAlloc)},
      {"cuMemFree", 3020, false, reinterpret_cast<void*>(&MemFree)},
      {"cuMemAllocAsync", 11020, false, reinterpret_cast<void*>(&MemAllocAsync)},
      {"cuLaunchKernel", 4000, false, reinterpret_cast<void*>(&LaunchKernel)},
      {"cuLaunchKernel", 7000, true, reinterpret_cast<void*>(&LaunchKernelPtsz)},
      {"cuCtxCreate", 3020, false, reinterpret_cast<void*>(&CtxCreate2)},
      {"cuCtxCreate", 11040, false, reinterpret_cast<void*>(&CtxCreate3)},
      {"cuCtxCreate", 12050, false, reinterpret_cast<void*>(&CtxCreate4)},
      {"cuGraphInstantiate", 10000, false, reinterpret_cast<void*>(&GraphInstantiateV1)},
      {"cuGraphInstantiate", 11000, false, reinterpret_cast<void*>(&GraphInstantiateV2)},
      {"cuGraphInstantiate", 12000, false, reinterpret_cast<void*>(&GraphInstantiateWithFlags)},
      {"cuCtxGetDevice", 2000, false, reinterpret_cast<void*>(&CtxGetDevice)},
  };
  *n = sizeof(kTable) / sizeof(kTable[0]);
  return kTable;
}
CUresult GetProcAddress2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult* status) {
  size_t n = 0;
  const ProcEntry* t = ProcTable(&n);
  bool pt = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
  bool has_pt = false;
  for (size_t i = 0; i < n; ++i) has_pt |= std::strcmp(t[i].base, symbol) == 0 && t[i].per_thread;
  if (!has_pt) pt = false;
  const ProcEntry* best = nullptr;
  for (size_t i = 0; i < n; ++i) {
    if (std::strcmp(t[i].base, symbol) != 0 || t[i].per_thread != pt || t[i].since > version) {
      continue;
    }
    if (best == nullptr || t[i].since > best->since) best = &t[i];
  }
  if (best == nullptr) {
    *pfn = nullptr;
    if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_ERROR_NOT_FOUND;
  }
  *pfn = best->fn;
  if (g_state.internal_proc_pointers && best->fn == reinterpret_cast<void*>(&MemAlloc)) {
    *pfn = reinterpret_cast<void*>(&MemAllocInternal);
  }
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}
CUresult GetProcAddress1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  return GetProcAddress2(symbol, pfn, version, flags, nullptr);
}

// ---- NVML: two devices; the host sees two foreign processes on each.
nvmlReturn_t NvmlMemoryInfo(nvmlDevice_t dev, nvmlMemory_t* m) {
  int i = static_cast<int>(reinterpret_cast<char*>(dev) - g_nvml_storage);
  m->total = g_state.physical[i];
  m->used = g_state.used[i] + (5ULL << 30);
  m->free = m->total - m->used;
  return NVML_SUCCESS;
}
nvmlReturn_t NvmlMemoryInfo2(nvmlDevice_t dev, nvmlMemory_v2_t* m) {
  nvmlMemory_t m1;
  NvmlMemoryInfo(dev, &m1);
  m->total = m1.total;
  m->used = m1.used;
  m->free = m1.free;
  m->reserved = 512ULL << 20;
  return NVML_SUCCESS;
}
template <typename Info>
nvmlReturn_t NvmlProcesses(nvmlDevice_t, unsigned int* count, Info* infos) {
  if (*count < 2) {
    *count = 2;
    return NVML_ERROR_INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; i < 2; ++i) {
    infos[i] = Info{};
    infos[i].pid = 90000 + i;
    infos[i].usedGpuMemory = 1ULL << 30;
  }
  *count = 2;
  return NVML_SUCCESS;
}
nvmlReturn_t NvmlIndex(nvmlDevice_t dev, unsigned int* index) {
  *index = static_cast<unsigned>(reinterpret_cast<char*>(dev) - g_nvml_storage);
  return NVML_SUCCESS;
}
nvmlReturn_t NvmlUuid(nvmlDevice_t dev, char* uuid, unsigned int length) {
  int i = static_cast<int>(reinterpret_cast<char*>(dev) - g_nvml_storage);
  std::snprintf(uuid, length, "GPU-fake-%d", i);
  return NVML_SUCCESS;
}

}  // namespace

FakeState& Fake() { return g_state; }
CUcontext FakePrimaryContext(int device) {
  return reinterpret_cast<CUcontext>(&g_primary_storage[device]);
}
CUmemoryPool FakeDefaultPool(int device) {
  CUmemoryPool p = reinterpret_cast<CUmemoryPool>(&g_pool_storage[device]);
  if (g_state.pools.count(p) == 0) {
    FakeState::Pool pool;
    pool.device = device;
    g_state.pools[p] = pool;
  }
  return p;
}
nvmlDevice_t FakeNvmlDevice(int index) {
  return reinterpret_cast<nvmlDevice_t>(&g_nvml_storage[index]);
}

DriverApi MakeFakeDriver() {
  g_nodes.Clear();
  g_contexts.Clear();
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    g_events.Clear();
  }
  g_state = FakeState();
  DriverApi api;
  api.cuMemAlloc_v2 = MemAlloc;
  api.cuMemAllocPitch_v2 = MemAllocPitch;
  api.cuMemAllocManaged = MemAllocManaged;
  api.cuMemAdvise = MemAdvise;
  api.cuMemFree_v2 = MemFree;
  api.cuMemAlloc = MemAllocV1;
  api.cuMemFree = MemFreeV1;
  api.cuMemGetInfo = MemGetInfoV1;
  api.cuMemCreate = MemCreate;
  api.cuMemRelease = MemRelease;
  api.cuMemAllocAsync = MemAllocAsync;
  api.cuMemAllocAsync_ptsz = MemAllocAsync;
  api.cuMemAllocFromPoolAsync = MemAllocFromPoolAsync;
  api.cuMemAllocFromPoolAsync_ptsz = MemAllocFromPoolAsync;
  api.cuMemFreeAsync = MemFreeAsync;
  api.cuMemFreeAsync_ptsz = MemFreeAsync;
  api.cuMemPoolCreate = PoolCreate;
  api.cuMemPoolDestroy = PoolDestroy;
  api.cuMemPoolTrimTo = PoolTrim;
  api.cuMemPoolGetAttribute = PoolGetAttribute;
  api.cuDeviceGetMemPool = DeviceGetMemPool;
  api.cuStreamIsCapturing = StreamIsCapturing;
  api.cuStreamIsCapturing_ptsz = StreamIsCapturing;
  api.cuArrayCreate_v2 = ArrayCreate;
  api.cuArray3DCreate_v2 = Array3DCreate;
  api.cuArrayDestroy = ArrayDestroy;
  api.cuMipmappedArrayCreate = MipmappedCreate;
  api.cuMipmappedArrayDestroy = MipmappedDestroy;
  api.cuArrayGetMemoryRequirements = ArrayRequirements;
  api.cuMipmappedArrayGetMemoryRequirements = MipmappedRequirements;
  api.cuGraphGetNodes = GraphGetNodes;
  api.cuGraphNodeGetType = GraphNodeGetType;
  api.cuGraphMemAllocNodeGetParams = GraphMemAllocNodeGetParams;
  api.cuGraphChildGraphNodeGetGraph = GraphChildGetGraph;
  api.cuGraphAddMemAllocNode = GraphAddMemAllocNode;
  api.cuGraphInstantiateWithFlags = GraphInstantiateWithFlags;
  api.cuGraphInstantiate = GraphInstantiateV1;
  api.cuGraphInstantiate_v2 = GraphInstantiateV2;
  api.cuGraphInstantiateWithParams = GraphInstantiateWithParams;
  api.cuGraphInstantiateWithParams_ptsz = GraphInstantiateWithParams;
  api.cuGraphExecDestroy = GraphExecDestroy;
  api.cuGraphLaunch = GraphLaunch;
  api.cuGraphLaunch_ptsz = GraphLaunchPtsz;
  api.cuLaunchKernelEx = LaunchEx<kEx>;
  api.cuLaunchKernelEx_ptsz = LaunchEx<kExPtsz>;
  api.cuLaunchCooperativeKernel = LaunchCoop<kCoop>;
  api.cuLaunchCooperativeKernel_ptsz = LaunchCoop<kCoopPtsz>;
  api.cuLaunch = LegacyLaunch;
  api.cuLaunchGrid = LegacyGrid;
  api.cuLaunchGridAsync = LegacyGridAsync;
  api.cuEventCreate = EventCreate;
  api.cuEventDestroy_v2 = EventDestroy;
  api.cuEventRecord = EventRecord;
  api.cuEventRecord_ptsz = EventRecord;
  api.cuEventQuery = EventQuery;
  api.cuEventSynchronize = EventSynchronize;
  api.cuStreamSynchronize = StreamSynchronize;
  api.cuStreamSynchronize_ptsz = StreamSynchronize;
  api.cuCtxSynchronize = CtxSynchronize;
  api.cuCtxSynchronize_v2 = CtxSynchronize2;
  api.cuEventElapsedTime = EventElapsed;
  api.cuStreamCreate = StreamCreate;
  api.cuThreadExchangeStreamCaptureMode = ExchangeCaptureMode;
  api.cuCtxGetCurrent = CtxGetCurrent;
  api.cuCtxGetDevice = CtxGetDevice;
  api.cuCtxCreate = CtxCreate2;
  api.cuCtxCreate_v2 = CtxCreate2;
  api.cuCtxCreate_v3 = CtxCreate3;
  api.cuCtxCreate_v4 = CtxCreate4;
  api.cuCtxDestroy = CtxDestroy;
  api.cuCtxDestroy_v2 = CtxDestroy;
  api.cuDevicePrimaryCtxRetain = PrimaryRetain;
  api.cuDevicePrimaryCtxRelease = PrimaryRelease;
  api.cuDevicePrimaryCtxRelease_v2 = PrimaryRelease;
  api.cuDevicePrimaryCtxReset = PrimaryReset;
  api.cuDevicePrimaryCtxReset_v2 = PrimaryReset;
  api.cuDeviceGetUuid = DeviceGetUuid;
  api.cuMemGetInfo_v2 = MemGetInfo;
  api.cuDeviceTotalMem_v2 = DeviceTotalMem;
  api.cuLaunchKernel = LaunchKernel;
  api.cuLaunchKernel_ptsz = LaunchKernelPtsz;
  api.cuGetProcAddress = GetProcAddress1;
  api.cuGetProcAddress_v2 = GetProcAddress2;
  return api;
}

NvmlApi MakeFakeNvml() {
  NvmlApi api;
  api.nvmlDeviceGetMemoryInfo = NvmlMemoryInfo;
  api.nvmlDeviceGetMemoryInfo_v2 = NvmlMemoryInfo2;
  api.nvmlDeviceGetComputeRunningProcesses = NvmlProcesses<nvmlProcessInfo_v1_t>;
  api.nvmlDeviceGetComputeRunningProcesses_v2 = NvmlProcesses<nvmlProcessInfo_v2_t>;
  api.nvmlDeviceGetComputeRunningProcesses_v3 = NvmlProcesses<nvmlProcessInfo_t>;
  api.nvmlDeviceGetIndex = NvmlIndex;
  api.nvmlDeviceGetUUID = NvmlUuid;
  return api;
}

void InstallFake(uint64_t limit, uint64_t overhead, uint64_t limit1) {
  DriverApi cuda = MakeFakeDriver();
  NvmlApi nvml = MakeFakeNvml();
  Config config;
  config.memory_limit[0] = limit;
  config.region_limit[0] = limit;
  config.memory_limit[1] = limit1;
  config.region_limit[1] = limit1;
  config.any_memory_limit = limit != kNoLimit || limit1 != kNoLimit;
  config.context_overhead = overhead;
  config.device_count = 2;
  InstallForTest(cuda, nvml, config, nullptr, false);
}

uint64_t SliceUsed(int device) { return GetRuntime().accountant.SliceUsed(device); }

}  // namespace vgpu::intercept::testing
