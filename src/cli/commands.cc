#include "cli/commands.h"

namespace vgpu::cli {

std::span<const Command> AllCommands() {
  static constexpr Command kCommands[] = {
      {"version", "print the version", RunVersion},
      {"sim", "replay a cluster trace with placement policies", RunSim},
  };
  return kCommands;
}

}  // namespace vgpu::cli
