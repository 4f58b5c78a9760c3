// Factories of the built-in policies (one file each: policy_<name>.cc) and the GPU selectors they
// share. Use them through BuiltinPolicies() (registry.h); they are declared here for the registry
// and for tests.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"
#include "sched/framework.h"
#include "sched/registry.h"

namespace vgpu::sched {

Result<std::unique_ptr<Policy>> MakeRandomPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeDotProdPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeClusteringPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakePackingPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeBestFitPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeFgdPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeFgdOnlinePolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeHamiBinpackPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeHamiSpreadPolicy(const PolicyArgs& args);
Result<std::unique_ptr<Policy>> MakeCafgdPolicy(const PolicyArgs& args);

class FgdCore;
// FGD's plugins (score, GPU choice, observer) over a shared core; used by fgd and fgd-online.
std::unique_ptr<Policy> MakeFgdFromCore(std::string name, std::shared_ptr<FgdCore> core);

// Best fit (the FGD simulator's default GPU choice): the r.num_gpus fitting GPUs with the least
// free milli, lowest index first among equals. Whole-GPU pods thus take the lowest-index idle GPUs.
GpuSet SelectBestFitGpus(const PodRequest& r, const Cluster& c, NodeId n, const FitOptions& fit);
std::unique_ptr<GpuSelector> MakeBestFitGpuSelector(FitOptions fit = {});
// Random fit: a sharing pod gets a uniformly random fitting GPU; other pods take the lowest-index
// fitting GPUs.
std::unique_ptr<GpuSelector> MakeRandomFitGpuSelector(FitOptions fit = {});

}  // namespace vgpu::sched
