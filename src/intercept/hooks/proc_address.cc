#include "intercept/hooks/proc_address.h"

#include <atomic>
#include <cstdio>
#include <cstring>

#include "common/log.h"
#include "intercept/hooks/hook_util.h"

namespace vgpu::intercept {
namespace {

constexpr int kMaxCandidates = 8;

struct Candidate {
  const HookInfo* hook;
  int since;
  StreamKind stream;
};

int CollectCandidates(const char* symbol, Candidate* out) {
  int n = 0;
  for (const HookInfo& h : AllHooks()) {
    if (!h.nvml && std::strcmp(h.base, symbol) == 0 && n < kMaxCandidates) {
      out[n++] = {&h, h.since, h.stream};
    }
  }
  for (const HookAlias& a : AllAliases()) {
    if (std::strcmp(a.base, symbol) == 0 && n < kMaxCandidates) {
      const HookInfo* h = FindHook(a.name);
      if (h != nullptr) out[n++] = {h, a.since, a.stream};
    }
  }
  return n;
}

// Version number of a variant name relative to `base`: "base" 1, "base_v2" 2, ...; 0 otherwise.
int VariantNumber(const char* name, const char* base) {
  size_t n = std::strlen(base);
  if (std::strncmp(name, base, n) != 0) return 0;
  const char* rest = name + n;
  if (*rest == '\0' || std::strcmp(rest, "_ptsz") == 0 || std::strcmp(rest, "_ptds") == 0) {
    return 1;
  }
  if (rest[0] != '_' || rest[1] != 'v') return 0;
  int v = 0;
  for (const char* p = rest + 2; *p >= '0' && *p <= '9'; ++p) v = v * 10 + (*p - '0');
  return v;
}

bool DriverHasNewerVariant(const char* symbol, const Candidate* c, int n, ExportLookup exports) {
  if (exports == nullptr) return false;
  int newest = 1;
  for (int i = 0; i < n; ++i) {
    int v = VariantNumber(c[i].hook->name, symbol);
    if (v > newest) newest = v;
  }
  for (int v = newest + 1; v <= newest + 2; ++v) {
    char name[128];
    std::snprintf(name, sizeof(name), "%s_v%d", symbol, v);
    if (exports(name) != nullptr) return true;
  }
  return false;
}

}  // namespace

void* HookForProcAddress(const char* symbol, void* real_pointer, int cuda_version, cuuint64_t flags,
                         const DriverApi& cuda, ExportLookup exports) {
  if (symbol == nullptr || real_pointer == nullptr) return real_pointer;
  if (symbol[0] != 'c' || symbol[1] != 'u') return real_pointer;
  Candidate c[kMaxCandidates];
  int n = CollectCandidates(symbol, c);
  if (n == 0) return real_pointer;
  static const NvmlApi kNoNvml;
  // Candidates the driver's pointer is exactly the real function of. Several can share one
  // address (a driver may alias ABI-identical variants); the version rules pick among them.
  Candidate matched[kMaxCandidates];
  int m = 0;
  for (int i = 0; i < n; ++i) {
    if (RealFunction(*c[i].hook, cuda, kNoNvml) == real_pointer) matched[m++] = c[i];
  }
  if (m == 1) return matched[0].hook->hook;
  bool exact = m > 1;
  if (exact) {
    for (int i = 0; i < m; ++i) c[i] = matched[i];
    n = m;
  }
  StreamKind wanted = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0
                          ? StreamKind::kPerThread
                          : StreamKind::kLegacy;
  bool has_wanted = false;
  for (int i = 0; i < n; ++i) has_wanted |= c[i].stream == wanted;
  if (!has_wanted) wanted = StreamKind::kLegacy;
  const Candidate* best = nullptr;
  for (int i = 0; i < n; ++i) {
    if (c[i].stream != wanted || c[i].since > cuda_version) continue;
    if (best == nullptr || c[i].since > best->since) best = &c[i];
  }
  if (best == nullptr) {
    // An older ABI than any hook (not intercepted), or aliases none of which fits the version.
    return exact ? c[0].hook->hook : real_pointer;
  }
  if (exact) return best->hook->hook;
  if (RealFunction(*best->hook, cuda, kNoNvml) == nullptr) return real_pointer;
  if (DriverHasNewerVariant(symbol, c, n, exports)) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) {
      VGPU_LOG_WARN(
          "the driver has a newer variant of %s than this libvgpu knows; that entry "
          "point is not intercepted",
          symbol);
    }
    return real_pointer;
  }
  return best->hook->hook;
}

namespace {

void* g_cuda_handle_for_lookup = nullptr;

void* DriverExport(const char* name) {
  return g_cuda_handle_for_lookup != nullptr ? RealDlsym(g_cuda_handle_for_lookup, name) : nullptr;
}

}  // namespace

void SetDriverHandleForProcAddress(void* handle) { g_cuda_handle_for_lookup = handle; }

extern "C" CUresult cuGetProcAddress(const char* symbol, void** pfn, int cuda_version,
                                     cuuint64_t flags) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGetProcAddress;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(symbol, pfn, cuda_version, flags);
  if (r == CUDA_SUCCESS && pfn != nullptr) {
    *pfn = HookForProcAddress(symbol, *pfn, cuda_version, flags, g_cuda, DriverExport);
  }
  return r;
}

extern "C" CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int cuda_version,
                                        cuuint64_t flags,
                                        CUdriverProcAddressQueryResult* status) noexcept {
  if (!EnsureCuda()) return CUDA_ERROR_NOT_INITIALIZED;
  auto real = g_cuda.cuGetProcAddress_v2;
  if (real == nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult r = real(symbol, pfn, cuda_version, flags, status);
  if (r == CUDA_SUCCESS && pfn != nullptr) {
    *pfn = HookForProcAddress(symbol, *pfn, cuda_version, flags, g_cuda, DriverExport);
  }
  return r;
}

}  // namespace vgpu::intercept
