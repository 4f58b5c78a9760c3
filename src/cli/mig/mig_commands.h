// The `vgpu mig` command group: its subcommands register themselves, so each lives in its own
// cli/mig/cmd_mig_<name>.cc (picked up by the cmd_*.cc glob of src/cli/CMakeLists.txt) without
// editing a shared list:
//
//   // cmd_mig_apply.cc
//   namespace vgpu::cli {
//   namespace { int RunMigApply(int argc, char** argv) { ... } }
//   [[maybe_unused]] static const bool kMigApply =
//       RegisterMigSubcommand({"apply", "create a static MIG layout on this node", RunMigApply});
//   }
//
// A subcommand gets argv with argv[0] = "vgpu mig <name>" and returns the exit code (cli_util.h).
// `vgpu mig --help` lists the subcommands sorted by name.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mig/profiles.h"

namespace vgpu::cli {

struct MigSubcommand {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);
};

// Registers `sub` (from a static initializer); returns true. A second registration of the same
// name is ignored.
bool RegisterMigSubcommand(MigSubcommand sub);
// The registered subcommands, sorted by name.
std::vector<MigSubcommand> MigSubcommands();

// The model table named by --model (a key such as "H200" or an NVML name); prints
// "vgpu mig <cmd>: --model: unknown model 'X' (known: ...)" and returns nullptr when unknown.
const mig::ModelTable* MigModelOrReport(std::string_view command, std::string_view model);

}  // namespace vgpu::cli
