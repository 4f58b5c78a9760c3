#include "cli/commands.h"

namespace vgpu::cli {

std::span<const Command> AllCommands() {
  static constexpr Command kCommands[] = {
      {"version", "print the version", RunVersion},
  };
  return kCommands;
}

}  // namespace vgpu::cli
