// vgpu: the command-line entry point. Dispatches to a subcommand (commands.cc).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(
      out,
      "vgpu: share NVIDIA GPUs between containers and processes.\n\n"
      "Usage: vgpu <command> [options]   (vgpu help <command> or vgpu <command> --help)\n\n"
      "Commands:\n");
  for (const vgpu::cli::Command& c : vgpu::cli::AllCommands()) {
    std::fprintf(out, "  %-10.*s %.*s\n", static_cast<int>(c.name.size()), c.name.data(),
                 static_cast<int>(c.summary.size()), c.summary.data());
  }
}

}  // namespace

int main(int argc, char** argv) {
  using namespace vgpu::cli;
  if (argc < 2) {
    PrintUsage(stderr);
    return kExitBadInput;
  }
  std::string_view name = argv[1];
  // `vgpu help CMD [SUB...]` is `vgpu CMD [SUB...] --help`.
  std::vector<char*> help_argv;
  static char kHelpFlag[] = "--help";
  if (name == "help" && argc >= 3) {
    help_argv.assign(argv, argv + argc);
    help_argv.erase(help_argv.begin() + 1);
    help_argv.push_back(kHelpFlag);
    help_argv.push_back(nullptr);
    argc = static_cast<int>(help_argv.size()) - 1;
    argv = help_argv.data();
    name = argv[1];
  }
  if (name == "--help" || name == "-h" || name == "help") {
    PrintUsage(stdout);
    return kExitOk;
  }
  if (name == "--version") name = "version";
  for (const Command& c : AllCommands()) {
    if (c.name != name) continue;
    std::string argv0 = "vgpu " + std::string(c.name);
    argv[1] = argv0.data();
    try {
      return c.run(argc - 1, argv + 1);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vgpu %s: internal error: %s\n", std::string(name).c_str(), e.what());
      return kExitFailure;
    }
  }
  std::fprintf(stderr, "vgpu: unknown command '%s'\n\n", argv[1]);
  PrintUsage(stderr);
  return kExitBadInput;
}
