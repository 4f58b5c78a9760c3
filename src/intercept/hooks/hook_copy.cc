// Explicit copy hooks: host-to-device and device-to-host copies are paced by the slice's copy
// caps (copy_pacer.h). Without a cap the added cost is one acquire load (initialised?), one
// relaxed load (paced?) and an indirect call, as for kernel launches.
//
// With a cap, a copy is cut into chunks of copy_chunk bytes (1D copies by bytes, 2D copies by
// rows, 3D copies by slices of depth) and each chunk draws its tokens before it is handed to
// the driver on the caller's stream, so the chunks keep the copy's place in stream order. A
// synchronous copy becomes a run of synchronous chunks; an asynchronous one a run of
// asynchronous chunks on the same stream (the calling thread waits for tokens). A chunk the
// driver refuses ends the copy with its error (earlier chunks are done).
//
// Direction: fixed by the entry point (HtoD, DtoH, HtoA, AtoH), or read from the memory types
// (2D/3D); unified addresses (cuMemcpy, CU_MEMORYTYPE_UNIFIED) ask the driver where the memory
// lives (cuPointerGetAttribute; memory the driver does not know is pageable host memory).
// Device-to-device, peer and host-to-host copies are not paced; peer copies' bytes are counted.
// Batches (cuMemcpyBatchAsync) draw the tokens of all their host-link bytes before the one call.
//
// Counting (telemetry.h): the bytes of every copy the driver accepts are counted by kind
// (host-to-device, device-to-host, device-to-device, peer), paced or not; a paced copy counts
// the chunks that went through. Host-to-host copies are not counted. Unified-address copies ask
// the driver where the memory lives (two cuPointerGetAttribute calls) even without a cap.
#include <algorithm>
#include <type_traits>

#include "intercept/gate/copy_pacer.h"
#include "intercept/hooks/hook_util.h"
#include "intercept/telemetry.h"

namespace vgpu::intercept {
namespace {

constexpr int kNotHostLink = -1;

inline bool Paced() { return __builtin_expect(g_copy_paced.load(std::memory_order_relaxed), 0); }

bool IsHostAddress(CUdeviceptr p) {
  if (g_cuda.cuPointerGetAttribute == nullptr) return false;
  unsigned type = 0;
  CUresult r = g_cuda.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
  return r != CUDA_SUCCESS || type == CU_MEMORYTYPE_HOST;
}

bool IsHostSide(CUmemorytype type, const void* host, CUdeviceptr device) {
  switch (type) {
    case CU_MEMORYTYPE_HOST:
      return true;
    case CU_MEMORYTYPE_UNIFIED:
      return IsHostAddress(device != 0 ? device : reinterpret_cast<CUdeviceptr>(host));
    default:
      return false;
  }
}

int Direction(bool src_host, bool dst_host) {
  if (src_host == dst_host) return kNotHostLink;
  return src_host ? kCopyHostToDevice : kCopyDeviceToHost;
}

static_assert(kCopyHostToDevice == shm::kCopyKindHostToDevice);
static_assert(kCopyDeviceToHost == shm::kCopyKindDeviceToHost);

// The counters' kind of a copy (shm::kCopyKind*), or -1 for host to host (not counted).
int Kind(bool src_host, bool dst_host) {
  if (src_host && dst_host) return -1;
  if (src_host) return shm::kCopyKindHostToDevice;
  return dst_host ? shm::kCopyKindDeviceToHost : shm::kCopyKindDeviceToDevice;
}

// The host-link direction of a kind (kNotHostLink for device-to-device, peer and none).
int DirectionOfKind(int kind) {
  return kind == shm::kCopyKindHostToDevice || kind == shm::kCopyKindDeviceToHost ? kind
                                                                                  : kNotHostLink;
}

// Counts `bytes` of kind `kind` when the driver accepted the copy.
CUresult Counted(int kind, uint64_t bytes, CUresult r) {
  if (r == CUDA_SUCCESS) CountCopy(kind, bytes);
  return r;
}

int UnifiedKind(CUdeviceptr src, CUdeviceptr dst) {
  return Kind(IsHostAddress(src), IsHostAddress(dst));
}

// The kind of a 2D or 3D copy (-1 for host to host, or a null copy); a device-to-device 3D peer
// copy is a peer copy.
template <typename Copy>
int MultiKind(const Copy* copy) {
  if (copy == nullptr) return -1;
  int kind = Kind(IsHostSide(copy->srcMemoryType, copy->srcHost, copy->srcDevice),
                  IsHostSide(copy->dstMemoryType, copy->dstHost, copy->dstDevice));
  if constexpr (std::is_same_v<Copy, CUDA_MEMCPY3D_PEER>) {
    if (kind == shm::kCopyKindDeviceToDevice) kind = shm::kCopyKindPeer;
  }
  return kind;
}

// Bytes of a 2D or 3D copy (a zero height or depth counts as one, as the driver reads it).
uint64_t MultiBytes(const CUDA_MEMCPY2D* copy) {
  return copy == nullptr ? 0 : uint64_t{copy->WidthInBytes} * std::max<size_t>(1, copy->Height);
}
template <typename Copy3D>
uint64_t MultiBytes(const Copy3D* copy) {
  return copy == nullptr ? 0
                         : uint64_t{copy->WidthInBytes} * std::max<size_t>(1, copy->Height) *
                               std::max<size_t>(1, copy->Depth);
}

// Runs enqueue(offset, length) over `n` bytes of kind `kind` in chunks, each after its tokens;
// counts what the driver accepted.
template <typename Enqueue>
CUresult PacedLinear(int kind, size_t n, Enqueue enqueue) {
  CopyPacer& pacer = GetRuntime().copy;
  const int dir = DirectionOfKind(kind);
  if (dir == kNotHostLink) return Counted(kind, n, enqueue(size_t{0}, n));
  pacer.CountCall(dir);
  if (!pacer.paced(dir) || n == 0) return Counted(kind, n, enqueue(size_t{0}, n));
  const size_t chunk = pacer.chunk_bytes();
  for (size_t offset = 0; offset < n; offset += chunk) {
    size_t length = std::min(chunk, n - offset);
    pacer.Take(dir, length);
    if (CUresult r = Counted(kind, length, enqueue(offset, length)); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// 2D copies in groups of rows.
template <typename Call>
CUresult Paced2D(const CUDA_MEMCPY2D* copy, Call call) {
  const int kind = MultiKind(copy);
  const int dir = DirectionOfKind(kind);
  if (dir == kNotHostLink) return Counted(kind, MultiBytes(copy), call(copy));
  CopyPacer& pacer = GetRuntime().copy;
  pacer.CountCall(dir);
  size_t width = copy->WidthInBytes;
  size_t rows = copy->Height;
  if (!pacer.paced(dir) || width == 0 || rows == 0) {
    return Counted(kind, MultiBytes(copy), call(copy));
  }
  size_t per_chunk = std::max<size_t>(1, pacer.chunk_bytes() / width);
  CUDA_MEMCPY2D part = *copy;
  for (size_t row = 0; row < rows; row += per_chunk) {
    part.srcY = copy->srcY + row;
    part.dstY = copy->dstY + row;
    part.Height = std::min(per_chunk, rows - row);
    pacer.Take(dir, width * part.Height);
    if (CUresult r = Counted(kind, width * part.Height, call(&part)); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// 3D copies (and 3D peer copies) in groups of depth slices.
template <typename Copy3D, typename Call>
CUresult Paced3D(const Copy3D* copy, Call call) {
  const int kind = MultiKind(copy);
  const int dir = DirectionOfKind(kind);
  if (dir == kNotHostLink) return Counted(kind, MultiBytes(copy), call(copy));
  CopyPacer& pacer = GetRuntime().copy;
  pacer.CountCall(dir);
  size_t slice = copy->WidthInBytes * std::max<size_t>(1, copy->Height);
  size_t depth = std::max<size_t>(1, copy->Depth);
  if (!pacer.paced(dir) || slice == 0) return Counted(kind, MultiBytes(copy), call(copy));
  size_t per_chunk = std::max<size_t>(1, pacer.chunk_bytes() / slice);
  Copy3D part = *copy;
  for (size_t z = 0; z < depth; z += per_chunk) {
    part.srcZ = copy->srcZ + z;
    part.dstZ = copy->dstZ + z;
    part.Depth = std::min(per_chunk, depth - z);
    pacer.Take(dir, slice * part.Depth);
    if (CUresult r = Counted(kind, slice * part.Depth, call(&part)); r != CUDA_SUCCESS) return r;
  }
  return CUDA_SUCCESS;
}

// A batch goes to the driver as one call (its order is the driver's); its host-link bytes draw
// their tokens first, in chunks, per direction.
void PaceBatch(const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes,
               size_t count) {
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr) return;
  uint64_t bytes[2] = {0, 0};
  for (size_t i = 0; i < count; ++i) {
    int dir = Direction(IsHostAddress(srcs[i]), IsHostAddress(dsts[i]));
    if (dir != kNotHostLink) bytes[dir] += sizes[i];
  }
  CopyPacer& pacer = GetRuntime().copy;
  for (int dir = 0; dir < 2; ++dir) {
    if (bytes[dir] == 0) continue;
    pacer.CountCall(dir);
    if (!pacer.paced(dir)) continue;
    for (uint64_t done = 0; done < bytes[dir]; done += pacer.chunk_bytes()) {
      pacer.Take(dir, std::min<uint64_t>(pacer.chunk_bytes(), bytes[dir] - done));
    }
  }
}

// Counts the bytes of a batch the driver accepted, by kind.
void CountBatch(const CUdeviceptr* dsts, const CUdeviceptr* srcs, const size_t* sizes,
                size_t count) {
  if (dsts == nullptr || srcs == nullptr || sizes == nullptr) return;
  for (size_t i = 0; i < count; ++i) CountCopy(UnifiedKind(srcs[i], dsts[i]), sizes[i]);
}

void CountPeer(size_t bytes) {
  shm::CopyQosState* s = GetRuntime().copy.state();
  if (s != nullptr) {
    std::atomic_ref<uint64_t>(s->peer_bytes).fetch_add(bytes, std::memory_order_relaxed);
  }
}

const uint8_t* Bytes(const void* p) { return static_cast<const uint8_t*>(p); }
uint8_t* Bytes(void* p) { return static_cast<uint8_t*>(p); }

}  // namespace

// The driver's entry point in `slot` for a copy hook, once CUDA is loaded: CUDA_SUCCESS with
// *real set; CUDA_ERROR_NOT_INITIALIZED when CUDA cannot be loaded, CUDA_ERROR_NOT_SUPPORTED when
// the loaded driver lacks the entry point.
template <typename Fn>
CUresult RealEntry(Fn DriverApi::*slot, Fn* real) {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  *real = g_cuda.*slot;
  return *real == nullptr ? CUDA_ERROR_NOT_SUPPORTED : CUDA_SUCCESS;
}

// Host to device: (dst device pointer, src host pointer, bytes[, stream]).
#define VGPU_HTOD(name, dptr_t, size_t_, ...)                                            \
  extern "C" CUresult name(dptr_t dst, const void* src,                                  \
                           size_t_ bytes __VA_OPT__(, ) __VA_ARGS__) noexcept {          \
    decltype(g_cuda.name) real = nullptr;                                                \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc; \
    if (!Paced()) {                                                                      \
      return Counted(shm::kCopyKindHostToDevice, bytes,                                  \
                     real(dst, src, bytes __VA_OPT__(, stream)));                        \
    }                                                                                    \
    return PacedLinear(kCopyHostToDevice, bytes, [&](size_t off, size_t n) {             \
      return real(static_cast<dptr_t>(dst + off), Bytes(src) + off,                      \
                  static_cast<size_t_>(n) __VA_OPT__(, stream));                         \
    });                                                                                  \
  }
#define VGPU_DTOH(name, dptr_t, size_t_, ...)                                            \
  extern "C" CUresult name(void* dst, dptr_t src,                                        \
                           size_t_ bytes __VA_OPT__(, ) __VA_ARGS__) noexcept {          \
    decltype(g_cuda.name) real = nullptr;                                                \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc; \
    if (!Paced()) {                                                                      \
      return Counted(shm::kCopyKindDeviceToHost, bytes,                                  \
                     real(dst, src, bytes __VA_OPT__(, stream)));                        \
    }                                                                                    \
    return PacedLinear(kCopyDeviceToHost, bytes, [&](size_t off, size_t n) {             \
      return real(Bytes(dst) + off, static_cast<dptr_t>(src + off),                      \
                  static_cast<size_t_>(n) __VA_OPT__(, stream));                         \
    });                                                                                  \
  }

VGPU_HTOD(cuMemcpyHtoD_v2, CUdeviceptr, size_t)
VGPU_HTOD(cuMemcpyHtoD_v2_ptds, CUdeviceptr, size_t)
VGPU_HTOD(cuMemcpyHtoD, CUdeviceptr_v1, unsigned int)
VGPU_HTOD(cuMemcpyHtoDAsync_v2, CUdeviceptr, size_t, CUstream stream)
VGPU_HTOD(cuMemcpyHtoDAsync_v2_ptsz, CUdeviceptr, size_t, CUstream stream)
VGPU_HTOD(cuMemcpyHtoDAsync, CUdeviceptr_v1, unsigned int, CUstream stream)
VGPU_DTOH(cuMemcpyDtoH_v2, CUdeviceptr, size_t)
VGPU_DTOH(cuMemcpyDtoH_v2_ptds, CUdeviceptr, size_t)
VGPU_DTOH(cuMemcpyDtoH, CUdeviceptr_v1, unsigned int)
VGPU_DTOH(cuMemcpyDtoHAsync_v2, CUdeviceptr, size_t, CUstream stream)
VGPU_DTOH(cuMemcpyDtoHAsync_v2_ptsz, CUdeviceptr, size_t, CUstream stream)
VGPU_DTOH(cuMemcpyDtoHAsync, CUdeviceptr_v1, unsigned int, CUstream stream)

// Unified addresses: the direction is asked of the driver.
#define VGPU_UNIFIED(name, ...)                                                            \
  extern "C" CUresult name(CUdeviceptr dst, CUdeviceptr src,                               \
                           size_t bytes __VA_OPT__(, ) __VA_ARGS__) noexcept {             \
    decltype(g_cuda.name) real = nullptr;                                                  \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc;   \
    const int kind = UnifiedKind(src, dst);                                                \
    if (!Paced()) return Counted(kind, bytes, real(dst, src, bytes __VA_OPT__(, stream))); \
    return PacedLinear(kind, bytes, [&](size_t off, size_t n) {                            \
      return real(dst + off, src + off, n __VA_OPT__(, stream));                           \
    });                                                                                    \
  }
VGPU_UNIFIED(cuMemcpy)
VGPU_UNIFIED(cuMemcpy_ptds)
VGPU_UNIFIED(cuMemcpyAsync, CUstream stream)
VGPU_UNIFIED(cuMemcpyAsync_ptsz, CUstream stream)

// Arrays, 1D: an offset into the array.
#define VGPU_HTOA(name, ...)                                                             \
  extern "C" CUresult name(CUarray dst, size_t offset, const void* src,                  \
                           size_t bytes __VA_OPT__(, ) __VA_ARGS__) noexcept {           \
    decltype(g_cuda.name) real = nullptr;                                                \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc; \
    if (!Paced()) {                                                                      \
      return Counted(shm::kCopyKindHostToDevice, bytes,                                  \
                     real(dst, offset, src, bytes __VA_OPT__(, stream)));                \
    }                                                                                    \
    return PacedLinear(kCopyHostToDevice, bytes, [&](size_t off, size_t n) {             \
      return real(dst, offset + off, Bytes(src) + off, n __VA_OPT__(, stream));          \
    });                                                                                  \
  }
#define VGPU_ATOH(name, ...)                                                             \
  extern "C" CUresult name(void* dst, CUarray src, size_t offset,                        \
                           size_t bytes __VA_OPT__(, ) __VA_ARGS__) noexcept {           \
    decltype(g_cuda.name) real = nullptr;                                                \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc; \
    if (!Paced()) {                                                                      \
      return Counted(shm::kCopyKindDeviceToHost, bytes,                                  \
                     real(dst, src, offset, bytes __VA_OPT__(, stream)));                \
    }                                                                                    \
    return PacedLinear(kCopyDeviceToHost, bytes, [&](size_t off, size_t n) {             \
      return real(Bytes(dst) + off, src, offset + off, n __VA_OPT__(, stream));          \
    });                                                                                  \
  }
VGPU_HTOA(cuMemcpyHtoA_v2)
VGPU_HTOA(cuMemcpyHtoA_v2_ptds)
VGPU_HTOA(cuMemcpyHtoAAsync_v2, CUstream stream)
VGPU_HTOA(cuMemcpyHtoAAsync_v2_ptsz, CUstream stream)
VGPU_ATOH(cuMemcpyAtoH_v2)
VGPU_ATOH(cuMemcpyAtoH_v2_ptds)
VGPU_ATOH(cuMemcpyAtoHAsync_v2, CUstream stream)
VGPU_ATOH(cuMemcpyAtoHAsync_v2_ptsz, CUstream stream)

// 2D and 3D copies.
#define VGPU_MULTI(name, pace, type, ...)                                                 \
  extern "C" CUresult name(const type* copy __VA_OPT__(, ) __VA_ARGS__) noexcept {        \
    decltype(g_cuda.name) real = nullptr;                                                 \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc;  \
    if (!Paced()) {                                                                       \
      return Counted(MultiKind(copy), MultiBytes(copy), real(copy __VA_OPT__(, stream))); \
    }                                                                                     \
    return pace(copy, [&](const type* part) { return real(part __VA_OPT__(, stream)); }); \
  }
VGPU_MULTI(cuMemcpy2D_v2, Paced2D, CUDA_MEMCPY2D)
VGPU_MULTI(cuMemcpy2D_v2_ptds, Paced2D, CUDA_MEMCPY2D)
VGPU_MULTI(cuMemcpy2DUnaligned_v2, Paced2D, CUDA_MEMCPY2D)
VGPU_MULTI(cuMemcpy2DUnaligned_v2_ptds, Paced2D, CUDA_MEMCPY2D)
VGPU_MULTI(cuMemcpy2DAsync_v2, Paced2D, CUDA_MEMCPY2D, CUstream stream)
VGPU_MULTI(cuMemcpy2DAsync_v2_ptsz, Paced2D, CUDA_MEMCPY2D, CUstream stream)
VGPU_MULTI(cuMemcpy3D_v2, Paced3D, CUDA_MEMCPY3D)
VGPU_MULTI(cuMemcpy3D_v2_ptds, Paced3D, CUDA_MEMCPY3D)
VGPU_MULTI(cuMemcpy3DAsync_v2, Paced3D, CUDA_MEMCPY3D, CUstream stream)
VGPU_MULTI(cuMemcpy3DAsync_v2_ptsz, Paced3D, CUDA_MEMCPY3D, CUstream stream)
VGPU_MULTI(cuMemcpy3DPeer, Paced3D, CUDA_MEMCPY3D_PEER)
VGPU_MULTI(cuMemcpy3DPeer_ptds, Paced3D, CUDA_MEMCPY3D_PEER)
VGPU_MULTI(cuMemcpy3DPeerAsync, Paced3D, CUDA_MEMCPY3D_PEER, CUstream stream)
VGPU_MULTI(cuMemcpy3DPeerAsync_ptsz, Paced3D, CUDA_MEMCPY3D_PEER, CUstream stream)

// Peer copies between devices: not on the host link; counted.
#define VGPU_PEER(name, ...)                                                                       \
  extern "C" CUresult name(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx, \
                           size_t bytes __VA_OPT__(, ) __VA_ARGS__) noexcept {                     \
    decltype(g_cuda.name) real = nullptr;                                                          \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc;           \
    if (Paced()) CountPeer(bytes);                                                                 \
    return Counted(shm::kCopyKindPeer, bytes,                                                      \
                   real(dst, dst_ctx, src, src_ctx, bytes __VA_OPT__(, stream)));                  \
  }
VGPU_PEER(cuMemcpyPeer)
VGPU_PEER(cuMemcpyPeer_ptds)
VGPU_PEER(cuMemcpyPeerAsync, CUstream stream)
VGPU_PEER(cuMemcpyPeerAsync_ptsz, CUstream stream)

#define VGPU_BATCH(name, ...)                                                                 \
  extern "C" CUresult name(CUdeviceptr* dsts, CUdeviceptr* srcs, size_t* sizes, size_t count, \
                           CUmemcpyAttributes* attrs, size_t* attr_idxs,                      \
                           size_t num_attrs __VA_OPT__(, ) __VA_ARGS__,                       \
                           CUstream stream) noexcept {                                        \
    decltype(g_cuda.name) real = nullptr;                                                     \
    if (CUresult rc = RealEntry(&DriverApi::name, &real); rc != CUDA_SUCCESS) return rc;      \
    if (Paced()) PaceBatch(dsts, srcs, sizes, count);                                         \
    CUresult r = real(dsts, srcs, sizes, count, attrs, attr_idxs,                             \
                      num_attrs __VA_OPT__(, fail_idx), stream);                              \
    if (r == CUDA_SUCCESS) CountBatch(dsts, srcs, sizes, count);                              \
    return r;                                                                                 \
  }
VGPU_BATCH(cuMemcpyBatchAsync, size_t* fail_idx)
VGPU_BATCH(cuMemcpyBatchAsync_ptsz, size_t* fail_idx)
VGPU_BATCH(cuMemcpyBatchAsync_v2)
VGPU_BATCH(cuMemcpyBatchAsync_v2_ptsz)

}  // namespace vgpu::intercept
