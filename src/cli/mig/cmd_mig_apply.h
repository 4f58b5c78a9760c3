// `vgpu mig apply` and `vgpu mig status` (cmd_mig_apply.cc): subcommands of `vgpu mig`, each
// taking argv with argv[0] = "vgpu mig <name>" and returning the exit code.
#pragma once

namespace vgpu::cli {

int RunMigApply(int argc, char** argv);
int RunMigStatus(int argc, char** argv);

}  // namespace vgpu::cli
