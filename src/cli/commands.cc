#include "cli/commands.h"

namespace vgpu::cli {

std::span<const Command> AllCommands() {
  static constexpr Command kCommands[] = {
      {"version", "print the version", RunVersion},
      {"run", "run a command in a GPU slice (memory limit, compute share)", RunRun},
      {"top", "live view of the GPUs and slices on this machine", RunTop},
      {"resize", "change a running slice's memory limit and compute share live", RunResize},
      {"gc", "remove stale slices of vgpu run whose processes are all gone", RunGc},
      {"sim", "replay a cluster trace with placement policies", RunSim},
      {"node", "run the node daemon (device plugin, slices, health, metrics)", RunNode},
      {"dra", "run the Kubernetes DRA driver (ResourceSlices, claims prepared by CDI)", RunDra},
      {"scheduler", "kube-scheduler extender: place pods on GPU slices", RunScheduler},
      {"mig", "MIG profiles, layout plans, a node's layout (profiles, plan, apply, status)",
       RunMig},
      {"bench", "benchmarks: share, copy, oversub, mig, topo (vgpu bench --help)", RunBench},
      {"estimate", "GPU memory of an LLM job, and the slice or MIG profile that holds it",
       RunEstimate},
      {"analyze", "anomalies, load forecasts, memory right-sizing, tuning rules on series",
       RunAnalyze},
      {"topo", "the GPUs' topology in the nvidia-smi topo -m format", RunTopo},
  };
  return kCommands;
}

}  // namespace vgpu::cli
