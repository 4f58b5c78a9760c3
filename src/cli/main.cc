// vgpu: the command-line entry point. Dispatches to a subcommand (commands.cc).
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "vgpu: share NVIDIA GPUs between containers and processes.\n\n"
               "Usage: vgpu <command> [options]   (vgpu <command> --help for each command)\n\n"
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
