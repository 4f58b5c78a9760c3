// Stream capture: while a stream captures, kernels, memcpys and memsets queued on it become nodes
// of a graph (each depending on the previous one) instead of running.
#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

CUresult Begin(CUstream h, CUstreamCaptureMode mode, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->kind == Stream::Kind::kLegacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (s->capture != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  s->capture = Recycler<Graph>::Make();
  s->capture_mode = mode;
  s->capture_id = D().next_id++;
  s->capture_deps.clear();
  return CUDA_SUCCESS;
}

CUresult End(CUstream h, CUgraph* out, bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  if (s->capture == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  *out = reinterpret_cast<CUgraph>(s->capture);
  s->capture = nullptr;
  s->capture_deps.clear();
  return CUDA_SUCCESS;
}

CUresult Info(CUstream h, CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
              const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* num_deps,
              bool per_thread) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  Stream* s = nullptr;
  if (CUresult rc = ResolveStreamLocked(h, per_thread, &s); rc != CUDA_SUCCESS) return rc;
  bool active = s->capture != nullptr;
  *status = active ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (id != nullptr) *id = active ? s->capture_id : 0;
  if (graph != nullptr) *graph = active ? reinterpret_cast<CUgraph>(s->capture) : nullptr;
  if (deps != nullptr) {
    *deps = active && !s->capture_deps.empty()
                ? reinterpret_cast<const CUgraphNode*>(s->capture_deps.data())
                : nullptr;
  }
  if (edges != nullptr) *edges = nullptr;
  if (num_deps != nullptr) *num_deps = active ? s->capture_deps.size() : 0;
  return CUDA_SUCCESS;
}

// Adds a node of `type` after the stream's current capture dependencies.
GraphNode* CaptureNodeLocked(Stream* s, CUgraphNodeType type, CUresult* rc) {
  GraphNode* node = nullptr;
  *rc = AddNodeLocked(s->capture, reinterpret_cast<const CUgraphNode*>(s->capture_deps.data()),
                      s->capture_deps.size(), type, &node);
  if (*rc != CUDA_SUCCESS) return nullptr;
  s->capture_deps.assign(1, node);
  return node;
}

}  // namespace

bool CaptureKernelLocked(Stream* s, const LaunchArgs& a, uint64_t duration_ns, CUresult* rc) {
  if (s->capture == nullptr) return false;
  GraphNode* node = CaptureNodeLocked(s, CU_GRAPH_NODE_TYPE_KERNEL, rc);
  if (node == nullptr) return true;
  node->kernel.func = reinterpret_cast<CUfunction>(a.f);
  node->kernel.gridDimX = a.grid[0];
  node->kernel.gridDimY = a.grid[1];
  node->kernel.gridDimZ = a.grid[2];
  node->kernel.blockDimX = a.block[0];
  node->kernel.blockDimY = a.block[1];
  node->kernel.blockDimZ = a.block[2];
  node->kernel.sharedMemBytes = a.shared_bytes;
  node->duration_ns = duration_ns;
  return true;
}

bool CaptureMemcpyLocked(Stream* s, const CUDA_MEMCPY3D& c, CUresult* rc) {
  if (s->capture == nullptr) return false;
  GraphNode* node = CaptureNodeLocked(s, CU_GRAPH_NODE_TYPE_MEMCPY, rc);
  if (node != nullptr) node->memcpy = c;
  return true;
}

bool CaptureMemsetLocked(Stream* s, const CUDA_MEMSET_NODE_PARAMS& p, CUresult* rc) {
  if (s->capture == nullptr) return false;
  GraphNode* node = CaptureNodeLocked(s, CU_GRAPH_NODE_TYPE_MEMSET, rc);
  if (node != nullptr) node->memset = p;
  return true;
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  SIMGPU_GUARD({ return Begin(hStream, mode, false); });
}
SIMGPU_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode) {
  SIMGPU_GUARD({ return Begin(hStream, mode, true); });
}
SIMGPU_API CUresult cuStreamBeginCapture(CUstream hStream) {
  SIMGPU_GUARD({ return Begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, false); });
}
SIMGPU_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream) {
  SIMGPU_GUARD({ return Begin(hStream, CU_STREAM_CAPTURE_MODE_GLOBAL, true); });
}
SIMGPU_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  SIMGPU_GUARD({ return End(hStream, phGraph, false); });
}
SIMGPU_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph* phGraph) {
  SIMGPU_GUARD({ return End(hStream, phGraph, true); });
}
SIMGPU_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* captureStatus) {
  SIMGPU_GUARD(
      { return Info(hStream, captureStatus, nullptr, nullptr, nullptr, nullptr, nullptr, false); });
}
SIMGPU_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream,
                                             CUstreamCaptureStatus* captureStatus) {
  SIMGPU_GUARD(
      { return Info(hStream, captureStatus, nullptr, nullptr, nullptr, nullptr, nullptr, true); });
}
SIMGPU_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus* status,
                                           cuuint64_t* id) {
  SIMGPU_GUARD({ return Info(hStream, status, id, nullptr, nullptr, nullptr, nullptr, false); });
}
SIMGPU_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id) {
  SIMGPU_GUARD({ return Info(hStream, status, id, nullptr, nullptr, nullptr, nullptr, true); });
}
SIMGPU_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream, CUstreamCaptureStatus* status,
                                              cuuint64_t* id, CUgraph* graph,
                                              const CUgraphNode** deps, size_t* num_deps) {
  SIMGPU_GUARD({ return Info(hStream, status, id, graph, deps, nullptr, num_deps, false); });
}
SIMGPU_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream, CUstreamCaptureStatus* status,
                                                   cuuint64_t* id, CUgraph* graph,
                                                   const CUgraphNode** deps, size_t* num_deps) {
  SIMGPU_GUARD({ return Info(hStream, status, id, graph, deps, nullptr, num_deps, true); });
}
SIMGPU_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* status,
                                              cuuint64_t* id, CUgraph* graph,
                                              const CUgraphNode** deps,
                                              const CUgraphEdgeData** edges, size_t* num_deps) {
  SIMGPU_GUARD({ return Info(hStream, status, id, graph, deps, edges, num_deps, false); });
}
SIMGPU_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream, CUstreamCaptureStatus* status,
                                                   cuuint64_t* id, CUgraph* graph,
                                                   const CUgraphNode** deps,
                                                   const CUgraphEdgeData** edges,
                                                   size_t* num_deps) {
  SIMGPU_GUARD({ return Info(hStream, status, id, graph, deps, edges, num_deps, true); });
}
SIMGPU_API CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  thread_local CUstreamCaptureMode current = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::swap(current, *mode);
  return CUDA_SUCCESS;
}
