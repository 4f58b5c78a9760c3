#include "cli/commands.h"

namespace vgpu::cli {

std::span<const Command> AllCommands() {
  static constexpr Command kCommands[] = {
      {"version", "print the version", RunVersion},
      {"run", "run a command in a GPU slice (memory limit, compute share)", RunRun},
      {"top", "live view of the GPUs and slices on this machine", RunTop},
      {"gc", "remove stale slices of vgpu run whose processes are all gone", RunGc},
      {"sim", "replay a cluster trace with placement policies", RunSim},
      {"node", "run the node daemon (device plugin, slices, health, metrics)", RunNode},
      {"dra", "run the Kubernetes DRA driver (ResourceSlices, claims prepared by CDI)", RunDra},
      {"scheduler", "kube-scheduler extender: place pods on GPU slices", RunScheduler},
      {"bench", "measure compute sharing: tenants' shares and waits (bench share)", RunBench},
  };
  return kCommands;
}

}  // namespace vgpu::cli
