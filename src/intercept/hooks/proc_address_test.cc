// cuGetProcAddress returns the hook of the variant the driver chose, for every version and
// stream mode; non-hooked names pass through.
#include <gtest/gtest.h>

#include <cstring>
#include <set>
#include <string>

#include "intercept/fake_driver.h"
#include "intercept/hooks/hooks.h"
#include "intercept/hooks/proc_address.h"
#include "intercept/runtime.h"

namespace vgpu::intercept {
namespace {

using testing::Fake;
using testing::InstallFake;

void* Lookup(const char* symbol, int version, cuuint64_t flags = CU_GET_PROC_ADDRESS_DEFAULT) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  CUresult r = cuGetProcAddress_v2(symbol, &fn, version, flags, &status);
  return r == CUDA_SUCCESS ? fn : nullptr;
}

void* Hook(const char* name) { return FindHook(name)->hook; }

TEST(ProcAddress, HookedSymbolsResolveToTheirHooks) {
  InstallFake(1 << 20);
  EXPECT_EQ(Lookup("cuMemAlloc", 12040), Hook("cuMemAlloc_v2"));
  EXPECT_EQ(Lookup("cuMemAlloc", 3020), Hook("cuMemAlloc_v2"));
  EXPECT_EQ(Lookup("cuMemFree", 13000), Hook("cuMemFree_v2"));
  EXPECT_EQ(Lookup("cuMemAllocAsync", 12000), Hook("cuMemAllocAsync"));
  EXPECT_EQ(Lookup("cuLaunchKernel", 12000), Hook("cuLaunchKernel"));
  EXPECT_EQ(Lookup("cuLaunchKernel", 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
            Hook("cuLaunchKernel_ptsz"));
  EXPECT_EQ(Lookup("cuCtxCreate", 11000), Hook("cuCtxCreate_v2"));
  EXPECT_EQ(Lookup("cuCtxCreate", 12000), Hook("cuCtxCreate_v3"));
  EXPECT_EQ(Lookup("cuCtxCreate", 13000), Hook("cuCtxCreate_v4"));
  EXPECT_EQ(Lookup("cuGraphInstantiate", 10000), Hook("cuGraphInstantiate"));
  EXPECT_EQ(Lookup("cuGraphInstantiate", 11080), Hook("cuGraphInstantiate_v2"));
  EXPECT_EQ(Lookup("cuGraphInstantiate", 12000), Hook("cuGraphInstantiateWithFlags"));
}

TEST(ProcAddress, NonHookedSymbolsPassThrough) {
  InstallFake(1 << 20);
  void* fn = Lookup("cuCtxGetDevice", 12000);
  ASSERT_NE(fn, nullptr);
  EXPECT_EQ(fn, reinterpret_cast<void*>(g_cuda.cuCtxGetDevice));
  EXPECT_EQ(Lookup("cuNoSuchThing", 12000), nullptr);
}

TEST(ProcAddress, TooOldVersionsAreNotIntercepted) {
  InstallFake(1 << 20);
  // The driver has nothing for cuMemAlloc before 3.2 in the fake; the real pointer (null) stays.
  EXPECT_EQ(Lookup("cuMemAlloc", 2000), nullptr);
}

TEST(ProcAddress, InternalDriverPointersAreMappedByVersionRules) {
  InstallFake(1 << 20);
  Fake().internal_proc_pointers = true;
  EXPECT_EQ(Lookup("cuMemAlloc", 12000), Hook("cuMemAlloc_v2"));
}

TEST(ProcAddress, TheReturnedHookEnforcesTheLimit) {
  InstallFake(1 << 20);
  auto alloc = reinterpret_cast<CUresult (*)(CUdeviceptr*, size_t)>(Lookup("cuMemAlloc", 12000));
  ASSERT_NE(alloc, nullptr);
  CUdeviceptr p = 0;
  EXPECT_EQ(alloc(&p, 1 << 20), CUDA_SUCCESS);
  EXPECT_EQ(alloc(&p, 1), CUDA_ERROR_OUT_OF_MEMORY);
}

TEST(ProcAddress, LegacyEntryPointWorksToo) {
  InstallFake(1 << 20);
  void* fn = nullptr;
  ASSERT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 11040, 0), CUDA_SUCCESS);
  EXPECT_EQ(fn, Hook("cuMemAlloc_v2"));
}

void* ExportsWithNewerVariant(const char* name) {
  return std::strcmp(name, "cuMemAlloc_v3") == 0 ? reinterpret_cast<void*>(1) : nullptr;
}

TEST(ProcAddress, UnknownNewerDriverVariantIsNotGuessed) {
  DriverApi api = testing::MakeFakeDriver();
  int other = 0;
  void* internal = &other;
  // Address unknown and the driver exports cuMemAlloc_v3: return the driver's pointer.
  EXPECT_EQ(HookForProcAddress("cuMemAlloc", internal, 14000, 0, api, ExportsWithNewerVariant),
            internal);
  EXPECT_EQ(HookForProcAddress("cuMemAlloc", internal, 14000, 0, api, nullptr),
            Hook("cuMemAlloc_v2"));
}

// The hook table is consistent: unique names, every variant's base is a prefix of its name
// (aliases aside), per-thread variants end in _ptsz/_ptds.
TEST(HookTable, IsConsistent) {
  std::set<std::string> names;
  for (const HookInfo& h : AllHooks()) {
    EXPECT_TRUE(names.insert(h.name).second) << h.name;
    EXPECT_NE(h.hook, nullptr);
    if (h.nvml) continue;
    EXPECT_EQ(std::string(h.name).rfind(h.base, 0), 0u) << h.name;
    bool ptsz = std::string(h.name).find("_pt") != std::string::npos;
    EXPECT_EQ(ptsz, h.stream == StreamKind::kPerThread) << h.name;
  }
  for (const HookAlias& a : AllAliases()) EXPECT_NE(FindHook(a.name), nullptr) << a.name;
  EXPECT_EQ(FindHook("cuMemsetD8_v2"), nullptr);
  EXPECT_NE(FindHook("cuMemAlloc"), nullptr);  // the 32-bit legacy entry point
  EXPECT_EQ(FindHook("cuCtxGetDevice"), nullptr);
}

}  // namespace
}  // namespace vgpu::intercept
