// Internal interface of the simulated CUDA driver (libcuda.so.1). Every .cc in this folder
// implements a group of driver API entry points on the objects declared here.
//
// cuda.h is included with __CUDA_API_VERSION_INTERNAL, which makes it declare every exported name
// as itself (cuMemAlloc is the 32-bit legacy entry point, cuMemAlloc_v2 the current one,
// cuLaunchKernel_ptsz the per-thread-stream one): each definition here is checked against the
// toolkit's own prototype by the compiler, so the ABI is the real one.
//
// Concurrency: one process-wide mutex (Driver::mu) guards all driver objects; the shared state's
// robust mutex is taken inside it when device memory or the timeline is touched, never the other
// way round. Nothing sleeps with either lock held: synchronizing calls compute the simulated end
// time under the lock, release it, then sleep until that time.
//
// Errors: entry points return CUresult and never let a C++ exception out (SIMGPU_GUARD).
#pragma once

#ifndef __CUDA_API_VERSION_INTERNAL
#define __CUDA_API_VERSION_INTERNAL 1
#endif
#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <unordered_set>
#include <vector>

#include "simgpu/config.h"
#include "simgpu/image.h"
#include "simgpu/shared_state.h"

// Marks an exported driver entry point. The linker version script is what finally decides the
// export list (gen/libcuda.map, generated from the toolkit's libcuda stub).
#define SIMGPU_API extern "C" __attribute__((visibility("default")))

namespace vgpu::simgpu::driver {

// Runs `body` (a lambda returning CUresult) and turns any C++ exception into an error code.
template <typename F>
CUresult Guarded(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  } catch (...) {
    return CUDA_ERROR_UNKNOWN;
  }
}
#define SIMGPU_GUARD(...) return ::vgpu::simgpu::driver::Guarded([&]() -> CUresult { __VA_ARGS__ })

// Handle tags: the first field of every object a handle points to. Destroyed objects keep their
// memory (kDead) so that a stale handle is rejected instead of read after free.
enum class Tag : uint32_t {
  kDead = 0,
  kContext = 0x5ec7c701,
  kStream,
  kEvent,
  kModule,
  kFunction,
  kGraph,
  kGraphNode,
  kGraphExec,
  kPool,
  kArray,
  kMipmap,
  kLibrary,
};

// Destroyed objects keep their memory, tagged kDead, so that a stale handle is refused instead of
// read after free; later objects of the same type reuse that memory. Live objects stay listed
// too: what a program never destroys is owned by the driver, as on a real one. Needs D().mu.
template <typename T>
class Recycler {
 public:
  static T* Make() {
    Lists& l = GetLists();
    T* t;
    if (l.free.empty()) {
      t = new T;
    } else {
      t = l.free.back();
      l.free.pop_back();
      *t = T();
    }
    l.live.insert(t);
    return t;
  }
  static void Retire(T* t) {
    Lists& l = GetLists();
    if (l.live.erase(t) == 0) return;  // not made here, or retired already
    t->tag = Tag::kDead;
    l.free.push_back(t);
  }

 private:
  struct Lists {
    std::unordered_set<T*> live;
    std::vector<T*> free;
  };
  static Lists& GetLists() {
    static auto* lists = new Lists;
    return *lists;
  }
};

inline constexpr uint64_t kAllocAlign = 512;          // cuMemAlloc alignment and accounting unit
inline constexpr uint64_t kGranularity = 2ULL << 20;  // VMM and pool growth granularity
inline constexpr uint64_t kPitchAlign = 512;          // cuMemAllocPitch row alignment

inline uint64_t RoundUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

struct Context;
struct Pool;
struct Graph;

struct Stream {
  Tag tag = Tag::kStream;
  enum class Kind { kUser, kLegacy, kPerThread } kind = Kind::kUser;
  Context* ctx = nullptr;
  unsigned flags = 0;  // CU_STREAM_NON_BLOCKING or 0
  int priority = 0;
  uint64_t id = 0;
  uint64_t last_end_ns = 0;  // simulated time at which all work queued so far is done
  Graph* capture = nullptr;  // graph being captured into, or null
  CUstreamCaptureMode capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  uint64_t capture_id = 0;
  std::vector<struct GraphNode*> capture_deps;
};

// The CUDA runtime's context-local storage (export_tables.cc): a value per key, with the callback
// to run when the context is destroyed (not when the key is deleted).
using LocalStorageDtor = void (*)(CUcontext ctx, void* key, void* value);
struct LocalValue {
  void* value = nullptr;
  LocalStorageDtor dtor = nullptr;
};
using LocalStorage = std::map<void*, LocalValue>;

struct Context {
  Tag tag = Tag::kContext;
  int device = 0;  // CUDA ordinal
  int phys = 0;    // index in the configuration / shared state
  unsigned flags = 0;
  bool primary = false;
  bool active = false;  // created and not destroyed (primary: retained at least once)
  int retains = 0;      // primary contexts only
  uint64_t id = 0;
  Stream* legacy = nullptr;
  uint64_t blocking_end_ns = 0;  // latest end of work in blocking streams
  uint64_t all_end_ns = 0;       // latest end of any work in this context
  size_t limits[16] = {};
  CUfunc_cache cache_config = CU_FUNC_CACHE_PREFER_NONE;
  std::vector<Stream*> streams;  // user streams created in this context
  LocalStorage local_storage;
};

struct Event {
  Tag tag = Tag::kEvent;
  Context* ctx = nullptr;
  unsigned flags = 0;
  bool recorded = false;
  uint64_t time_ns = 0;
};

// kModule: a module global (cuModuleGetGlobal), owned by its module and not charged.
enum class AllocKind { kDevice, kPitch, kManaged, kHost, kPool, kVmm, kGraph, kModule };

// Host memory standing in for device memory: real, readable and writable.
struct Backing {
  void* ptr = nullptr;
  size_t len = 0;
  bool mmapped = false;
};
// ptr == nullptr on failure. `low32`: below 2 GiB, for the 32-bit legacy entry points.
Backing AllocateBacking(size_t bytes, bool low32 = false);
void FreeBacking(Backing* b);

struct Allocation {
  uintptr_t base = 0;
  size_t size = 0;  // bytes the caller asked for (pitch * height for pitched)
  AllocKind kind = AllocKind::kDevice;
  Context* ctx = nullptr;  // owning context (null for VMM mappings, pool allocations)
  int device = 0;          // ordinal
  int phys = 0;
  uint64_t charged = 0;             // bytes charged to the device for this allocation itself
  Backing backing;                  // not owned for kVmm mappings
  Pool* pool = nullptr;             // kPool / kGraph
  unsigned host_flags = 0;          // cuMemHostAlloc flags
  struct VmmHandle* vmm = nullptr;  // kVmm: the physical allocation mapped here
  unsigned long long access = 0;    // kVmm: CU_MEM_ACCESS_FLAGS_PROT_* set by cuMemSetAccess
  uint64_t uvm_first = 0;           // kManaged: its first page in the process's UVM model
  uint64_t uvm_pages = 0;           // kManaged: its pages (2 MiB)
  bool prefer_device = false;       // kManaged: advised SET_PREFERRED_LOCATION(device)
};

struct Pool {
  Tag tag = Tag::kPool;
  int device = 0;
  int phys = 0;
  bool graph_pool = false;
  bool destroyed = false;
  CUmemPoolProps props{};
  uint64_t reserved = 0;
  uint64_t used = 0;
  uint64_t reserved_high = 0;
  uint64_t used_high = 0;
  uint64_t release_threshold = 0;
  int reuse_follow_event = 1, reuse_opportunistic = 1, reuse_internal = 1;
  size_t outstanding = 0;
};

// The process-wide driver state.
struct Driver {
  std::mutex mu;
  bool initialized = false;
  CUresult init_result = CUDA_ERROR_NOT_INITIALIZED;
  Config config;
  std::unique_ptr<SharedState> state;
  int slot = -1;
  std::vector<int> visible;                      // CUDA ordinal -> shared-state device record
  std::vector<DeviceSpec> specs;                 // per ordinal (a MIG device: its instance's)
  std::vector<Context*> primaries;               // per ordinal
  std::vector<Pool*> default_pools;              // per ordinal
  std::vector<Pool*> current_pools;              // per ordinal
  std::vector<Pool*> graph_pools;                // per ordinal
  std::map<uintptr_t, Allocation*> allocations;  // by base address
  uint64_t next_id = 1;
};
Driver& D();

// --- Initialization and lookups (process.cc). "Locked" functions need D().mu held. ---
// Sets the log tag and level (VGPU_SIMGPU_LOG_LEVEL); cuInit does, and calls that can come
// before it (cuGetExportTable) do too.
void SetUpLogging();
CUresult CheckInit();
CUresult CheckDevice(CUdevice dev);
const DeviceSpec& Spec(int ordinal);  // of a CUDA ordinal (a MIG device's: its own memory, SMs)
// The calling thread's current context, or CUDA_ERROR_INVALID_CONTEXT.
CUresult CurrentContext(Context** out);
Context* AsContext(CUcontext c);  // null unless a live context
std::vector<Context*>& ThreadContextStack();
// Activates / deactivates a context's device share: counts it in the shared process record and
// charges or returns the configured context memory.
CUresult ActivateContextLocked(Context* ctx);
void DeactivateContextLocked(Context* ctx);

// A context's local storage, emptied (D().mu held); then, with no lock held, the destroy callbacks
// of what it held, as the real driver runs them when a context goes away (destroy, primary reset,
// last primary release).
LocalStorage TakeLocalStorageLocked(Context* ctx);
void RunLocalStorageDestructors(Context* ctx, const LocalStorage& storage);

// Frees what a context owns (allocations, streams) when it is destroyed or reset.
void ReleaseContextResourcesLocked(Context* ctx);
// Waits until all work queued in `ctx` is done, then trims pools (as a real synchronize does).
CUresult SynchronizeContext(Context* ctx);

// Device memory accounting against the shared state (takes the shared lock).
bool ChargeLocked(int phys, uint64_t bytes);
void UnchargeLocked(int phys, uint64_t bytes);
uint64_t DeviceUsedBytes(int phys, bool reclaim);

// Allocation registry.
void AddAllocationLocked(Allocation* a);
Allocation* RemoveAllocationLocked(uintptr_t base);  // exact base, or null
Allocation* FindAllocationLocked(uintptr_t p);       // containing p, or null
// CUDA_SUCCESS if [p, p + n) lies within one allocation (device, managed, pinned host or mapped
// VMM range), CUDA_ERROR_INVALID_VALUE otherwise.
CUresult CheckRangeLocked(uintptr_t p, size_t n);
// Frees an allocation made by cuMemAlloc/Pitch/Managed/pool (not VMM or host) and its charge.
void FreeAllocationLocked(Allocation* a);

// --- Managed memory on the UVM model (managed.cc). "Locked": D().mu held. ---
// Registers / forgets the pages of a managed allocation (a->size, a->phys set).
void ManagedAllocatedLocked(Allocation* a);
void ManagedFreedLocked(Allocation* a);
// SET_PREFERRED_LOCATION: `device` true makes the allocation's pages high priority (never
// evicted), false low priority.
void ManagedPreferLocked(Allocation* a, bool device);
struct ManagedCost {
  uint64_t stall_ns = 0;  // time the touching stream waits for faults and write-backs
  uint64_t faults = 0;    // pages made resident
  uint64_t remote = 0;    // pages served over the link without becoming resident
};
// The device touches [p, p + n) of managed allocation `a` (a kernel, a prefetch).
ManagedCost ManagedTouchLocked(Allocation* a, uintptr_t p, uint64_t n, bool write);
// Moves the resident pages of [p, p + n) to the host; returns the write-back time.
uint64_t ManagedEvictLocked(Allocation* a, uintptr_t p, uint64_t n);
// Managed pages of every process resident on device record `phys`.
uint64_t ManagedResidentBytes(int phys);

// --- Streams and the timeline (stream.cc). ---
// Resolves a stream handle; `per_thread` selects what 0 means (the _ptsz/_ptds variants).
CUresult ResolveStreamLocked(CUstream h, bool per_thread, Stream** out);
uint64_t StreamReadyLocked(const Stream* s);
void StreamAdvanceLocked(Stream* s, uint64_t end_ns);
// Queues a kernel of `duration_ns` on `s` and advances it. May drop and retake `lock` while the
// device queue is full.
CUresult EnqueueKernelLocked(std::unique_lock<std::mutex>& lock, Stream* s, uint64_t duration_ns,
                             uint64_t* end_ns = nullptr);
// An instant operation (copy, memset, event) on `s`: returns the time it happens and advances s.
uint64_t EnqueueInstantLocked(Stream* s);
// A copy on `s`: host-to-device and device-to-host copies take their time on the device's host
// link (timeline.h EnqueueCopy); other copies are instant. Returns when it ends and advances s.
uint64_t EnqueueCopyLocked(Stream* s, const CUDA_MEMCPY3D& c);
// Sleeps (with no lock held) until the simulated time `t_ns`; behind a stuck kernel
// (timeline.h), until it is cleared and then until the resolved time.
void SleepUntil(uint64_t t_ns);
// `t_ns` with the stuck episodes that were cleared resolved (timeline.h ResolveTime).
uint64_t Due(uint64_t t_ns);
// Trims the pools of `ordinal` (or all when < 0) down to their release thresholds.
void TrimPoolsOnSyncLocked(int ordinal);

// --- Modules and kernels (module.cc, launch.cc). ---
struct Function;

// Loads a module (`library` false: needs a current context) or a library from `image` (a fatbin
// wrapper, a fatbin, an ELF cubin or PTX text): the export tables' module loads come here too.
CUresult LoadModuleImage(const void* image, bool library, void** out);
// Decompresses fatbin entries with the system's LZ4 and Zstandard libraries (codecs.cc).
const Decompressor& SystemDecompressor();

// A loaded module or library. An image that can be read (image.h) has exactly its kernels and
// globals; any other image loads too, and then any name looked up in it yields a function with an
// unknown parameter layout (docs/simgpu.md explains how a kernel's duration is chosen).
struct Module {
  Tag tag = Tag::kModule;
  bool library = false;
  bool unloaded = false;
  bool symbols_known = false;  // the image was read: other names are not found
  std::map<std::string, Function*> functions;
  std::map<std::string, ImageGlobal> globals;     // as the image declares them
  std::map<std::string, Allocation*> global_mem;  // made at the first lookup of each
};

// A kernel. CUfunction and CUkernel handles both point here.
struct Function {
  Tag tag = Tag::kFunction;
  Module* module = nullptr;
  std::string name;
  bool sleep_convention = false;  // the name contains kSleepKernelMarker
  bool touch_convention = false;  // the name contains kTouchKernelMarker
  bool params_known = false;      // from the image: `params` and `param_bytes` hold
  std::vector<KernelParam> params;
  uint32_t param_bytes = 0;
  int attributes[CU_FUNC_ATTRIBUTE_MAX] = {};
};

// Kernels whose name contains this take their duration in nanoseconds from their first parameter
// (a 64-bit integer).
inline constexpr const char* kSleepKernelMarker = "sim_sleep_ns";
// Kernels whose name contains this run for their first parameter's nanoseconds (a 64-bit
// integer) after touching the memory range given by their second (a CUdeviceptr) and third (a
// 64-bit byte count) parameters: managed pages in it fault in first (managed.cc).
inline constexpr const char* kTouchKernelMarker = "sim_touch";

// Simulated duration of a launch (see docs/simgpu.md, "Kernel time").
uint64_t KernelDurationNs(const Function* f, const DeviceSpec& spec, uint64_t grid_blocks,
                          uint64_t block_threads, void** params, void** extra);
Function* AsFunction(void* handle);  // CUfunction or CUkernel, null if not one
struct LaunchArgs {
  Function* f;
  unsigned grid[3];
  unsigned block[3];
  unsigned shared_bytes;
  void** params;
  void** extra;
};
CUresult ValidateLaunch(const LaunchArgs& a, const DeviceSpec& spec);

// --- Pools (pool.cc), used by graphs too. ---
Pool* DefaultPoolLocked(int ordinal);
Pool* GraphPoolLocked(int ordinal);
CUresult PoolAllocLocked(Pool* pool, size_t bytes, CUdeviceptr* out, AllocKind kind);
void PoolFreeLocked(Allocation* a);

// --- Copies (copy.cc). ---
// A 3D copy between any two memory kinds; validates device ranges.
CUresult Copy3DLocked(const CUDA_MEMCPY3D& c);
CUresult MemsetLocked(uintptr_t dst, size_t pitch, unsigned value, unsigned elem_size, size_t width,
                      size_t height);

// --- Graphs (graph.cc, capture.cc). ---
struct GraphNode {
  Tag tag = Tag::kGraphNode;
  struct Graph* graph = nullptr;
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  std::vector<GraphNode*> deps;
  CUDA_KERNEL_NODE_PARAMS kernel{};  // kernelParams/extra are not kept (not copyable)
  uint64_t duration_ns = 0;          // kernels: fixed when the node is made
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUDA_MEMCPY3D memcpy{};
  CUDA_HOST_NODE_PARAMS host{};
  CUevent event = nullptr;
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};  // alloc.dptr: the address, fixed when the node is made
  CUdeviceptr free_ptr = 0;
};

struct Graph {
  Tag tag = Tag::kGraph;
  std::vector<GraphNode*> nodes;  // in creation order, which is a topological order
};

// Adds a node of `type` to `g` after `deps`; the caller fills in its parameters.
CUresult AddNodeLocked(Graph* g, const CUgraphNode* deps, size_t n, CUgraphNodeType type,
                       GraphNode** out);
Graph* AsGraph(CUgraph g);

// Capture hooks (capture.cc): true if `s` is capturing and the operation was recorded.
bool CaptureKernelLocked(Stream* s, const LaunchArgs& a, uint64_t duration_ns, CUresult* rc);
bool CaptureMemcpyLocked(Stream* s, const CUDA_MEMCPY3D& c, CUresult* rc);
bool CaptureMemsetLocked(Stream* s, const CUDA_MEMSET_NODE_PARAMS& p, CUresult* rc);

// --- CUDA arrays (array.cc). ---
// Bytes of one channel of `f` for the plain formats, of one pixel for packed, planar and
// block-compressed ones (rounded up); 0 if the format is unknown.
size_t FormatBytes(CUarray_format f);

// An array's memory is stored linearly: rows of width * element bytes, then slices.
struct ArrayObj {
  Tag tag = Tag::kArray;
  CUDA_ARRAY3D_DESCRIPTOR desc{};
  size_t row_bytes = 0;  // bytes per row
  size_t rows = 0;       // rows per slice (at least 1)
  size_t bytes = 0;      // all slices
  uint8_t* data = nullptr;
  Backing backing;  // owned unless the array is a mipmap level
  Context* ctx = nullptr;
  int phys = 0;
  uint64_t charged = 0;
  bool level = false;  // a level of a mipmapped array (owned by it)
};
ArrayObj* AsArray(CUarray a);
void ReleaseContextArraysLocked(Context* ctx);

}  // namespace vgpu::simgpu::driver
