// vgpu version: the version, the git commit it was built from (captured when the build was
// configured; "unknown" when built outside a git checkout) and the CMake build type.
#include <cstdio>

#include "cli/build_info.h"
#include "cli/cli_util.h"
#include "cli/commands.h"

namespace vgpu::cli {

int RunVersion(int argc, char** argv) {
  CLI::App app("Prints the vgpu version, the git commit it was built from and the build type.",
               "vgpu version");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  std::printf("vgpu %s\ncommit: %s\nbuild type: %s\n", VGPU_VERSION, VGPU_GIT_COMMIT,
              VGPU_BUILD_TYPE[0] != '\0' ? VGPU_BUILD_TYPE : "none");
  return kExitOk;
}

}  // namespace vgpu::cli
