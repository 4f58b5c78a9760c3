// The CUDA runtime's private export tables on the simulated driver (cuGetExportTable), used the
// way the runtime uses them, and module images that the driver reads (PTX here; fatbins and
// cubins from nvcc in the simgpu_cudart_* tests).
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "sim_test_util.h"
#include "simgpu/driver/export_tables.h"
#include "simgpu/md2.h"

namespace vgpu::simgpu::testing {
namespace {

#define ASSERT_CU(call) ASSERT_EQ((call), CUDA_SUCCESS) << #call
#define EXPECT_CU(call) EXPECT_EQ((call), CUDA_SUCCESS) << #call

using driver::ExportTableIndex;
using driver::kExportTableIds;

const void* const* Table(ExportTableIndex t) {
  CUuuid id;
  std::memcpy(id.bytes, kExportTableIds[t].bytes, 16);
  const void* table = nullptr;
  EXPECT_CU(cuGetExportTable(&table, &id));
  return static_cast<const void* const*>(table);
}

template <typename F>
F Slot(ExportTableIndex t, int slot) {
  return reinterpret_cast<F>(const_cast<void*>(Table(t)[slot]));
}

TEST(SimgpuExportTables, RuntimeTablesAreServedWithTheirSizeOthersRefused) {
  for (int t = 0; t < driver::kExportTableCount; ++t) {
    const void* const* table = Table(static_cast<ExportTableIndex>(t));
    ASSERT_NE(table, nullptr) << kExportTableIds[t].name;
    if (t == driver::kContextLocalStorage) continue;  // the one table without a size slot
    EXPECT_EQ(reinterpret_cast<uintptr_t>(table[0]), kExportTableIds[t].slots * sizeof(void*))
        << kExportTableIds[t].name;
  }
  // The 13.0 runtime also asks for this one, and runs without it.
  CUuuid unknown = {{static_cast<char>(0xf8), static_cast<char>(0xcf), static_cast<char>(0xf9),
                     0x51, 0x21, 0x46, static_cast<char>(0x8b), 0x4e, static_cast<char>(0xb9),
                     static_cast<char>(0xe2), static_cast<char>(0xfb), 0x46,
                     static_cast<char>(0x9e), 0x7c, 0x0d, static_cast<char>(0xd9)}};
  const void* table = &unknown;
  EXPECT_EQ(cuGetExportTable(&table, &unknown), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(table, nullptr);
  EXPECT_EQ(cuGetExportTable(nullptr, &unknown), CUDA_ERROR_INVALID_VALUE);
  // A slot that is not served answers NOT_SUPPORTED instead of crashing the caller.
  using Bypass = CUresult (*)(CUcontext*, unsigned, CUdevice);
  CUcontext ctx = nullptr;
  EXPECT_EQ(Slot<Bypass>(driver::kCtxCreateBypass, 1)(&ctx, 0, 0), CUDA_ERROR_NOT_SUPPORTED);
}

using Dtor = void (*)(CUcontext, void*, void*);
using Put = CUresult (*)(CUcontext, void*, void*, Dtor);
using Delete = CUresult (*)(CUcontext, void*);
using Get = CUresult (*)(void**, CUcontext, void*);

struct DtorCall {
  CUcontext ctx;
  void* key;
  void* value;
};
std::vector<DtorCall>& DtorCalls() {
  static std::vector<DtorCall> calls;
  return calls;
}
void RecordDtor(CUcontext ctx, void* key, void* value) { DtorCalls().push_back({ctx, key, value}); }

TEST(SimgpuExportTables, ContextLocalStorageKeepsValuesPerContextUntilItIsDestroyed) {
  auto put = Slot<Put>(driver::kContextLocalStorage, 0);
  auto del = Slot<Delete>(driver::kContextLocalStorage, 1);
  auto get = Slot<Get>(driver::kContextLocalStorage, 2);
  int key1 = 0;
  int key2 = 0;
  int value1 = 0;
  int value2 = 0;
  void* v = nullptr;
  // No current context: nothing is stored for it.
  EXPECT_EQ(get(&v, nullptr, &key1), CUDA_ERROR_INVALID_HANDLE);

  CUdevice dev = 0;
  ASSERT_CU(cuDeviceGet(&dev, 0));
  CUcontext ctx = nullptr;
  ASSERT_CU(cuCtxCreate(&ctx, nullptr, 0, dev));  // current from now on
  DtorCalls().clear();
  EXPECT_EQ(get(&v, ctx, &key1), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(put(nullptr, &key1, &value1, RecordDtor));  // null: the current context
  ASSERT_CU(put(ctx, &key2, &value2, RecordDtor));
  ASSERT_CU(get(&v, ctx, &key1));
  EXPECT_EQ(v, &value1);
  ASSERT_CU(get(&v, nullptr, &key2));
  EXPECT_EQ(v, &value2);
  ASSERT_CU(put(ctx, &key2, &value1, RecordDtor));  // replaces
  ASSERT_CU(get(&v, ctx, &key2));
  EXPECT_EQ(v, &value1);
  ASSERT_CU(del(ctx, &key1));
  EXPECT_EQ(get(&v, ctx, &key1), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(del(ctx, &key1), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_TRUE(DtorCalls().empty()) << "deleting a key does not run its callback";

  // Another context has storage of its own.
  CUcontext other = nullptr;
  ASSERT_CU(cuCtxCreate(&other, nullptr, 0, dev));
  EXPECT_EQ(get(&v, other, &key2), CUDA_ERROR_INVALID_HANDLE);
  ASSERT_CU(cuCtxDestroy(other));

  ASSERT_CU(cuCtxDestroy(ctx));
  ASSERT_EQ(DtorCalls().size(), 1u) << "destroying the context runs what is left";
  EXPECT_EQ(DtorCalls()[0].ctx, ctx);
  EXPECT_EQ(DtorCalls()[0].key, &key2);
  EXPECT_EQ(DtorCalls()[0].value, &value1);
  EXPECT_EQ(put(ctx, &key1, &value1, RecordDtor), CUDA_ERROR_INVALID_CONTEXT);
}

TEST(SimgpuExportTables, PrimaryContextSlotGivesTheContextWithoutRetainingIt) {
  using Primary = CUresult (*)(CUcontext*, CUdevice);
  auto primary = Slot<Primary>(driver::kCudartInterface, 2);
  CUdevice dev = 1;  // device 0's primary context is retained by other tests
  unsigned flags = 0;
  int active = -1;
  ASSERT_CU(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  ASSERT_EQ(active, 0);
  CUcontext ctx = nullptr;
  ASSERT_CU(primary(&ctx, dev));
  ASSERT_NE(ctx, nullptr);
  ASSERT_CU(cuDevicePrimaryCtxGetState(dev, &flags, &active));
  EXPECT_EQ(active, 0);
  EXPECT_EQ(primary(&ctx, 7), CUDA_ERROR_INVALID_DEVICE);

  // The runtime makes it current before it retains it; the retain gives the same context, and
  // its release (the last) runs the storage callbacks.
  CUcontext before = nullptr;
  ASSERT_CU(cuCtxGetCurrent(&before));
  ASSERT_CU(cuCtxSetCurrent(ctx));
  CUcontext retained = nullptr;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&retained, dev));
  EXPECT_EQ(retained, ctx);
  int key = 0;
  DtorCalls().clear();
  ASSERT_CU(Slot<Put>(driver::kContextLocalStorage, 0)(nullptr, &key, &key, RecordDtor));
  CUdeviceptr p = 0;
  EXPECT_CU(cuMemAlloc(&p, 4096));
  EXPECT_CU(cuMemFree(p));
  ASSERT_CU(cuDevicePrimaryCtxRelease(dev));
  ASSERT_EQ(DtorCalls().size(), 1u);
  EXPECT_EQ(DtorCalls()[0].ctx, ctx);
  ASSERT_CU(cuCtxSetCurrent(before));
}

// What cuBLAS asks before each GEMM: the thread's context, then that context's number.
TEST(SimgpuExportTables, ToolsSlotsGiveTheThreadsContextAndItsNumber) {
  using ThreadContext = CUresult (*)(CUcontext*, uintptr_t, uintptr_t, uintptr_t);
  using ContextNumber = CUresult (*)(CUcontext, uint64_t*, uintptr_t, uintptr_t);
  auto thread_context = Slot<ThreadContext>(driver::kToolsTls, 2);
  auto number = Slot<ContextNumber>(driver::kToolsContext, 4);
  CUcontext before = nullptr;
  ASSERT_CU(cuCtxGetCurrent(&before));

  ASSERT_CU(cuCtxSetCurrent(nullptr));
  CUcontext got = reinterpret_cast<CUcontext>(1);
  ASSERT_CU(thread_context(&got, 0, 0, 0));
  EXPECT_EQ(got, nullptr);
  uint64_t n = 7;
  ASSERT_CU(number(nullptr, &n, 0, 0));
  EXPECT_EQ(n, 0u);

  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  ASSERT_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
  ASSERT_CU(cuCtxSetCurrent(ctx));
  ASSERT_CU(thread_context(&got, 0, 0, 0));
  EXPECT_EQ(got, ctx);
  unsigned long long id = 0;
  ASSERT_CU(cuCtxGetId(ctx, &id));
  ASSERT_CU(number(got, &n, 0, 0));
  EXPECT_EQ(n, id);
  EXPECT_EQ(thread_context(nullptr, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(number(ctx, nullptr, 0, 0), CUDA_ERROR_INVALID_VALUE);
  int not_a_context = 0;
  EXPECT_EQ(number(reinterpret_cast<CUcontext>(&not_a_context), &n, 0, 0),
            CUDA_ERROR_INVALID_CONTEXT);

  // Slot 39 answers 0; slot 51 hands out one object whose methods refuse instead of crashing.
  using Slot39 = CUresult (*)(uintptr_t, uintptr_t, uint64_t*, uintptr_t);
  using Slot51 = CUresult (*)(uintptr_t, uintptr_t, void**, uintptr_t);
  using Method = uintptr_t (*)(uintptr_t, uintptr_t, uintptr_t, uintptr_t);
  uint64_t value = 5;
  ASSERT_CU(Slot<Slot39>(driver::kToolsContext, 39)(0, 1, &value, 0));
  EXPECT_EQ(value, 0u);
  EXPECT_EQ(Slot<Slot39>(driver::kToolsContext, 39)(0, 0, &value, 0), CUDA_ERROR_INVALID_VALUE);
  void* object = nullptr;
  ASSERT_CU(Slot<Slot51>(driver::kToolsContext, 51)(0, 0, &object, 0));
  ASSERT_NE(object, nullptr);
  void* again = nullptr;
  ASSERT_CU(Slot<Slot51>(driver::kToolsContext, 51)(0, 0, &again, 0));
  EXPECT_EQ(again, object);
  Method* methods = *static_cast<Method**>(object);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(methods[i](0, 0, 0, 0), CUDA_ERROR_NOT_SUPPORTED) << i;

  ASSERT_CU(cuCtxSetCurrent(before));
  ASSERT_CU(cuDevicePrimaryCtxRelease(dev));
}

TEST(SimgpuExportTables, IntegrityCheckIsTheKeyedDigestOfProcessAndDevices) {
  using Check = CUresult (*)(unsigned, uint64_t, uint64_t(*)[2]);
  auto check = Slot<Check>(driver::kIntegrityCheck, 1);
  uint64_t r[2] = {};
  ASSERT_CU(check(13000, 1700000000, &r));
  EXPECT_EQ(r[0], 0x3341181c03cb675cULL);
  EXPECT_EQ(r[1], 0x8ed383aa1f4cd1e8ULL);
  ASSERT_CU(check(13001, 1700000000, &r));
  EXPECT_EQ(r[0], 0x1841181c03cb675cULL);

  // Versions ending in 2..9: HMAC-MD2 over the process record and one record per device.
  struct {
    uint32_t driver_version, version, pid, thread;
    const void* cudart_table;
    const void* integrity_table;
    const void* check_function;
    uint64_t unix_seconds;
  } process = {};
  int driver_version = 0;
  ASSERT_CU(cuDriverGetVersion(&driver_version));
  process.driver_version = static_cast<uint32_t>(driver_version);
  process.version = 13002;
  process.pid = static_cast<uint32_t>(getpid());
  process.thread = static_cast<uint32_t>(reinterpret_cast<uintptr_t>(pthread_self()));
  process.cudart_table = Table(driver::kCudartInterface);
  process.integrity_table = Table(driver::kIntegrityCheck);
  process.check_function = Table(driver::kIntegrityCheck)[1];
  process.unix_seconds = 1700000000;
  struct Device {
    CUuuid uuid;
    int32_t domain, bus, device;
  };
  int n = 0;
  ASSERT_CU(cuDeviceGetCount(&n));
  std::vector<Device> devices(n);
  for (int i = 0; i < n; ++i) {
    ASSERT_CU(cuDeviceGetUuid_v2(&devices[i].uuid, i));
    ASSERT_CU(cuDeviceGetAttribute(&devices[i].domain, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, i));
    ASSERT_CU(cuDeviceGetAttribute(&devices[i].bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, i));
    ASSERT_CU(cuDeviceGetAttribute(&devices[i].device, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, i));
  }
  static_assert(sizeof(process) == 48 && sizeof(Device) == 28);
  Md2Part parts[2] = {{&process, sizeof(process)}, {devices.data(), devices.size() * 28}};
  Md2Digest want = HmacMd2(driver::kIntegrityKey, parts, 2);
  ASSERT_CU(check(13002, 1700000000, &r));
  EXPECT_EQ(std::memcmp(r, want.data(), 16), 0);
  uint64_t later[2] = {};
  ASSERT_CU(check(13002, 1700000001, &later));
  EXPECT_NE(std::memcmp(r, later, 16), 0) << "the time is part of the digest";
  EXPECT_EQ(check(13002, 1, nullptr), CUDA_ERROR_INVALID_VALUE);
}

const char* kPtx = R"(
.version 9.0
.target sm_90
.address_size 64
.visible .entry _Z5scalePfif(
  .param .u64 .ptr .align 1 _Z5scalePfif_param_0,
  .param .u32 _Z5scalePfif_param_1,
  .param .f32 _Z5scalePfif_param_2
)
{ ret; }
.visible .entry sim_sleep_ns_kernel(.param .u64 ns)
{ ret; }
)";

// A fatbin (magic, version, header size, entries' size) with one uncompressed PTX entry, and the
// wrapper the runtime registers it with.
struct Fatbin {
  std::vector<uint8_t> bytes;
  struct {
    uint32_t magic = 0x466243B1;
    uint32_t version = 1;
    const uint8_t* data = nullptr;
    const void* unused = nullptr;
  } wrapper;
  Fatbin() {
    std::vector<uint8_t> entry(64, 0);
    size_t text = std::strlen(kPtx) + 1;
    uint32_t payload = static_cast<uint32_t>((text + 7) / 8 * 8);
    uint16_t kind = 1;
    uint16_t version = 0x101;
    uint32_t header = 64;
    std::memcpy(&entry[0], &kind, 2);
    std::memcpy(&entry[2], &version, 2);
    std::memcpy(&entry[4], &header, 4);
    std::memcpy(&entry[8], &payload, 4);
    entry.insert(entry.end(), kPtx, kPtx + text);
    entry.resize(64 + payload, 0);
    uint32_t magic = 0xBA55ED50;
    uint16_t one = 1;
    uint16_t sixteen = 16;
    uint64_t size = entry.size();
    bytes.resize(16);
    std::memcpy(&bytes[0], &magic, 4);
    std::memcpy(&bytes[4], &one, 2);
    std::memcpy(&bytes[6], &sixteen, 2);
    std::memcpy(&bytes[8], &size, 8);
    bytes.insert(bytes.end(), entry.begin(), entry.end());
    wrapper.data = bytes.data();
  }
};

TEST(SimgpuExportTables, ModuleFromAFatbinWrapperHasItsKernels) {
  ScopedContext ctx;
  Fatbin fatbin;
  using FromFatbin = CUresult (*)(CUmodule*, const void*);
  CUmodule m = nullptr;
  ASSERT_CU(Slot<FromFatbin>(driver::kCudartInterface, 1)(&m, &fatbin.wrapper));
  unsigned count = 0;
  ASSERT_CU(cuModuleGetFunctionCount(&count, m));
  EXPECT_EQ(count, 2u);
  CUfunction f = nullptr;
  ASSERT_CU(cuModuleGetFunction(&f, m, "_Z5scalePfif"));
  EXPECT_EQ(cuModuleGetFunction(&f, m, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
  ASSERT_CU(cuModuleUnload(m));

  using FromFatbinExt = CUresult (*)(const void*, CUmodule*, void*, void*, unsigned);
  auto ext2 = Slot<FromFatbinExt>(driver::kCudartInterface, 8);
  ASSERT_CU(ext2(fatbin.bytes.data(), &m, nullptr, nullptr, 0));
  ASSERT_CU(cuModuleGetFunction(&f, m, "sim_sleep_ns_kernel"));
  ASSERT_CU(cuModuleUnload(m));
  int extra = 0;
  EXPECT_EQ(ext2(fatbin.bytes.data(), &m, &extra, nullptr, 0), CUDA_ERROR_NOT_SUPPORTED);
}

TEST(SimgpuModules, ReadableImagesHaveExactlyTheirKernelsAndParameterLayouts) {
  ScopedContext ctx;
  CUmodule m = nullptr;
  ASSERT_CU(cuModuleLoadData(&m, kPtx));
  CUfunction f = nullptr;
  ASSERT_CU(cuModuleGetFunction(&f, m, "_Z5scalePfif"));
  size_t offset = 99;
  size_t size = 99;
  ASSERT_CU(cuFuncGetParamInfo(f, 0, &offset, &size));
  EXPECT_EQ(offset, 0u);
  EXPECT_EQ(size, 8u);
  ASSERT_CU(cuFuncGetParamInfo(f, 2, &offset, &size));
  EXPECT_EQ(offset, 12u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cuFuncGetParamInfo(f, 3, &offset, &size), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuFuncGetParamInfo(f, 0, nullptr, &size), CUDA_ERROR_INVALID_VALUE);
  CUfunction all[2] = {};
  ASSERT_CU(cuModuleEnumerateFunctions(all, 2, m));
  EXPECT_TRUE(all[0] == f || all[1] == f);
  CUdeviceptr g = 0;
  EXPECT_EQ(cuModuleGetGlobal(&g, nullptr, m, "nothing"), CUDA_ERROR_NOT_FOUND);
  ASSERT_CU(cuModuleUnload(m));

  // A library: kernels by name, the same layouts, and its module finds them too.
  CUlibrary lib = nullptr;
  ASSERT_CU(cuLibraryLoadData(&lib, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel k = nullptr;
  ASSERT_CU(cuLibraryGetKernel(&k, lib, "_Z5scalePfif"));
  ASSERT_CU(cuKernelGetParamInfo(k, 1, &offset, &size));
  EXPECT_EQ(offset, 8u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cuLibraryGetKernel(&k, lib, "_Z7missingv"), CUDA_ERROR_NOT_FOUND);
  CUmodule lm = nullptr;
  ASSERT_CU(cuLibraryGetModule(&lm, lib));
  ASSERT_CU(cuModuleGetFunction(&f, lm, "sim_sleep_ns_kernel"));
  EXPECT_EQ(cuModuleUnload(lm), CUDA_ERROR_INVALID_HANDLE) << "a library is unloaded as one";
  ASSERT_CU(cuLibraryUnload(lib));

  // Bytes that are no image still load, and then any name is found, with no known layout.
  ASSERT_CU(cuModuleLoadData(&m, "not a real image"));
  ASSERT_CU(cuModuleGetFunction(&f, m, "anything"));
  EXPECT_EQ(cuFuncGetParamInfo(f, 0, &offset, &size), CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_CU(cuModuleUnload(m));
}

TEST(SimgpuModules, UnsimulatedEntryPointsAreNotHandedOut) {
  void* fn = reinterpret_cast<void*>(1);
  CUdriverProcAddressQueryResult status = CU_GET_PROC_ADDRESS_SUCCESS;
  EXPECT_EQ(cuGetProcAddress("cuTexObjectCreate", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  EXPECT_EQ(fn, nullptr);
  ASSERT_CU(cuGetProcAddress("cuFuncGetParamInfo", &fn, 13000, 0, &status));
  EXPECT_EQ(fn, dlsym(RTLD_DEFAULT, "cuFuncGetParamInfo"));
}

}  // namespace
}  // namespace vgpu::simgpu::testing
