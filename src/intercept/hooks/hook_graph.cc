// Graph memory nodes. A graph's memory-allocation nodes (added with cuGraphAddMemAllocNode,
// cuGraphAddNode or by capturing cuMemAllocAsync) take device memory when the graph is
// instantiated and launched. libvgpu charges, at instantiation, the sum of the graph's
// allocation nodes per device (including child graphs) for the life of the executable graph:
// an upper bound, since the driver may reuse memory between nodes and graphs. Beyond the limit
// the instantiation returns CUDA_ERROR_OUT_OF_MEMORY and nothing is instantiated.
// cuGraphAddMemAllocNode refuses a node that alone cannot fit in what the slice has left.
// The same walk counts the graph's memcpy nodes for a slice with copy caps: graph launches are
// not paced, so their copies are reported (region copy.unpaced_graph_copies, docs/copy-qos.md).
#include <sys/mman.h>

#include "intercept/hooks/hook_util.h"

namespace vgpu::intercept {
namespace {

constexpr int kMaxDepth = 8;
constexpr size_t kStackNodes = 256;

// Adds the allocation-node bytes of `graph` per device into `bytes`, and its memcpy nodes into
// `copies`. False if the graph cannot be walked (then nothing is charged and the driver decides).
bool SumAllocNodes(CUgraph graph, uint64_t* bytes, uint64_t* copies, int depth) {
  if (depth > kMaxDepth || g_cuda.cuGraphGetNodes == nullptr ||
      g_cuda.cuGraphNodeGetType == nullptr || g_cuda.cuGraphMemAllocNodeGetParams == nullptr) {
    return false;
  }
  size_t count = 0;
  if (g_cuda.cuGraphGetNodes(graph, nullptr, &count) != CUDA_SUCCESS) return false;
  if (count == 0) return true;
  CUgraphNode stack_nodes[kStackNodes];
  CUgraphNode* nodes = stack_nodes;
  size_t mapped = 0;
  if (count > kStackNodes) {
    mapped = count * sizeof(CUgraphNode);
    void* p = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    nodes = static_cast<CUgraphNode*>(p);
  }
  size_t got = count;
  bool ok = g_cuda.cuGraphGetNodes(graph, nodes, &got) == CUDA_SUCCESS;
  for (size_t i = 0; ok && i < got && i < count; ++i) {
    CUgraphNodeType type;
    if (g_cuda.cuGraphNodeGetType(nodes[i], &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
      CUDA_MEM_ALLOC_NODE_PARAMS params{};
      if (g_cuda.cuGraphMemAllocNodeGetParams(nodes[i], &params) != CUDA_SUCCESS) continue;
      int dev = params.poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE
                    ? params.poolProps.location.id
                    : -1;
      if (dev >= 0 && dev < kMaxDevices) {
        bytes[dev] += params.bytesize;
      } else if (dev >= kMaxDevices) {
        bytes[0] = ~0ULL;  // a device we cannot account: refuse under any limit
      }
    } else if (type == CU_GRAPH_NODE_TYPE_MEMCPY) {
      ++*copies;
    } else if (type == CU_GRAPH_NODE_TYPE_GRAPH && g_cuda.cuGraphChildGraphNodeGetGraph) {
      CUgraph child = nullptr;
      if (g_cuda.cuGraphChildGraphNodeGetGraph(nodes[i], &child) == CUDA_SUCCESS) {
        ok = SumAllocNodes(child, bytes, copies, depth + 1);
      }
    }
  }
  if (mapped != 0) ::munmap(nodes, mapped);
  return ok;
}

// Charges the graph's allocation nodes. On success `charged` holds what was charged per device
// and `copies` the graph's memcpy nodes.
bool ChargeGraph(CUgraph graph, uint64_t* charged, uint64_t* copies) {
  for (int d = 0; d < kMaxDevices; ++d) charged[d] = 0;
  uint64_t need[kMaxDevices] = {};
  *copies = 0;
  if (!SumAllocNodes(graph, need, copies, 0)) return true;
  Accountant& acct = GetRuntime().accountant;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (need[d] == 0) continue;
    if (!ChargeOrRefuse(d, need[d], "graph instantiation")) {
      for (int u = 0; u < d; ++u) acct.Uncharge(u, charged[u]);
      return false;
    }
    charged[d] = need[d];
  }
  return true;
}

void UnchargeGraph(const uint64_t* charged) {
  for (int d = 0; d < kMaxDevices; ++d) GetRuntime().accountant.Uncharge(d, charged[d]);
}

void TrackGraph(CUgraphExec exec, const uint64_t* charged) {
  DeviceContext dc;
  CUcontext ctx = CurrentDeviceContext(&dc) ? dc.context : nullptr;
  for (int d = 0; d < kMaxDevices; ++d) {
    if (charged[d] != 0)
      Track(reinterpret_cast<uint64_t>(exec), Space::kGraphExec, d, ctx, charged[d]);
  }
}

template <typename Call>
CUresult Instantiate(CUgraphExec* exec, CUgraph graph, Call call) {
  if (exec == nullptr || graph == nullptr) return call();
  uint64_t charged[kMaxDevices];
  uint64_t copies = 0;
  if (!ChargeGraph(graph, charged, &copies)) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult r = call();
  if (r != CUDA_SUCCESS) {
    UnchargeGraph(charged);
    return r;
  }
  TrackGraph(*exec, charged);
  shm::CopyQosState* q = GetRuntime().copy.state();
  if (copies != 0 && q != nullptr && g_copy_paced.load(std::memory_order_relaxed)) {
    std::atomic_ref<uint64_t>(q->unpaced_graph_copies).fetch_add(copies, std::memory_order_relaxed);
  }
  return r;
}

}  // namespace

extern "C" CUresult cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph,
                                           const CUgraphNode* deps, size_t num_deps,
                                           CUDA_MEM_ALLOC_NODE_PARAMS* params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphAddMemAllocNode;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (params != nullptr && params->poolProps.location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
    int dev = params->poolProps.location.id;
    Accountant& acct = GetRuntime().accountant;
    uint64_t limit = acct.Limit(dev);
    if (limit != kNoLimit) {
      uint64_t used = acct.SliceUsed(dev);
      uint64_t room = limit > used ? limit - used : 0;
      if (params->bytesize > room) return CUDA_ERROR_OUT_OF_MEMORY;
    }
  }
  return real(node, graph, deps, num_deps, params);
}

extern "C" CUresult cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node,
                                       char* log, size_t log_size) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphInstantiate;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return Instantiate(exec, graph, [&] { return real(exec, graph, error_node, log, log_size); });
}

extern "C" CUresult cuGraphInstantiate_v2(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node,
                                          char* log, size_t log_size) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphInstantiate_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return Instantiate(exec, graph, [&] { return real(exec, graph, error_node, log, log_size); });
}

extern "C" CUresult cuGraphInstantiateWithFlags(CUgraphExec* exec, CUgraph graph,
                                                unsigned long long flags) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphInstantiateWithFlags;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return Instantiate(exec, graph, [&] { return real(exec, graph, flags); });
}

extern "C" CUresult cuGraphInstantiateWithParams(CUgraphExec* exec, CUgraph graph,
                                                 CUDA_GRAPH_INSTANTIATE_PARAMS* params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphInstantiateWithParams;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return Instantiate(exec, graph, [&] { return real(exec, graph, params); });
}

extern "C" CUresult cuGraphInstantiateWithParams_ptsz(
    CUgraphExec* exec, CUgraph graph, CUDA_GRAPH_INSTANTIATE_PARAMS* params) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphInstantiateWithParams_ptsz;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  return Instantiate(exec, graph, [&] { return real(exec, graph, params); });
}

extern "C" CUresult cuGraphExecDestroy(CUgraphExec exec) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGraphExecDestroy;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(exec);
  if (r == CUDA_SUCCESS && exec != nullptr) {
    AllocTable& table = GetRuntime().table;
    for (int d = 0; d < kMaxDevices; ++d) {
      AllocEntry entry;
      if (table.Remove(reinterpret_cast<uint64_t>(exec), Space::kGraphExec, &entry, d)) {
        ReleaseEntry(entry);
      }
    }
  }
  return r;
}

}  // namespace vgpu::intercept
