// simgpu_proc_coverage: which driver entry points a program asked for through cuGetProcAddress
// (from the simulated driver's request log, VGPU_SIMGPU_REQUEST_LOG), and whether libvgpu hooks
// each: it asks the simulated driver and libvgpu for the same (name, version, flags) and calls the
// entry point hooked when libvgpu answers with another function than the driver.
//
//   simgpu_proc_coverage --libvgpu LIB --simgpu DIR [--all] [--fail-unhooked] LOG...
//
// Prints one line per distinct request: name, CUDA version, flags (per-thread default stream or
// not), the variant the driver returned (or why none), whether libvgpu hooks it, and its class
// when it is one that libvgpu must see:
//   alloc   allocates or frees device memory (also pools, arrays, VMM handles, graph memory)
//   launch  runs work on the device (kernels, graphs)
//   copy    copies that may cross the host link (copy pacing)
//   report  reports device memory (what a slice must show instead)
// By default only classed requests are listed; --all lists every request. --fail-unhooked: exit
// 1 when a classed entry point that the driver serves is not hooked. Exit 2 on bad usage.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

namespace {

using GetProc = int (*)(const char*, void**, int, unsigned long long, int*);
constexpr unsigned long long kPerThread = 0x2;  // CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM

// The classes of entry points libvgpu must intercept, by base name. Mapping (cuMemMap,
// cuMemSetAccess) and device-side copies and memsets move no memory into or out of a slice and
// cross no host link, so they are not classed.
struct Class {
  const char* name;
  std::regex pattern;
};
const std::vector<Class>& Classes() {
  static const std::vector<Class> classes = {
      {"alloc", std::regex("cuMem(Alloc|AllocPitch|AllocManaged|AllocAsync|AllocFromPoolAsync|Free|"
                           "FreeAsync|Create|Release|PoolCreate|PoolDestroy|PoolTrimTo)|"
                           "cuArray(3D)?Create|cuArrayDestroy|cuMipmappedArray(Create|Destroy)|"
                           "cuGraphAddMemAllocNode|cuGraphInstantiate.*|cuGraphExecDestroy|"
                           "cuCtxCreate|cuCtxDestroy|cuDevicePrimaryCtx(Retain|Release|Reset)")},
      {"launch",
       std::regex("cuLaunch(Kernel|KernelEx|CooperativeKernel|CooperativeKernelMultiDevice|"
                  "Grid|GridAsync)?|"
                  "cuGraphLaunch")},
      {"copy", std::regex("cuMemcpy(HtoD|DtoH|HtoA|AtoH)?(Async)?|cuMemcpy(2D|3D)(Unaligned)?"
                          "(Async)?|cuMemcpy(3D)?Peer(Async)?|cuMemcpyBatchAsync")},
      {"report", std::regex("cuMemGetInfo|cuDeviceTotalMem")},
  };
  return classes;
}

const char* ClassOf(const std::string& base) {
  for (const Class& c : Classes()) {
    if (std::regex_match(base, c.pattern)) return c.name;
  }
  return nullptr;
}

struct Request {
  std::string name;
  int version;
  unsigned long long flags;
  bool operator<(const Request& o) const {
    return std::tie(name, version, flags) < std::tie(o.name, o.version, o.flags);
  }
};

int Usage(const char* why) {
  std::fprintf(stderr,
               "simgpu_proc_coverage: %s\n"
               "usage: simgpu_proc_coverage --libvgpu LIB --simgpu DIR [--all] [--fail-unhooked] "
               "LOG...\n",
               why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string libvgpu;
  std::string simgpu;
  bool all = false;
  bool fail_unhooked = false;
  std::vector<std::string> logs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--libvgpu" && i + 1 < argc) {
      libvgpu = argv[++i];
    } else if (a == "--simgpu" && i + 1 < argc) {
      simgpu = argv[++i];
    } else if (a == "--all") {
      all = true;
    } else if (a == "--fail-unhooked") {
      fail_unhooked = true;
    } else if (a == "--help" || a == "-h") {
      std::printf(
          "usage: simgpu_proc_coverage --libvgpu LIB --simgpu DIR [--all] "
          "[--fail-unhooked] LOG...\n");
      return 0;
    } else if (!a.empty() && a[0] == '-') {
      return Usage(("unknown option '" + a + "'").c_str());
    } else {
      logs.push_back(a);
    }
  }
  if (libvgpu.empty() || simgpu.empty() || logs.empty()) {
    return Usage("--libvgpu, --simgpu and at least one request log are required");
  }

  std::map<Request, int> requests;  // -> times asked
  for (const std::string& path : logs) {
    std::ifstream in(path);
    if (!in) return Usage(("cannot read the request log '" + path + "'").c_str());
    std::string line;
    int line_no = 0;
    while (std::getline(in, line)) {
      ++line_no;
      if (line.rfind("proc ", 0) != 0) continue;
      std::istringstream f(line);
      std::string tag, name, result, flags;
      int version = 0;
      if (!(f >> tag >> name >> version >> flags >> result)) {
        std::fprintf(stderr, "simgpu_proc_coverage: %s:%d: malformed proc line\n", path.c_str(),
                     line_no);
        return 2;
      }
      if (name == "\"\"") name.clear();  // the runtime also asks for the empty name
      requests[{name, version, std::strtoull(flags.c_str(), nullptr, 16)}]++;
    }
  }

  // The driver first, privately, and its cuGetProcAddress_v2 with libc's dlsym; then libvgpu,
  // globally, as a preloaded one would be (its own names resolve to itself), over the same driver.
  std::string driver_path = simgpu + "/libcuda.so.1";
  void* driver = dlopen(driver_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (driver == nullptr) return Usage(dlerror());
  auto driver_proc = reinterpret_cast<GetProc>(dlsym(driver, "cuGetProcAddress_v2"));
  setenv("VGPU_REAL_LIBCUDA", driver_path.c_str(), 1);
  void* vgpu = dlopen(libvgpu.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (vgpu == nullptr) return Usage(dlerror());
  auto vgpu_proc = reinterpret_cast<GetProc>(dlsym(vgpu, "cuGetProcAddress_v2"));
  if (driver_proc == nullptr || vgpu_proc == nullptr) {
    return Usage("cuGetProcAddress_v2 missing from the driver or libvgpu");
  }

  int classed = 0;
  int hooked_classed = 0;
  int unhooked = 0;
  int served = 0;
  std::printf("%-44s %6s %-10s %-44s %-9s %s\n", "entry point", "CUDA", "stream", "driver variant",
              "libvgpu", "class");
  for (const auto& [r, times] : requests) {
    (void)times;
    void* d = nullptr;
    void* v = nullptr;
    int status = 0;
    int rc = driver_proc(r.name.c_str(), &d, r.version, r.flags, &status);
    vgpu_proc(r.name.c_str(), &v, r.version, r.flags, &status);
    const char* cls = ClassOf(r.name);
    std::string variant = "(not found)";
    if (rc == 0 && d != nullptr) {
      ++served;
      Dl_info info{};
      variant = dladdr(d, &info) != 0 && info.dli_sname != nullptr ? info.dli_sname : "?";
    }
    bool hooked = d != nullptr && v != nullptr && v != d;
    const char* verdict = d == nullptr   ? "-"
                          : v == nullptr ? "refused"
                          : hooked       ? "hooked"
                                         : "passed";
    if (cls != nullptr && d != nullptr) {
      ++classed;
      if (hooked) {
        ++hooked_classed;
      } else {
        ++unhooked;
      }
    }
    if (!all && cls == nullptr) continue;
    std::printf("%-44s %6d %-10s %-44s %-9s %s%s\n", r.name.c_str(), r.version,
                (r.flags & kPerThread) != 0 ? "per-thread" : "legacy", variant.c_str(), verdict,
                cls != nullptr ? cls : "",
                cls != nullptr && d != nullptr && !hooked ? "  NOT HOOKED" : "");
  }
  std::printf(
      "%zu distinct requests, %d served by the driver; %d in a class libvgpu must see, "
      "%d of them hooked, %d not\n",
      requests.size(), served, classed, hooked_classed, unhooked);
  return fail_unhooked && unhooked > 0 ? 1 : 0;
}
