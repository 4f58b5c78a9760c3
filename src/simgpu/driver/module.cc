// Modules and libraries (images read as image.h describes), function and kernel lookup,
// parameter layouts, module globals, function attributes and occupancy.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/log.h"

#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

constexpr int kSharedPerSm = 233472;
constexpr int kMaxDynamicShared = 232448;

// The module or library `h` is, if it is of the kind asked for. A library is its own module
// (cuLibraryGetModule), so module lookups accept libraries too; unloading does not.
Module* AsModule(void* h, bool library, bool lookup = true) {
  auto* m = static_cast<Module*>(h);
  if (m == nullptr || m->tag != Tag::kModule || m->unloaded) return nullptr;
  if (m->library != library && !(lookup && !library)) return nullptr;
  return m;
}

// A new function of `m` named `name`, with the parameter layout `k` when the image gave one.
Function* NewFunctionLocked(Module* m, const std::string& name, const ImageKernel* k) {
  Function* f = Recycler<Function>::Make();
  f->module = m;
  f->name = name;
  f->sleep_convention = f->name.find(kSleepKernelMarker) != std::string::npos;
  f->touch_convention = f->name.find(kTouchKernelMarker) != std::string::npos;
  f->attributes[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = 1024;
  f->attributes[CU_FUNC_ATTRIBUTE_NUM_REGS] = 32;
  f->attributes[CU_FUNC_ATTRIBUTE_PTX_VERSION] = 90;
  f->attributes[CU_FUNC_ATTRIBUTE_BINARY_VERSION] = 90;
  f->attributes[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = 49152;
  f->attributes[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] = -1;
  if (k != nullptr) {
    f->params_known = true;
    f->params = k->params;
    f->param_bytes = k->param_bytes;
  }
  return f;
}

CUresult NewModule(const void* image, void** out, bool library) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!library) {
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  }
  ImageInfo info = ReadImage(image, SystemDecompressor());
  if (!info.symbols_known && info.kind != ImageKind::kUnknown) {
    VGPU_LOG_DEBUG("module image not read (%s): every kernel name will be found",
                   info.note.c_str());
  }
  std::lock_guard<std::mutex> lock(D().mu);
  Module* m = Recycler<Module>::Make();
  m->library = library;
  m->symbols_known = info.symbols_known;
  for (const ImageKernel& k : info.kernels) m->functions[k.name] = NewFunctionLocked(m, k.name, &k);
  for (ImageGlobal& g : info.globals) m->globals[g.name] = std::move(g);
  *out = m;
  return CUDA_SUCCESS;
}

// The contents of a module file (a cubin, fatbin or PTX), NUL-terminated for PTX.
CUresult ReadModuleFile(const char* path, std::vector<uint8_t>* out) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_FILE_NOT_FOUND;
  uint8_t buf[65536];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out->insert(out->end(), buf, buf + n);
  close(fd);
  if (n < 0) return CUDA_ERROR_FILE_NOT_FOUND;
  out->resize(out->size() + 8, 0);  // a NUL after PTX text; room for the magic check
  return CUDA_SUCCESS;
}

CUresult LoadFile(const char* path, void** out, bool library) {
  std::vector<uint8_t> data;
  if (CUresult rc = ReadModuleFile(path, &data); rc != CUDA_SUCCESS) return rc;
  return NewModule(data.data(), out, library);  // what it needs is copied out of the image
}

CUresult Lookup(Module* m, const char* name, Function** out) {
  if (name == nullptr || out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  auto it = m->functions.find(name);
  if (it != m->functions.end()) {
    *out = it->second;
    return CUDA_SUCCESS;
  }
  if (m->symbols_known) return CUDA_ERROR_NOT_FOUND;
  Function* f = NewFunctionLocked(m, name, nullptr);
  m->functions[name] = f;
  *out = f;
  return CUDA_SUCCESS;
}

CUresult Unload(void* h, bool library) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  Module* m = AsModule(h, library, /*lookup=*/false);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [name, f] : m->functions) Recycler<Function>::Retire(f);
  m->functions.clear();
  for (auto& [name, a] : m->global_mem) {
    if (RemoveAllocationLocked(a->base) == a) FreeAllocationLocked(a);
  }
  m->global_mem.clear();
  m->globals.clear();
  Recycler<Module>::Retire(m);
  return CUDA_SUCCESS;
}

CUresult Enumerate(void** out, unsigned n, Module* m) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  if (n != m->functions.size()) return CUDA_ERROR_INVALID_VALUE;
  unsigned i = 0;
  for (auto& [name, f] : m->functions) out[i++] = f;
  return CUDA_SUCCESS;
}

// The entry points of modules and of libraries (`library`: which kind the handle `h` must be).
CUresult LookupIn(void* h, bool library, const char* name, Function** out) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  Module* m = AsModule(h, library);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Lookup(m, name, out);
}

CUresult CountIn(void* h, bool library, unsigned* count) {
  Module* m = AsModule(h, library);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  *count = static_cast<unsigned>(m->functions.size());
  return CUDA_SUCCESS;
}

CUresult EnumerateIn(void* h, bool library, void** out, unsigned n) {
  Module* m = AsModule(h, library);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  return Enumerate(out, n, m);
}

// A module global: host memory standing in for it, made (with the image's initial bytes) at its
// first lookup and freed with the module. Not charged to the device. Globals of an image that
// could not be read are not found.
CUresult FindGlobal(void* h, bool library, const char* name, CUdeviceptr* dptr, size_t* bytes) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  Module* m = AsModule(h, library);
  if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  auto g = m->globals.find(name);
  if (g == m->globals.end()) return CUDA_ERROR_NOT_FOUND;
  Allocation*& a = m->global_mem[name];
  if (a == nullptr) {
    Backing backing = AllocateBacking(g->second.size);
    if (backing.ptr == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
    std::memset(backing.ptr, 0, g->second.size);
    std::memcpy(backing.ptr, g->second.init.data(), g->second.init.size());
    a = new Allocation;
    a->base = reinterpret_cast<uintptr_t>(backing.ptr);
    a->size = g->second.size;
    a->kind = AllocKind::kModule;
    a->device = ctx->device;
    a->phys = ctx->phys;
    a->backing = backing;
    AddAllocationLocked(a);
  }
  if (dptr != nullptr) *dptr = static_cast<CUdeviceptr>(a->base);
  if (bytes != nullptr) *bytes = a->size;
  return CUDA_SUCCESS;
}

CUresult ParamInfo(void* h, size_t index, size_t* offset, size_t* size) {
  Function* f = AsFunction(h);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  if (!f->params_known) return CUDA_ERROR_NOT_SUPPORTED;  // its image could not be read
  if (index >= f->params.size()) return CUDA_ERROR_INVALID_VALUE;
  *offset = f->params[index].offset;
  if (size != nullptr) *size = f->params[index].size;
  return CUDA_SUCCESS;
}

int MaxBlocksPerSm(int block_size, size_t dynamic_smem) {
  if (block_size <= 0) return 0;
  int by_threads = 2048 / block_size;
  int by_smem = static_cast<int>(kSharedPerSm / (dynamic_smem + 1024));
  return std::max(0, std::min({32, by_threads, by_smem}));
}

CUresult PotentialBlockSize(int* min_grid, int* block_size, CUfunction func,
                            CUoccupancyB2DSize smem_fn, size_t smem, int limit) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  if (min_grid == nullptr || block_size == nullptr || AsFunction(func) == nullptr) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  int bs = (limit > 0 && limit < 1024) ? limit : 1024;
  size_t dyn = smem_fn != nullptr ? smem_fn(bs) : smem;
  *block_size = bs;
  *min_grid = Spec(ctx->device).sm_count * MaxBlocksPerSm(bs, dyn);
  return CUDA_SUCCESS;
}

// Cluster occupancy: the largest cluster is 8 blocks, 16 when the kernel allows non-portable
// sizes (an H100's and H200's limits), or the kernel's required cluster size when it has one;
// the clusters that fit at once are the device's blocks at the configuration's occupancy divided
// by the cluster size (GPCs are not modelled). 0 = no size (none required, none given).
int RequiredClusterSize(const Function& f) {
  const int w = f.attributes[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH];
  const int h = f.attributes[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT];
  const int d = f.attributes[CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH];
  if (w <= 0 && h <= 0 && d <= 0) return 0;
  return std::max(w, 1) * std::max(h, 1) * std::max(d, 1);
}
int MaxClusterSize(const Function& f) {
  return f.attributes[CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED] != 0 ? 16 : 8;
}
int ConfiguredClusterSize(const CUlaunchConfig& c) {
  for (unsigned int i = 0; c.attrs != nullptr && i < c.numAttrs; ++i) {
    if (c.attrs[i].id != CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION) continue;
    const auto& dim = c.attrs[i].value.clusterDim;
    return static_cast<int>(std::max(dim.x, 1u) * std::max(dim.y, 1u) * std::max(dim.z, 1u));
  }
  return 0;
}
int BlockSizeOf(const CUlaunchConfig& c) {
  return static_cast<int>(c.blockDimX * std::max(c.blockDimY, 1u) * std::max(c.blockDimZ, 1u));
}

CUresult PotentialClusterSize(int* size, CUfunction func, const CUlaunchConfig* config) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  Function* f = AsFunction(func);
  if (size == nullptr || f == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  const int required = RequiredClusterSize(*f);
  const bool fits = MaxBlocksPerSm(BlockSizeOf(*config), config->sharedMemBytes) > 0;
  *size = !fits ? 0 : required > 0 ? required : MaxClusterSize(*f);
  return CUDA_SUCCESS;
}

CUresult ActiveClusters(int* clusters, CUfunction func, const CUlaunchConfig* config) {
  if (CUresult rc = CheckInit(); rc != CUDA_SUCCESS) return rc;
  Function* f = AsFunction(func);
  if (clusters == nullptr || f == nullptr || config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Context* ctx = nullptr;
  if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
  std::lock_guard<std::mutex> lock(D().mu);
  const int required = RequiredClusterSize(*f);
  const int given = ConfiguredClusterSize(*config);
  if (required > 0 && given > 0 && required != given) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  const int size = given > 0 ? given : required;
  if (size <= 0 || size > MaxClusterSize(*f)) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  const int blocks =
      Spec(ctx->device).sm_count * MaxBlocksPerSm(BlockSizeOf(*config), config->sharedMemBytes);
  *clusters = blocks / size;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult LoadModuleImage(const void* image, bool library, void** out) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return NewModule(image, out, library);
}

Function* AsFunction(void* handle) {
  auto* f = static_cast<Function*>(handle);
  if (f == nullptr || f->tag != Tag::kFunction) return nullptr;
  return f;
}

}  // namespace vgpu::simgpu::driver

using namespace vgpu::simgpu;
using namespace vgpu::simgpu::driver;

SIMGPU_API CUresult cuModuleLoad(CUmodule* module, const char* fname) {
  SIMGPU_GUARD({ return LoadFile(fname, reinterpret_cast<void**>(module), false); });
}
SIMGPU_API CUresult cuModuleLoadData(CUmodule* module, const void* image) {
  SIMGPU_GUARD({
    if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return NewModule(image, reinterpret_cast<void**>(module), false);
  });
}
SIMGPU_API CUresult cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                       CUjit_option* options, void** optionValues) {
  (void)numOptions;
  (void)options;
  (void)optionValues;
  return cuModuleLoadData(module, image);
}
SIMGPU_API CUresult cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  return cuModuleLoadData(module, fatCubin);
}
SIMGPU_API CUresult cuModuleUnload(CUmodule hmod) {
  SIMGPU_GUARD({ return Unload(hmod, false); });
}

SIMGPU_API CUresult cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *mode = CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

SIMGPU_API CUresult cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  SIMGPU_GUARD({ return LookupIn(hmod, false, name, reinterpret_cast<Function**>(hfunc)); });
}

SIMGPU_API CUresult cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  SIMGPU_GUARD({ return CountIn(mod, false, count); });
}

SIMGPU_API CUresult cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions,
                                               CUmodule mod) {
  SIMGPU_GUARD(
      { return EnumerateIn(mod, false, reinterpret_cast<void**>(functions), numFunctions); });
}

SIMGPU_API CUresult cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod,
                                         const char* name) {
  SIMGPU_GUARD({ return FindGlobal(hmod, false, name, dptr, bytes); });
}

// The 32-bit legacy variant: globals live above 4 GiB, so none fits its pointer type.
SIMGPU_API CUresult cuModuleGetGlobal(CUdeviceptr_v1* dptr, unsigned int* bytes, CUmodule hmod,
                                      const char* name) {
  (void)dptr;
  (void)bytes;
  SIMGPU_GUARD({
    CUresult rc = FindGlobal(hmod, false, name, nullptr, nullptr);
    return rc == CUDA_SUCCESS ? CUDA_ERROR_NOT_SUPPORTED : rc;
  });
}

SIMGPU_API CUresult cuLibraryLoadData(CUlibrary* library, const void* code,
                                      CUjit_option* jitOptions, void** jitOptionsValues,
                                      unsigned int numJitOptions, CUlibraryOption* libraryOptions,
                                      void** libraryOptionValues, unsigned int numLibraryOptions) {
  (void)jitOptions;
  (void)jitOptionsValues;
  (void)numJitOptions;
  (void)libraryOptions;
  (void)libraryOptionValues;
  (void)numLibraryOptions;
  SIMGPU_GUARD({
    if (code == nullptr) return CUDA_ERROR_INVALID_VALUE;
    return NewModule(code, reinterpret_cast<void**>(library), true);
  });
}

SIMGPU_API CUresult cuLibraryLoadFromFile(CUlibrary* library, const char* fileName,
                                          CUjit_option* jitOptions, void** jitOptionsValues,
                                          unsigned int numJitOptions,
                                          CUlibraryOption* libraryOptions,
                                          void** libraryOptionValues,
                                          unsigned int numLibraryOptions) {
  (void)jitOptions;
  (void)jitOptionsValues;
  (void)numJitOptions;
  (void)libraryOptions;
  (void)libraryOptionValues;
  (void)numLibraryOptions;
  SIMGPU_GUARD({ return LoadFile(fileName, reinterpret_cast<void**>(library), true); });
}

SIMGPU_API CUresult cuLibraryUnload(CUlibrary library) {
  SIMGPU_GUARD({ return Unload(library, true); });
}

SIMGPU_API CUresult cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  SIMGPU_GUARD({ return LookupIn(library, true, name, reinterpret_cast<Function**>(pKernel)); });
}

SIMGPU_API CUresult cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  SIMGPU_GUARD({ return CountIn(lib, true, count); });
}

SIMGPU_API CUresult cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels,
                                              CUlibrary lib) {
  SIMGPU_GUARD({ return EnumerateIn(lib, true, reinterpret_cast<void**>(kernels), numKernels); });
}

SIMGPU_API CUresult cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  SIMGPU_GUARD({
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    Module* m = AsModule(library, true);
    if (m == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pMod = reinterpret_cast<CUmodule>(m);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library,
                                       const char* name) {
  SIMGPU_GUARD({ return FindGlobal(library, true, name, dptr, bytes); });
}

SIMGPU_API CUresult cuFuncGetParamInfo(CUfunction func, size_t paramIndex, size_t* paramOffset,
                                       size_t* paramSize) {
  SIMGPU_GUARD({ return ParamInfo(func, paramIndex, paramOffset, paramSize); });
}

SIMGPU_API CUresult cuKernelGetParamInfo(CUkernel kernel, size_t paramIndex, size_t* paramOffset,
                                         size_t* paramSize) {
  SIMGPU_GUARD({ return ParamInfo(kernel, paramIndex, paramOffset, paramSize); });
}

SIMGPU_API CUresult cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  SIMGPU_GUARD({
    Context* ctx = nullptr;
    if (CUresult rc = CurrentContext(&ctx); rc != CUDA_SUCCESS) return rc;
    Function* f = AsFunction(kernel);
    if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
    if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
    *pFunc = reinterpret_cast<CUfunction>(f);
    return CUDA_SUCCESS;
  });
}

SIMGPU_API CUresult cuKernelGetLibrary(CUlibrary* pLib, CUkernel kernel) {
  Function* f = AsFunction(kernel);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pLib == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pLib = reinterpret_cast<CUlibrary>(f->module);
  return CUDA_SUCCESS;
}

static CUresult GetName(const char** name, void* h) {
  Function* f = AsFunction(h);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *name = f->name.c_str();
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuKernelGetName(const char** name, CUkernel hfunc) {
  return GetName(name, hfunc);
}
SIMGPU_API CUresult cuFuncGetName(const char** name, CUfunction hfunc) {
  return GetName(name, hfunc);
}

static CUresult GetAttribute(int* pi, CUfunction_attribute attrib, void* h) {
  Function* f = AsFunction(h);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (pi == nullptr || attrib < 0 || attrib >= CU_FUNC_ATTRIBUTE_MAX)
    return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(D().mu);
  *pi = f->attributes[attrib];
  return CUDA_SUCCESS;
}
static CUresult SetAttribute(void* h, CUfunction_attribute attrib, int value) {
  Function* f = AsFunction(h);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    if (value < 0 || value > kMaxDynamicShared) return CUDA_ERROR_INVALID_VALUE;
  } else if (attrib != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT &&
             attrib != CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH &&
             attrib != CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT &&
             attrib != CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH &&
             attrib != CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED &&
             attrib != CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE) {
    return CUDA_ERROR_INVALID_VALUE;  // read-only attributes
  }
  std::lock_guard<std::mutex> lock(D().mu);
  f->attributes[attrib] = value;
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  SIMGPU_GUARD({ return GetAttribute(pi, attrib, hfunc); });
}
SIMGPU_API CUresult cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  SIMGPU_GUARD({ return SetAttribute(hfunc, attrib, value); });
}
SIMGPU_API CUresult cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel,
                                         CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    return GetAttribute(pi, attrib, kernel);
  });
}
SIMGPU_API CUresult cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel,
                                         CUdevice dev) {
  SIMGPU_GUARD({
    if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
    return SetAttribute(kernel, attrib, val);
  });
}
SIMGPU_API CUresult cuFuncSetCacheConfig(CUfunction hfunc, CUfunc_cache config) {
  (void)config;
  return AsFunction(hfunc) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}
SIMGPU_API CUresult cuKernelSetCacheConfig(CUkernel kernel, CUfunc_cache config, CUdevice dev) {
  (void)config;
  if (CUresult rc = CheckDevice(dev); rc != CUDA_SUCCESS) return rc;
  return AsFunction(kernel) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}
SIMGPU_API CUresult cuFuncSetSharedMemConfig(CUfunction hfunc, CUsharedconfig config) {
  (void)config;
  return AsFunction(hfunc) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}
SIMGPU_API CUresult cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  Function* f = AsFunction(hfunc);
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *hmod = reinterpret_cast<CUmodule>(f->module);
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuFuncIsLoaded(CUfunctionLoadingState* state, CUfunction function) {
  if (AsFunction(function) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (state == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *state = CU_FUNCTION_LOADING_STATE_LOADED;
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuFuncLoad(CUfunction function) {
  return AsFunction(function) == nullptr ? CUDA_ERROR_INVALID_HANDLE : CUDA_SUCCESS;
}

SIMGPU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessor(int* numBlocks, CUfunction func,
                                                                int blockSize,
                                                                size_t dynamicSMemSize) {
  if (numBlocks == nullptr || AsFunction(func) == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *numBlocks = MaxBlocksPerSm(blockSize, dynamicSMemSize);
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
    int* numBlocks, CUfunction func, int blockSize, size_t dynamicSMemSize, unsigned int flags) {
  (void)flags;
  return cuOccupancyMaxActiveBlocksPerMultiprocessor(numBlocks, func, blockSize, dynamicSMemSize);
}
SIMGPU_API CUresult cuOccupancyMaxPotentialBlockSize(int* minGridSize, int* blockSize,
                                                     CUfunction func,
                                                     CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                                     size_t dynamicSMemSize, int blockSizeLimit) {
  SIMGPU_GUARD({
    return PotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                              dynamicSMemSize, blockSizeLimit);
  });
}
SIMGPU_API CUresult cuOccupancyMaxPotentialBlockSizeWithFlags(
    int* minGridSize, int* blockSize, CUfunction func,
    CUoccupancyB2DSize blockSizeToDynamicSMemSize, size_t dynamicSMemSize, int blockSizeLimit,
    unsigned int flags) {
  (void)flags;
  SIMGPU_GUARD({
    return PotentialBlockSize(minGridSize, blockSize, func, blockSizeToDynamicSMemSize,
                              dynamicSMemSize, blockSizeLimit);
  });
}
SIMGPU_API CUresult cuOccupancyAvailableDynamicSMemPerBlock(size_t* dynamicSmemSize,
                                                            CUfunction func, int numBlocks,
                                                            int blockSize) {
  if (dynamicSmemSize == nullptr || AsFunction(func) == nullptr || numBlocks <= 0 ||
      blockSize <= 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t per_block = kSharedPerSm / static_cast<size_t>(numBlocks);
  *dynamicSmemSize = per_block > 1024 ? std::min<size_t>(per_block - 1024, kMaxDynamicShared) : 0;
  return CUDA_SUCCESS;
}
SIMGPU_API CUresult cuOccupancyMaxPotentialClusterSize(int* clusterSize, CUfunction func,
                                                       const CUlaunchConfig* config) {
  SIMGPU_GUARD({ return PotentialClusterSize(clusterSize, func, config); });
}
SIMGPU_API CUresult cuOccupancyMaxActiveClusters(int* numClusters, CUfunction func,
                                                 const CUlaunchConfig* config) {
  SIMGPU_GUARD({ return ActiveClusters(numClusters, func, config); });
}
