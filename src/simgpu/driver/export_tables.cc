// cuGetExportTable: the private tables NVIDIA's CUDA runtime asks the driver for (export_tables.h
// has their ids). Each table is an array of pointer-sized slots; in most, slot 0 holds the
// table's size in bytes. The slots served here, and where each fact comes from (ZLUDA:
// github.com/vosen/ZLUDA dark_api/src/lib.rs and zluda/src/impl/driver.rs; LUPINE:
// github.com/kevmo314/scuda client.cpp; the tools slots' names from a public table of slot names,
// their answers from the request log while cuBLAS ran), are listed in docs/simgpu.md. Every other
// slot holds a stub that logs its table, index and first arguments once (warning) and in the
// request log, and returns CUDA_ERROR_NOT_SUPPORTED. An id that is not in the list is logged once
// (info: the 13.0 runtime asks for one such table, f8cff951-..., and runs without it) and answered
// CUDA_ERROR_NOT_SUPPORTED.
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/log.h"
#include "simgpu/driver/driver.h"
#include "simgpu/driver/export_tables.h"
#include "simgpu/driver/request_log.h"
#include "simgpu/md2.h"

namespace vgpu::simgpu::driver {
namespace {

constexpr int kMaxSlots = 95;  // the longest table (TOOLS_CONTEXT)

void LogCall(int table, int slot, CUresult rc, uintptr_t a0 = 0, uintptr_t a1 = 0, uintptr_t a2 = 0,
             uintptr_t a3 = 0) {
  if (!RequestLogEnabled()) return;
  LogRequest("export-call %s %d %d %#lx %#lx %#lx %#lx", kExportTableIds[table].name, slot,
             static_cast<int>(rc), static_cast<unsigned long>(a0), static_cast<unsigned long>(a1),
             static_cast<unsigned long>(a2), static_cast<unsigned long>(a3));
}

template <typename T>
uintptr_t U(T v) {
  if constexpr (std::is_pointer_v<T>) {
    return reinterpret_cast<uintptr_t>(v);
  } else {
    return static_cast<uintptr_t>(v);
  }
}

// A slot this driver does not serve. The runtime's arguments are read as the first four integer
// registers whatever their types (x86-64 and AArch64 pass them so); they are only logged.
template <int kTable, int kSlot>
uintptr_t UnservedSlot(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    VGPU_LOG_WARN(
        "export table %s slot %d is not simulated (args %#lx %#lx %#lx %#lx); "
        "returning CUDA_ERROR_NOT_SUPPORTED",
        kExportTableIds[kTable].name, kSlot, static_cast<unsigned long>(a0),
        static_cast<unsigned long>(a1), static_cast<unsigned long>(a2),
        static_cast<unsigned long>(a3));
  }
  LogCall(kTable, kSlot, CUDA_ERROR_NOT_SUPPORTED, a0, a1, a2, a3);
  return CUDA_ERROR_NOT_SUPPORTED;
}

template <int kTable, size_t... kSlot>
void FillUnserved(const void** slots, std::index_sequence<kSlot...>) {
  ((slots[kSlot] = reinterpret_cast<const void*>(&UnservedSlot<kTable, static_cast<int>(kSlot)>)),
   ...);
}

struct Tables {
  const void* slots[kExportTableCount][kMaxSlots] = {};
};
const Tables& GetTables();

// --- CUDART_INTERFACE ---------------------------------------------------------------------------

// Slot 1: the module of a fatbin wrapper (__fatBinC_Wrapper_t), in the current context.
CUresult ModuleFromFatbin(CUmodule* module, const void* wrapper) {
  CUresult rc = Guarded([&] {
    if (module == nullptr || wrapper == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadModuleImage(wrapper, false, reinterpret_cast<void**>(module));
  });
  LogCall(kCudartInterface, 1, rc, U(module), U(wrapper));
  return rc;
}

// Slot 2: the device's primary context, neither retained nor activated (ZLUDA checks this
// against the real driver: the context stays inactive until cuDevicePrimaryCtxRetain).
CUresult PrimaryContext(CUcontext* ctx, CUdevice dev) {
  CUresult rc = Guarded([&] {
    if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
    if (ctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *ctx = reinterpret_cast<CUcontext>(D().primaries[dev]);
    return CUDA_SUCCESS;
  });
  LogCall(kCudartInterface, 2, rc, U(ctx), U(dev));
  return rc;
}

// Slots 6 and 8: the same load with extra arguments (the wrapper first in 6, the fatbin itself
// second in 8). Both sources answer NOT_SUPPORTED unless the extras are null and zero.
CUresult ModuleFromFatbinExt(int slot, CUmodule* module, const void* image, void* a3, void* a4,
                             unsigned a5) {
  CUresult rc = Guarded([&] {
    if (a3 != nullptr || a4 != nullptr || a5 != 0) return CUDA_ERROR_NOT_SUPPORTED;
    if (module == nullptr || image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return LoadModuleImage(image, false, reinterpret_cast<void**>(module));
  });
  LogCall(kCudartInterface, slot, rc, U(module), U(image), U(a3), U(a4));
  return rc;
}
CUresult ModuleFromFatbinExt1(CUmodule* module, const void* wrapper, void* a3, void* a4,
                              unsigned a5) {
  return ModuleFromFatbinExt(6, module, wrapper, a3, a4, a5);
}
CUresult ModuleFromFatbinExt2(const void* fatbin, CUmodule* module, void* a3, void* a4,
                              unsigned a5) {
  return ModuleFromFatbinExt(8, module, fatbin, a3, a4, a5);
}

// Slot 7: takes one size-like argument and returns nothing; a no-op in both sources.
void CudartSlot7(size_t arg) { LogCall(kCudartInterface, 7, CUDA_SUCCESS, arg); }

// Slot 12: loads the JIT compilers (PTX, NVVM); nothing to load here.
CUresult LoadCompilers() {
  LogCall(kCudartInterface, 12, CUDA_SUCCESS);
  return CUDA_SUCCESS;
}

// --- TOOLS_RUNTIME_CALLBACK_HOOKS ---------------------------------------------------------------

// Slots 2 and 6 hand the runtime buffers in which tools switch callbacks on; zeroed buffers mean
// no tool is attached. The sizes are the sources' (1024 and 14 elements); the buffers are 4-byte
// elements, larger than a byte count of the same number would need.
template <int kSlot, size_t kElements>
void CallbackBuffer(void** ptr, size_t* size) {
  alignas(16) static uint32_t buffer[kElements] = {};
  if (ptr != nullptr) *ptr = buffer;
  if (size != nullptr) *size = kElements;
  LogCall(kToolsRuntimeCallbackHooks, kSlot, CUDA_SUCCESS, U(ptr), U(size));
}

// --- TOOLS_TLS and TOOLS_CONTEXT ------------------------------------------------------------

// TOOLS_TLS slot 2: the calling thread's current context into *out (null when it has none).
// cuBLAS asks before each GEMM and passes the answer to TOOLS_CONTEXT slot 4.
CUresult ThreadContext(CUcontext* out, uintptr_t a1, uintptr_t a2, uintptr_t a3) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  *out = CurrentContext(&ctx) == CUDA_SUCCESS ? reinterpret_cast<CUcontext>(ctx) : nullptr;
  LogCall(kToolsTls, 2, CUDA_SUCCESS, U(out), a1, a2, a3);
  return CUDA_SUCCESS;
}

// TOOLS_CONTEXT slot 4: the context's unique number (cuCtxGetId's) into *out; 0 for no context.
CUresult ContextNumber(CUcontext c, uint64_t* out, uintptr_t a2, uintptr_t a3) {
  CUresult rc = Guarded([&] {
    if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
    if (c == nullptr) {
      *out = 0;
      return CUDA_SUCCESS;
    }
    std::lock_guard<std::mutex> lock(D().mu);
    Context* ctx = AsContext(c);
    if (ctx == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
    *out = ctx->id;
    return CUDA_SUCCESS;
  });
  LogCall(kToolsContext, 4, rc, U(c), U(out), a2, a3);
  return rc;
}

// TOOLS_CONTEXT slot 39: (handle, key, out): 0 into *out.
CUresult ToolsContext39(uintptr_t a0, uintptr_t key, uint64_t* out, uintptr_t a3) {
  if (key == 0 || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = 0;
  LogCall(kToolsContext, 39, CUDA_SUCCESS, a0, key, U(out), a3);
  return CUDA_SUCCESS;
}

// The object slot 51 hands out: its first word points at a table of methods, none of which is
// simulated (each logs its index once and returns CUDA_ERROR_NOT_SUPPORTED).
template <int kMethod>
uintptr_t ObjectMethod(uintptr_t a0, uintptr_t a1, uintptr_t a2, uintptr_t a3) {
  static std::atomic<bool> warned{false};
  if (!warned.exchange(true)) {
    VGPU_LOG_WARN("TOOLS_CONTEXT object method %d is not simulated (args %#lx %#lx %#lx %#lx)",
                  kMethod, static_cast<unsigned long>(a0), static_cast<unsigned long>(a1),
                  static_cast<unsigned long>(a2), static_cast<unsigned long>(a3));
  }
  LogRequest("export-call TOOLS_CONTEXT-object %d 801 %#lx %#lx %#lx %#lx", kMethod,
             static_cast<unsigned long>(a0), static_cast<unsigned long>(a1),
             static_cast<unsigned long>(a2), static_cast<unsigned long>(a3));
  return CUDA_ERROR_NOT_SUPPORTED;
}
template <size_t... kMethod>
void FillMethods(const void** methods, std::index_sequence<kMethod...>) {
  ((methods[kMethod] = reinterpret_cast<const void*>(&ObjectMethod<static_cast<int>(kMethod)>)),
   ...);
}
struct ToolsObject {
  const void** methods;
  uint64_t zero[63];
};
uintptr_t ToolsContext51(uintptr_t a0, uintptr_t a1, void** out, uintptr_t a3) {
  static const void* methods[32];
  static ToolsObject object = [] {
    FillMethods(methods, std::make_index_sequence<32>());
    return ToolsObject{methods, {}};
  }();
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *out = &object;
  LogCall(kToolsContext, 51, CUDA_SUCCESS, a0, a1, U(out), a3);
  return CUDA_SUCCESS;
}

// --- CONTEXT_LOCAL_STORAGE ----------------------------------------------------------------------

// A null context means the current one.
CUresult StorageContext(CUcontext c, Context** out) {
  if (c == nullptr) return CurrentContext(out);
  *out = AsContext(c);
  return *out == nullptr ? CUDA_ERROR_INVALID_CONTEXT : CUDA_SUCCESS;
}

CUresult StoragePut(CUcontext c, void* key, void* value, LocalStorageDtor dtor) {
  CUresult rc = Guarded([&] {
    if (CUresult r = CheckInit(); r != CUDA_SUCCESS) return r;
    std::lock_guard<std::mutex> lock(D().mu);
    Context* ctx = nullptr;
    if (CUresult r = StorageContext(c, &ctx); r != CUDA_SUCCESS) return r;
    ctx->local_storage[key] = LocalValue{value, dtor};
    return CUDA_SUCCESS;
  });
  LogCall(kContextLocalStorage, 0, rc, U(c), U(key), U(value), reinterpret_cast<uintptr_t>(dtor));
  return rc;
}

// Deleting a key does not run its callback: the caller frees its value itself.
CUresult StorageDelete(CUcontext c, void* key) {
  CUresult rc = Guarded([&] {
    if (CUresult r = CheckInit(); r != CUDA_SUCCESS) return r;
    std::lock_guard<std::mutex> lock(D().mu);
    Context* ctx = nullptr;
    if (CUresult r = StorageContext(c, &ctx); r != CUDA_SUCCESS) return r;
    return ctx->local_storage.erase(key) == 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
  });
  LogCall(kContextLocalStorage, 1, rc, U(c), U(key));
  return rc;
}

// A key never put gives CUDA_ERROR_INVALID_HANDLE (both sources), and so does asking the current
// context when the thread has none: the runtime asks that way before it sets one up, and takes
// INVALID_HANDLE as "nothing stored yet" (any other error as a failed device).
CUresult StorageGet(void** value, CUcontext c, void* key) {
  CUresult rc = Guarded([&] {
    if (CUresult r = CheckInit(); r != CUDA_SUCCESS) return r;
    if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::lock_guard<std::mutex> lock(D().mu);
    Context* ctx = nullptr;
    if (c == nullptr && ThreadContextStack().empty()) return CUDA_ERROR_INVALID_HANDLE;
    if (CUresult r = StorageContext(c, &ctx); r != CUDA_SUCCESS) return r;
    auto it = ctx->local_storage.find(key);
    if (it == ctx->local_storage.end()) return CUDA_ERROR_INVALID_HANDLE;
    *value = it->second.value;
    return CUDA_SUCCESS;
  });
  LogCall(kContextLocalStorage, 2, rc, U(value), U(c), U(key));
  return rc;
}

// --- DEVICE_EXTENDED_RT -------------------------------------------------------------------------

// Slot 13 writes one byte about the device; ZLUDA reads 0 from a real GTX 1060.
CUresult DeviceByte(unsigned char* result, CUdevice dev) {
  CUresult rc = Guarded([&] {
    if (CUresult r = CheckDevice(dev); r != CUDA_SUCCESS) return r;
    if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *result = 0;
    return CUDA_SUCCESS;
  });
  LogCall(kDeviceExtendedRt, 13, rc, U(result), U(dev));
  return rc;
}

// --- INTEGRITY_CHECK ----------------------------------------------------------------------------

// Slot 1: the runtime hands a version and a time and expects a keyed digest (HMAC-MD2 under
// kIntegrityKey) of this process, the driver's tables and its devices. Versions ending in 0 or
// 1 get fixed answers. The layout of the digested records is the sources' (ZLUDA, LUPINE).
struct IntegrityProcess {
  uint32_t driver_version;
  uint32_t version;
  uint32_t pid;
  uint32_t thread;  // pthread_self(), truncated
  const void* cudart_table;
  const void* integrity_table;
  const void* check_function;
  uint64_t unix_seconds;
};
static_assert(sizeof(IntegrityProcess) == 48);
struct IntegrityDevice {
  uint8_t uuid[16];
  int32_t pci_domain;
  int32_t pci_bus;
  int32_t pci_device;
};
static_assert(sizeof(IntegrityDevice) == 28);

CUresult IntegrityDigest(unsigned version, uint64_t unix_seconds, uint64_t (*result)[2]) {
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (version % 10 == 0 || version % 10 == 1) {
    (*result)[0] = version % 10 == 0 ? 0x3341181c03cb675cULL : 0x1841181c03cb675cULL;
    (*result)[1] = 0x8ed383aa1f4cd1e8ULL;
    return CUDA_SUCCESS;
  }
  if (CUresult r = CheckInit(); r != CUDA_SUCCESS) return r;
  const Tables& t = GetTables();
  IntegrityProcess p{};
  p.driver_version = CUDA_VERSION;  // what cuDriverGetVersion reports
  p.version = version;
  p.pid = static_cast<uint32_t>(getpid());
  p.thread = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self()));
  p.cudart_table = t.slots[kCudartInterface];
  p.integrity_table = t.slots[kIntegrityCheck];
  p.check_function = t.slots[kIntegrityCheck][1];
  p.unix_seconds = unix_seconds;
  std::vector<IntegrityDevice> devices(D().visible.size());
  for (size_t i = 0; i < devices.size(); ++i) {
    const DeviceSpec& s = Spec(static_cast<int>(i));
    std::memcpy(devices[i].uuid, s.uuid_bytes.data(), 16);
    devices[i].pci_domain = static_cast<int32_t>(s.pci_domain);
    devices[i].pci_bus = static_cast<int32_t>(s.pci_bus);
    devices[i].pci_device = static_cast<int32_t>(s.pci_device);
  }
  Md2Part parts[2] = {{&p, sizeof(p)}, {devices.data(), devices.size() * sizeof(IntegrityDevice)}};
  Md2Digest d = HmacMd2(kIntegrityKey, parts, 2);
  std::memcpy(&(*result)[0], d.data(), 8);
  std::memcpy(&(*result)[1], d.data() + 8, 8);
  return CUDA_SUCCESS;
}

CUresult IntegrityCheck(unsigned version, uint64_t unix_seconds, uint64_t (*result)[2]) {
  CUresult rc = Guarded([&] { return IntegrityDigest(version, unix_seconds, result); });
  LogCall(kIntegrityCheck, 1, rc, version, unix_seconds, U(result));
  return rc;
}

// --- CONTEXT_CHECKS -----------------------------------------------------------------------------

// Slot 2 reports flags of a context that both sources always find 0; slot 3 returns 0.
CUresult ContextCheck(CUcontext ctx, uint32_t* result1, const void** result2) {
  if (result1 != nullptr) *result1 = 0;
  if (result2 != nullptr) *result2 = nullptr;
  LogCall(kContextChecks, 2, CUDA_SUCCESS, U(ctx), U(result1), U(result2));
  return CUDA_SUCCESS;
}
uint32_t ContextCheck3() {
  LogCall(kContextChecks, 3, CUDA_SUCCESS);
  return 0;
}

// --- the tables ---------------------------------------------------------------------------------

template <typename F>
const void* Fn(F* f) {
  return reinterpret_cast<const void*>(f);
}
const void* Size(int table) {
  return reinterpret_cast<const void*>(
      static_cast<uintptr_t>(kExportTableIds[table].slots * sizeof(void*)));
}

template <size_t... kTable>
void FillAllUnserved(Tables* t, std::index_sequence<kTable...>) {
  (FillUnserved<static_cast<int>(kTable)>(
       t->slots[kTable], std::make_index_sequence<kExportTableIds[kTable].slots>()),
   ...);
}

Tables* MakeTables() {
  auto* t = new Tables;
  FillAllUnserved(t, std::make_index_sequence<kExportTableCount>());
  for (int i = 0; i < kExportTableCount; ++i) {
    if (i != kContextLocalStorage) t->slots[i][0] = Size(i);  // the one table without a size
  }
  const void** rt = t->slots[kCudartInterface];
  rt[1] = Fn(&ModuleFromFatbin);
  rt[2] = Fn(&PrimaryContext);
  rt[6] = Fn(&ModuleFromFatbinExt1);
  rt[7] = Fn(&CudartSlot7);
  rt[8] = Fn(&ModuleFromFatbinExt2);
  rt[12] = Fn(&LoadCompilers);
  const void** hooks = t->slots[kToolsRuntimeCallbackHooks];
  hooks[2] = Fn(&CallbackBuffer<2, 1024>);
  hooks[6] = Fn(&CallbackBuffer<6, 14>);
  t->slots[kToolsTls][2] = Fn(&ThreadContext);
  t->slots[kToolsContext][4] = Fn(&ContextNumber);
  t->slots[kToolsContext][51] = Fn(&ToolsContext51);
  t->slots[kToolsContext][39] = Fn(&ToolsContext39);
  const void** cls = t->slots[kContextLocalStorage];
  cls[0] = Fn(&StoragePut);
  cls[1] = Fn(&StorageDelete);
  cls[2] = Fn(&StorageGet);
  t->slots[kDeviceExtendedRt][13] = Fn(&DeviceByte);
  t->slots[kIntegrityCheck][1] = Fn(&IntegrityCheck);
  t->slots[kContextChecks][2] = Fn(&ContextCheck);
  t->slots[kContextChecks][3] = Fn(&ContextCheck3);
  return t;
}

const Tables& GetTables() {
  static const Tables* tables = MakeTables();  // never destroyed: the runtime keeps the pointers
  return *tables;
}

void FormatUuid(const uint8_t* b, char (&out)[37]) {
  std::snprintf(out, sizeof(out),
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
}

CUresult GetExportTable(const void** out, const CUuuid* id) {
  static std::once_flag logging;
  std::call_once(logging, SetUpLogging);  // the runtime asks for tables before cuInit
  if (out != nullptr) *out = nullptr;
  if (out == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  char uuid[37];
  FormatUuid(reinterpret_cast<const uint8_t*>(id->bytes), uuid);
  for (int i = 0; i < kExportTableCount; ++i) {
    if (std::memcmp(id->bytes, kExportTableIds[i].bytes, 16) != 0) continue;
    *out = GetTables().slots[i];
    LogRequest("export-table %s %s served", uuid, kExportTableIds[i].name);
    return CUDA_SUCCESS;
  }
  LogRequest("export-table %s unknown not-supported", uuid);
  // Logged once per id (a program asks for few tables; at most 64 are remembered).
  static std::mutex mu;
  static uint8_t seen[64][16];
  static int n_seen = 0;
  std::lock_guard<std::mutex> lock(mu);
  for (int i = 0; i < n_seen; ++i) {
    if (std::memcmp(seen[i], id->bytes, 16) == 0) return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (n_seen < 64) std::memcpy(seen[n_seen++], id->bytes, 16);
  VGPU_LOG_INFO("export table %s is not simulated; returning CUDA_ERROR_NOT_SUPPORTED", uuid);
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace
}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  SIMGPU_GUARD({ return GetExportTable(ppExportTable, pExportTableId); });
}
