// CUDA graphs: kernel, memset, memcpy, host, event, empty and memory (alloc/free) nodes;
// instantiation copies the nodes; a launch runs them in order on the stream, so the graph's
// kernels take their simulated time on the device timeline one after another.
//
// Graph memory: an alloc node fixes its address when it is made (a PROT_NONE reservation); a
// launch opens it and charges the device's graph pool; a free node (or cuMemFreeAsync) returns it
// to the pool, which keeps it reserved until cuDeviceGraphMemTrim.
#include <sys/mman.h>

#include <algorithm>
#include <thread>

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

struct GraphExec {
  Tag tag = Tag::kGraphExec;
  std::vector<GraphNode> nodes;
  unsigned long long flags = 0;
};

GraphNode* AsNode(CUgraphNode n) {
  auto* node = reinterpret_cast<GraphNode*>(n);
  if (node == nullptr || node->tag != Tag::kGraphNode) return nullptr;
  return node;
}

GraphExec* AsExec(CUgraphExec e) {
  auto* x = reinterpret_cast<GraphExec*>(e);
  if (x == nullptr || x->tag != Tag::kGraphExec) return nullptr;
  return x;
}

size_t PageRound(size_t n) { return RoundUp(n, 4096); }

// Runs an alloc node: opens its address range and charges the graph pool.
CUresult RunAllocLocked(const GraphNode& n) {
  uintptr_t base = static_cast<uintptr_t>(n.alloc.dptr);
  if (D().allocations.count(base) != 0) return CUDA_ERROR_INVALID_VALUE;  // still allocated
  int ordinal = n.alloc.poolProps.location.id;
  Pool* pool = GraphPoolLocked(ordinal);
  uint64_t size = RoundUp(n.alloc.bytesize, kAllocAlign);
  uint64_t need = pool->used + size;
  if (need > pool->reserved) {
    uint64_t grow = RoundUp(need - pool->reserved, kGranularity);
    if (!ChargeLocked(pool->phys, grow)) return CUDA_ERROR_OUT_OF_MEMORY;
    pool->reserved += grow;
  }
  if (mprotect(reinterpret_cast<void*>(base), PageRound(n.alloc.bytesize),
               PROT_READ | PROT_WRITE) != 0) {
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  pool->used += size;
  pool->used_high = std::max(pool->used_high, pool->used);
  pool->reserved_high = std::max(pool->reserved_high, pool->reserved);
  pool->outstanding++;
  auto* a = new Allocation;
  a->base = base;
  a->size = n.alloc.bytesize;
  a->kind = AllocKind::kGraph;
  a->device = ordinal;
  a->phys = pool->phys;
  a->charged = size;
  a->pool = pool;
  AddAllocationLocked(a);
  return CUDA_SUCCESS;
}

CUresult RunNodeLocked(std::unique_lock<std::mutex>& lock, const GraphNode& n, Stream* s) {
  switch (n.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL:
      return EnqueueKernelLocked(lock, s, n.duration_ns);
    case CU_GRAPH_NODE_TYPE_MEMSET:
      EnqueueInstantLocked(s);
      return MemsetLocked(static_cast<uintptr_t>(n.memset.dst), n.memset.pitch, n.memset.value,
                          n.memset.elementSize, n.memset.width, n.memset.height);
    case CU_GRAPH_NODE_TYPE_MEMCPY:
      if (CUresult rc = Copy3DLocked(n.memcpy); rc != CUDA_SUCCESS) return rc;
      EnqueueCopyLocked(s, n.memcpy);
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_HOST: {
      uint64_t at = EnqueueInstantLocked(s);
      CUhostFn fn = n.host.fn;
      void* data = n.host.userData;
      std::thread([at, fn, data] {
        SleepUntil(at);
        fn(data);
      }).detach();
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: {
      auto* ev = reinterpret_cast<Event*>(n.event);
      if (ev == nullptr || ev->tag != Tag::kEvent) return CUDA_ERROR_INVALID_HANDLE;
      ev->time_ns = EnqueueInstantLocked(s);
      ev->recorded = true;
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: {
      auto* ev = reinterpret_cast<Event*>(n.event);
      if (ev == nullptr || ev->tag != Tag::kEvent) return CUDA_ERROR_INVALID_HANDLE;
      if (ev->recorded) StreamAdvanceLocked(s, ev->time_ns);
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
      EnqueueInstantLocked(s);
      return RunAllocLocked(n);
    case CU_GRAPH_NODE_TYPE_MEM_FREE: {
      EnqueueInstantLocked(s);
      Allocation* a = RemoveAllocationLocked(static_cast<uintptr_t>(n.free_ptr));
      if (a == nullptr) return CUDA_ERROR_INVALID_VALUE;
      FreeAllocationLocked(a);
      return CUDA_SUCCESS;
    }
    case CU_GRAPH_NODE_TYPE_EMPTY:
      return CUDA_SUCCESS;
    default:
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

CUresult Instantiate(CUgraphExec* out, CUgraph graph, unsigned long long flags) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Graph* g = AsGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  GraphExec* x = Recycler<GraphExec>::Make();
  x->flags = flags;
  for (GraphNode* n : g->nodes) x->nodes.push_back(*n);
  *out = reinterpret_cast<CUgraphExec>(x);
  return CUDA_SUCCESS;
}

CUresult LaunchGraph(CUgraphExec exec, CUstream h, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::unique_lock<std::mutex> lock(D().mu);
  GraphExec* x = AsExec(exec);
  if (x == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture != nullptr) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  for (const GraphNode& n : x->nodes) {
    if (CUresult rc = RunNodeLocked(lock, n, s); rc != CUDA_SUCCESS) return rc;
    if (x->tag != Tag::kGraphExec) return CUDA_ERROR_INVALID_HANDLE;  // destroyed meanwhile
  }
  return CUDA_SUCCESS;
}

template <typename Params>
CUresult AddKernel(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n,
                   const Params* p, CUfunction func) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  LaunchArgs a{AsFunction(func),
               {p->gridDimX, p->gridDimY, p->gridDimZ},
               {p->blockDimX, p->blockDimY, p->blockDimZ},
               p->sharedMemBytes,
               p->kernelParams,
               p->extra};
  if (a.f == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const DeviceSpec& spec = Spec(ctx->device);
  if (CUresult rc = ValidateLaunch(a, spec); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Graph* g = AsGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphNode* node = nullptr;
  if (CUresult rc = AddNodeLocked(g, deps, n, CU_GRAPH_NODE_TYPE_KERNEL, &node); rc) return rc;
  node->kernel.func = func;
  node->kernel.gridDimX = a.grid[0];
  node->kernel.gridDimY = a.grid[1];
  node->kernel.gridDimZ = a.grid[2];
  node->kernel.blockDimX = a.block[0];
  node->kernel.blockDimY = a.block[1];
  node->kernel.blockDimZ = a.block[2];
  node->kernel.sharedMemBytes = a.shared_bytes;
  node->duration_ns =
      KernelDurationNs(a.f, spec, uint64_t{a.grid[0]} * a.grid[1] * a.grid[2],
                       uint64_t{a.block[0]} * a.block[1] * a.block[2], a.params, a.extra);
  *out = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

// Adds a node whose parameters `fill` sets, with the lock held.
template <typename F>
CUresult AddSimple(CUgraphNode* out, CUgraph graph, const CUgraphNode* deps, size_t n,
                   CUgraphNodeType type, F&& fill) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Graph* g = AsGraph(graph);
  if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
  GraphNode* node = nullptr;
  if (CUresult rc = AddNodeLocked(g, deps, n, type, &node); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = fill(node); rc != CUDA_SUCCESS) {
    g->nodes.pop_back();
    Recycler<GraphNode>::Retire(node);
    return rc;
  }
  *out = reinterpret_cast<CUgraphNode>(node);
  return CUDA_SUCCESS;
}

}  // namespace

Graph* AsGraph(CUgraph g) {
  auto* graph = reinterpret_cast<Graph*>(g);
  if (graph == nullptr || graph->tag != Tag::kGraph) return nullptr;
  return graph;
}

CUresult AddNodeLocked(Graph* g, const CUgraphNode* deps, size_t n, CUgraphNodeType type,
                       GraphNode** out) {
  if (n > 0 && deps == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    GraphNode* d = AsNode(deps[i]);
    if (d == nullptr || d->graph != g) return CUDA_ERROR_INVALID_VALUE;
  }
  GraphNode* node = Recycler<GraphNode>::Make();
  node->graph = g;
  node->type = type;
  for (size_t i = 0; i < n; ++i) node->deps.push_back(AsNode(deps[i]));
  g->nodes.push_back(node);
  *out = node;
  return CUDA_SUCCESS;
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuGraphCreate(CUgraph* phGraph, unsigned int flags) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
    if (phGraph == nullptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    *phGraph = reinterpret_cast<CUgraph>(Recycler<Graph>::Make());
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuGraphDestroy(CUgraph hGraph) {
  SIMGPU_GUARD({
    std::lock_guard<std::mutex> lock(D().mu);
    Graph* g = AsGraph(hGraph);
    if (g == nullptr) return CUDA_ERROR_INVALID_VALUE;
    for (GraphNode* n : g->nodes) Recycler<GraphNode>::Retire(n);
    g->nodes.clear();
    Recycler<Graph>::Retire(g);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuGraphAddKernelNode_v2(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                            size_t n, const CUDA_KERNEL_NODE_PARAMS* p) {
  SIMGPU_GUARD({
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    CUfunction f = p->func != nullptr ? p->func : reinterpret_cast<CUfunction>(p->kern);
    return AddKernel(ph, g, deps, n, p, f);
  });
}

SIMGPU_API CUresult cuGraphAddKernelNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                         size_t n, const CUDA_KERNEL_NODE_PARAMS_v1* p) {
  SIMGPU_GUARD({
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return AddKernel(ph, g, deps, n, p, p->func);
  });
}

SIMGPU_API CUresult cuGraphAddEmptyNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                        size_t n) {
  SIMGPU_GUARD({
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_EMPTY,
                     [](GraphNode*) { return CUDA_SUCCESS; });
  });
}

SIMGPU_API CUresult cuGraphAddMemsetNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                         size_t n, const CUDA_MEMSET_NODE_PARAMS* p,
                                         CUcontext ctx) {
  (void)ctx;
  SIMGPU_GUARD({
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEMSET, [&](GraphNode* node) {
      node->memset = *p;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphAddMemcpyNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                         size_t n, const CUDA_MEMCPY3D* p, CUcontext ctx) {
  (void)ctx;
  SIMGPU_GUARD({
    if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEMCPY, [&](GraphNode* node) {
      node->memcpy = *p;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphAddHostNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                       size_t n, const CUDA_HOST_NODE_PARAMS* p) {
  SIMGPU_GUARD({
    if (p == nullptr || p->fn == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_HOST, [&](GraphNode* node) {
      node->host = *p;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphAddEventRecordNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                              size_t n, CUevent event) {
  SIMGPU_GUARD({
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_EVENT_RECORD, [&](GraphNode* node) {
      node->event = event;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphAddEventWaitNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                            size_t n, CUevent event) {
  SIMGPU_GUARD({
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_WAIT_EVENT, [&](GraphNode* node) {
      node->event = event;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphAddMemAllocNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                           size_t n, CUDA_MEM_ALLOC_NODE_PARAMS* p) {
  SIMGPU_GUARD({
    if (p == nullptr || p->bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
    if (p->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        p->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
      return CUDA_ERROR_INVALID_VALUE;
    }
    if (CUresult rc = CheckDevice(p->poolProps.location.id); rc != CUDA_SUCCESS) return rc;
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEM_ALLOC, [&](GraphNode* node) {
      void* va = mmap(nullptr, RoundUp(p->bytesize, 4096), PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
      if (va == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
      p->dptr = reinterpret_cast<CUdeviceptr>(va);
      node->alloc = *p;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphAddMemFreeNode(CUgraphNode* ph, CUgraph g, const CUgraphNode* deps,
                                          size_t n, CUdeviceptr dptr) {
  SIMGPU_GUARD({
    return AddSimple(ph, g, deps, n, CU_GRAPH_NODE_TYPE_MEM_FREE, [&](GraphNode* node) {
      node->free_ptr = dptr;
      return CUDA_SUCCESS;
    });
  });
}

SIMGPU_API CUresult cuGraphMemAllocNodeGetParams(CUgraphNode hNode,
                                                 CUDA_MEM_ALLOC_NODE_PARAMS* params_out) {
  GraphNode* node = AsNode(hNode);
  if (node == nullptr || node->type != CU_GRAPH_NODE_TYPE_MEM_ALLOC || params_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *params_out = node->alloc;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuGraphMemFreeNodeGetParams(CUgraphNode hNode, CUdeviceptr* dptr_out) {
  GraphNode* node = AsNode(hNode);
  if (node == nullptr || node->type != CU_GRAPH_NODE_TYPE_MEM_FREE || dptr_out == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *dptr_out = node->free_ptr;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuGraphKernelNodeGetParams_v2(CUgraphNode hNode,
                                                  CUDA_KERNEL_NODE_PARAMS* nodeParams) {
  GraphNode* node = AsNode(hNode);
  if (node == nullptr || node->type != CU_GRAPH_NODE_TYPE_KERNEL || nodeParams == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  *nodeParams = node->kernel;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuGraphNodeGetType(CUgraphNode hNode, CUgraphNodeType* type) {
  GraphNode* node = AsNode(hNode);
  if (node == nullptr || type == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *type = node->type;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuGraphGetNodes(CUgraph hGraph, CUgraphNode* nodes, size_t* numNodes) {
  SIMGPU_GUARD({
    std::lock_guard<std::mutex> lock(D().mu);
    Graph* g = AsGraph(hGraph);
    if (g == nullptr || numNodes == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (nodes != nullptr) {
      size_t n = std::min(*numNodes, g->nodes.size());
      for (size_t i = 0; i < n; ++i) nodes[i] = reinterpret_cast<CUgraphNode>(g->nodes[i]);
    }
    *numNodes = g->nodes.size();
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuGraphGetRootNodes(CUgraph hGraph, CUgraphNode* roots, size_t* numRoots) {
  SIMGPU_GUARD({
    std::lock_guard<std::mutex> lock(D().mu);
    Graph* g = AsGraph(hGraph);
    if (g == nullptr || numRoots == nullptr) return CUDA_ERROR_INVALID_VALUE;
    size_t count = 0;
    for (GraphNode* node : g->nodes) {
      if (!node->deps.empty()) continue;
      if (roots != nullptr && count < *numRoots) roots[count] = reinterpret_cast<CUgraphNode>(node);
      ++count;
    }
    *numRoots = count;
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuGraphInstantiateWithFlags(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                unsigned long long flags) {
  SIMGPU_GUARD({ return Instantiate(phGraphExec, hGraph, flags); });
}

static CUresult InstantiateLegacy(CUgraphExec* exec, CUgraph graph, CUgraphNode* err_node,
                                  char* log, size_t log_size) {
  if (err_node != nullptr) *err_node = nullptr;
  if (log != nullptr && log_size > 0) log[0] = '\0';
  return Instantiate(exec, graph, 0);
}
SIMGPU_API CUresult cuGraphInstantiate(CUgraphExec* phGraphExec, CUgraph hGraph,
                                       CUgraphNode* phErrorNode, char* logBuffer,
                                       size_t bufferSize) {
  SIMGPU_GUARD(
      { return InstantiateLegacy(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize); });
}
SIMGPU_API CUresult cuGraphInstantiate_v2(CUgraphExec* phGraphExec, CUgraph hGraph,
                                          CUgraphNode* phErrorNode, char* logBuffer,
                                          size_t bufferSize) {
  SIMGPU_GUARD(
      { return InstantiateLegacy(phGraphExec, hGraph, phErrorNode, logBuffer, bufferSize); });
}

static CUresult InstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                      CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  if (p == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = Instantiate(exec, graph, p->flags);
  p->hErrNode_out = nullptr;
  p->result_out =
      rc == CUDA_SUCCESS ? CUDA_GRAPH_INSTANTIATE_SUCCESS : CUDA_GRAPH_INSTANTIATE_ERROR;
  return rc;
}
SIMGPU_API CUresult cuGraphInstantiateWithParams(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  SIMGPU_GUARD({ return InstantiateWithParams(phGraphExec, hGraph, p); });
}
SIMGPU_API CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec* phGraphExec, CUgraph hGraph,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS* p) {
  SIMGPU_GUARD({ return InstantiateWithParams(phGraphExec, hGraph, p); });
}

SIMGPU_API CUresult cuGraphExecGetFlags(CUgraphExec hGraphExec, cuuint64_t* flags) {
  GraphExec* x = AsExec(hGraphExec);
  if (x == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (flags == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = x->flags;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream) {
  SIMGPU_GUARD({ return LaunchGraph(hGraphExec, hStream, false); });
}
SIMGPU_API CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  SIMGPU_GUARD({ return LaunchGraph(hGraphExec, hStream, true); });
}
SIMGPU_API CUresult cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream) {
  (void)hStream;
  return AsExec(hGraphExec) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}
SIMGPU_API CUresult cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream) {
  return cuGraphUpload(hGraphExec, hStream);
}

SIMGPU_API CUresult cuGraphExecDestroy(CUgraphExec hGraphExec) {
  SIMGPU_GUARD({
    std::lock_guard<std::mutex> lock(D().mu);
    GraphExec* x = AsExec(hGraphExec);
    if (x == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    x->nodes.clear();
    Recycler<GraphExec>::Retire(x);
    return CUDA_SUCCESS;
  });
}
