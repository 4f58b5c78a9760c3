#include "cli/commands.h"

namespace vgpu::cli {

std::span<const Command> AllCommands() {
  static constexpr Command kCommands[] = {
      {"version", "print the version", RunVersion},
      {"sim", "replay a cluster trace with placement policies", RunSim},
      {"scheduler", "kube-scheduler extender: place pods on GPU slices", RunScheduler},
  };
  return kCommands;
}

}  // namespace vgpu::cli
