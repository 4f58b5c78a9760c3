// vgpu mig: MIG geometry and layouts. `vgpu mig SUBCOMMAND ...`; the subcommands register
// themselves (mig_commands.h): profiles and plan (cmd_mig_plan.cc), and those of the node.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/mig/mig_commands.h"

namespace vgpu::cli {
namespace {

std::vector<MigSubcommand>& Registry() {
  static std::vector<MigSubcommand> subs;
  return subs;
}

void PrintMigUsage(FILE* out) {
  std::fprintf(out, "Usage: vgpu mig SUBCOMMAND [options]   (vgpu mig SUBCOMMAND --help)\n\n");
  for (const MigSubcommand& s : MigSubcommands()) {
    std::fprintf(out, "  %-10.*s %.*s\n", static_cast<int>(s.name.size()), s.name.data(),
                 static_cast<int>(s.summary.size()), s.summary.data());
  }
}

}  // namespace

bool RegisterMigSubcommand(MigSubcommand sub) {
  auto& subs = Registry();
  if (std::none_of(subs.begin(), subs.end(),
                   [&](const MigSubcommand& s) { return s.name == sub.name; })) {
    subs.push_back(sub);
  }
  return true;
}

std::vector<MigSubcommand> MigSubcommands() {
  std::vector<MigSubcommand> subs = Registry();
  std::sort(subs.begin(), subs.end(),
            [](const MigSubcommand& a, const MigSubcommand& b) { return a.name < b.name; });
  return subs;
}

const mig::ModelTable* MigModelOrReport(std::string_view command, std::string_view model) {
  Result<const mig::ModelTable*> m = mig::LookupModel(model);
  if (m) return *m;
  std::fprintf(stderr, "vgpu mig %.*s: --model: %s\n", static_cast<int>(command.size()),
               command.data(), m.error().message().c_str());
  return nullptr;
}

int RunMig(int argc, char** argv) {
  if (argc >= 2) {
    for (const MigSubcommand& s : MigSubcommands()) {
      if (s.name == argv[1]) {
        std::string name = "vgpu mig " + std::string(s.name);
        std::vector<char*> sub_argv(argv + 1, argv + argc);
        sub_argv[0] = name.data();
        sub_argv.push_back(nullptr);
        return s.run(argc - 1, sub_argv.data());
      }
    }
  }
  const bool help =
      argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0);
  PrintMigUsage(help ? stdout : stderr);
  if (help) return kExitOk;
  if (argc < 2) {
    std::fprintf(stderr, "vgpu mig: no subcommand given\n");
  } else {
    std::fprintf(stderr, "vgpu mig: unknown subcommand '%s'\n", argv[1]);
  }
  return kExitBadInput;
}

}  // namespace vgpu::cli
