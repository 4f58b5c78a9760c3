#include <cstdio>

#include "cli/cli_util.h"
#include "cli/commands.h"

namespace vgpu::cli {

int RunVersion(int argc, char** argv) {
  CLI::App app("Prints the vgpu version.", "vgpu version");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  std::printf("vgpu %s\n", VGPU_VERSION);
  return kExitOk;
}

}  // namespace vgpu::cli
