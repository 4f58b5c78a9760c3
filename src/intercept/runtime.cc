#include "intercept/runtime.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "intercept/gate/gate.h"
#include "intercept/gate/tenant_control.h"
#include "intercept/hooks/hooks.h"
#include "intercept/hooks/proc_address.h"
#include "intercept/memory/spill.h"
#include "shm/region_ops.h"

extern char** environ;

// The real dlsym, read by the dlsym trampoline (dlsym_trampoline.S).
extern "C" {
__attribute__((visibility("hidden"))) void* vgpu_real_dlsym = nullptr;
}

namespace vgpu::intercept {

DriverApi g_cuda;
NvmlApi g_nvml;
std::atomic<bool> g_compute_limited{false};
std::atomic<bool> g_copy_paced{false};
std::atomic<int> g_cuda_state{0};

namespace {

Runtime g_runtime;
std::atomic<int> g_base_state{0};
std::atomic<int> g_nvml_state{0};
pthread_mutex_t g_init_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_t g_init_owner;

using DlsymFn = void* (*)(void*, const char*);

// Not instrumented by sanitizers: a sanitizer runtime calls dlsym (and so this, through the
// override) while it initialises, before instrumented code may run.
__attribute__((no_sanitize("address", "thread", "undefined"))) DlsymFn ResolveRealDlsym() {
  void* fn = __atomic_load_n(&vgpu_real_dlsym, __ATOMIC_ACQUIRE);
  if (fn != nullptr) return reinterpret_cast<DlsymFn>(fn);
  static const char* const kVersions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0",
                                          "GLIBC_2.3"};
  for (const char* v : kVersions) {
    fn = dlvsym(RTLD_NEXT, "dlsym", v);
    if (fn != nullptr) break;
  }
  if (fn == nullptr) fn = dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34");
  __atomic_store_n(&vgpu_real_dlsym, fn, __ATOMIC_RELEASE);
  return reinterpret_cast<DlsymFn>(fn);
}

void ChildAfterFork() { ResetRuntimeInChild(); }

// The slice's quarantine controls, when its region is the shared one (tenant_control.h).
void PublishTenantControl() {
  Accountant& a = g_runtime.accountant;
  g_tenant_control.store(
      a.shared() && a.region() != nullptr ? &a.region()->header.control : nullptr,
      std::memory_order_relaxed);
}

// True if `handle` is this library (someone installed libvgpu.so as libcuda.so.1).
bool IsSelf(void* handle) {
  void* p = RealDlsym(handle, "cuMemAlloc_v2");
  return p != nullptr && p == reinterpret_cast<void*>(&cuMemAlloc_v2);
}

void* OpenDriverLibrary(const char* configured, const char* soname, const char* const* fallbacks) {
  if (configured[0] != '\0') {
    void* h = dlopen(configured, RTLD_NOW | RTLD_GLOBAL);
    if (h != nullptr && !IsSelf(h)) return h;
    VGPU_LOG_WARN("cannot load %s: %s", configured, h == nullptr ? dlerror() : "it is libvgpu");
  }
  void* h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);
  if (h != nullptr && !IsSelf(h)) return h;
  for (const char* const* p = fallbacks; *p != nullptr; ++p) {
    h = dlopen(*p, RTLD_NOW | RTLD_GLOBAL);
    if (h != nullptr && !IsSelf(h)) return h;
  }
  return nullptr;
}

const char* const kCudaPaths[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1",
                                  "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
                                  "/usr/lib64/libcuda.so.1",
                                  "/usr/local/nvidia/lib64/libcuda.so.1",
                                  "/usr/lib/wsl/lib/libcuda.so.1",
                                  nullptr};
const char* const kNvmlPaths[] = {
    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
    "/usr/lib64/libnvidia-ml.so.1", "/usr/local/nvidia/lib64/libnvidia-ml.so.1", nullptr};

// The copy pacer on the slice's region and the node's host-link file (every paced slice marks
// itself active there; slices with copy_borrow look there before borrowing).
void InitCopyPacer() {
  const Config& c = g_runtime.config;
  CopyLinkFile* link = nullptr;
  if (c.copy_paced && c.arbiter_dir[0] != '\0') {
    char path[kPathMax + 32];
    std::snprintf(path, sizeof(path), "%s/host-link.copy", c.arbiter_dir);
    link = OpenCopyLink(path);
    if (link == nullptr) {
      VGPU_LOG_WARN("cannot use %s; %s", path,
                    c.copy_borrow ? "copies stay at their caps"
                                  : "slices that borrow cannot see this slice's copies");
    }
  }
  // The slice's identity in the link file: its region path (all its processes share it).
  uint64_t owner = 0xcbf29ce484222325ULL;
  for (const char* p = c.region_path; *p != '\0'; ++p) {
    owner = (owner ^ static_cast<unsigned char>(*p)) * 0x100000001b3ULL;
  }
  if (c.region_path[0] == '\0') owner ^= static_cast<uint64_t>(::getpid());
  // A nested slice draws from its outermost slice's buckets: at its own (never larger) cap, so
  // its copies and the outer slice's together stay within the outer cap.
  g_runtime.copy.Init(c, &g_runtime.accountant.outermost_region()->header.copy, link, owner);
  g_copy_paced.store(c.copy_paced, std::memory_order_relaxed);
}

// REQUIRES: g_init_mutex held.
void InitBaseLocked() {
  if (g_base_state.load(std::memory_order_relaxed) == 2) return;
  SetLogTag("vgpu");
  ConfigErrors errors;
  LoadConfig(environ, &g_runtime.config, &errors);
  SetLogLevel(static_cast<LogLevel>(g_runtime.config.log_level));
  for (int i = 0; i < errors.count; ++i) {
    if (errors.warning[i]) {
      VGPU_LOG_WARN("%s", errors.messages[i]);
    } else {
      VGPU_LOG_ERROR("%s", errors.messages[i]);
    }
  }
  shm::SetCriticalSectionDelayForTest(g_runtime.config.test_critical_delay_us);
  g_runtime.accountant.Init(g_runtime.config);
  PublishTenantControl();
  PublishSpillMode(g_runtime.accountant.region(), g_runtime.config);
  g_runtime.pools.Init(&g_runtime.accountant, &g_cuda);
  g_compute_limited.store(g_runtime.config.compute_limited, std::memory_order_relaxed);
  InitCopyPacer();
  pthread_atfork(nullptr, nullptr, ChildAfterFork);
  g_base_state.store(2, std::memory_order_release);
}

class InitLock {
 public:
  InitLock() { pthread_mutex_lock(&g_init_mutex); }
  ~InitLock() { pthread_mutex_unlock(&g_init_mutex); }
};

}  // namespace

Runtime& GetRuntime() { return g_runtime; }

__attribute__((no_sanitize("address", "thread", "undefined"))) void EnsureRealDlsym() {
  ResolveRealDlsym();
}

void* RealDlsym(void* handle, const char* name) {
  DlsymFn fn = ResolveRealDlsym();
  return fn != nullptr ? fn(handle, name) : nullptr;
}

bool EnsureBase() {
  if (g_base_state.load(std::memory_order_acquire) == 2) return true;
  InitLock lock;
  InitBaseLocked();
  return true;
}

bool InitCudaSlow() {
  int state = g_cuda_state.load(std::memory_order_acquire);
  if (state == 2) return true;
  if (state == 1 && pthread_equal(g_init_owner, pthread_self())) return false;
  InitLock lock;
  if (g_cuda_state.load(std::memory_order_acquire) == 2) return true;
  g_init_owner = pthread_self();
  g_cuda_state.store(1, std::memory_order_release);
  InitBaseLocked();
  void* handle = OpenDriverLibrary(g_runtime.config.real_libcuda, "libcuda.so.1", kCudaPaths);
  if (handle == nullptr) {
    VGPU_LOG_ERROR("cannot find the CUDA driver library (libcuda.so.1); set VGPU_REAL_LIBCUDA");
  } else {
    LoadDriverApi(handle, RealDlsym, &g_cuda);
    SetDriverHandleForProcAddress(handle);
  }
  g_cuda_state.store(2, std::memory_order_release);
  return true;
}

bool EnsureNvml() {
  if (g_nvml_state.load(std::memory_order_acquire) == 2) return true;
  if (g_nvml_state.load(std::memory_order_acquire) == 1 &&
      pthread_equal(g_init_owner, pthread_self())) {
    return false;
  }
  InitLock lock;
  if (g_nvml_state.load(std::memory_order_acquire) == 2) return true;
  g_init_owner = pthread_self();
  g_nvml_state.store(1, std::memory_order_release);
  InitBaseLocked();
  void* handle = OpenDriverLibrary(g_runtime.config.real_libnvml, "libnvidia-ml.so.1", kNvmlPaths);
  if (handle == nullptr) {
    VGPU_LOG_ERROR("cannot find the NVML library (libnvidia-ml.so.1); set VGPU_REAL_LIBNVML");
  } else {
    LoadNvmlApi(handle, RealDlsym, &g_nvml);
  }
  g_nvml_state.store(2, std::memory_order_release);
  return true;
}

void ResetRuntimeInChild() {
  pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
  std::memcpy(&g_init_mutex, &fresh, sizeof(fresh));
  g_runtime.accountant.ResetInChild();
  g_runtime.table.ResetInChild();
  g_runtime.pools.ResetInChild();
  GateResetInChild();
  ContextState& c = g_runtime.contexts;
  std::memcpy(&c.mutex, &fresh, sizeof(fresh));
  for (int d = 0; d < kMaxDevices; ++d) {
    c.primary_refs[d] = 0;
    c.primary_charged[d] = 0;
    c.primary[d] = nullptr;
  }
}

void InstallForTest(const DriverApi& cuda, const NvmlApi& nvml, const Config& config,
                    shm::Region* region, bool shared) {
  InitLock lock;
  g_cuda = cuda;
  g_nvml = nvml;
  g_runtime.config = config;
  g_runtime.table.ResetInChild();
  g_runtime.accountant.InitWithRegion(config, region, shared);
  PublishTenantControl();
  PublishSpillMode(g_runtime.accountant.region(), config);
  g_runtime.pools.Init(&g_runtime.accountant, &g_cuda);
  ContextState& c = g_runtime.contexts;
  for (int d = 0; d < kMaxDevices; ++d) {
    c.primary_refs[d] = 0;
    c.primary_charged[d] = 0;
    c.primary[d] = nullptr;
  }
  g_compute_limited.store(config.compute_limited);
  g_runtime.copy = CopyPacer{};
  g_runtime.copy.Init(config, &g_runtime.accountant.region()->header.copy, nullptr, 1);
  g_copy_paced.store(config.copy_paced);
  g_base_state.store(2, std::memory_order_release);
  g_cuda_state.store(2, std::memory_order_release);
  g_nvml_state.store(2, std::memory_order_release);
}

}  // namespace vgpu::intercept
