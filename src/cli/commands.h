// The `vgpu` subcommands. Each lives in its own cmd_<name>.cc (run/, top/, sim/ and mig/ hold the
// larger ones with their helpers) and is listed once in kCommands (commands.cc). A command gets
// argv with argv[0] = "vgpu <name>" and returns the exit code.
#pragma once

#include <span>
#include <string_view>

namespace vgpu::cli {

struct Command {
  std::string_view name;
  std::string_view summary;
  int (*run)(int argc, char** argv);
};

// All commands, in the order `vgpu --help` lists them.
std::span<const Command> AllCommands();

int RunVersion(int argc, char** argv);
int RunRun(int argc, char** argv);
int RunTop(int argc, char** argv);
int RunGc(int argc, char** argv);
int RunResize(int argc, char** argv);
int RunSim(int argc, char** argv);
int RunNode(int argc, char** argv);
int RunDra(int argc, char** argv);
int RunScheduler(int argc, char** argv);
int RunBench(int argc, char** argv);
int RunEstimate(int argc, char** argv);
int RunMig(int argc, char** argv);
int RunAnalyze(int argc, char** argv);
int RunBenchCopy(int argc, char** argv);           // vgpu bench copy (cmd_bench_copy.cc)
int RunBenchCopyTenant(int argc, char** argv);     // vgpu bench copy-tenant (cmd_bench_copy.cc)
int RunBenchOversub(int argc, char** argv);        // vgpu bench oversub (cmd_bench_oversub.cc)
int RunBenchOversubTenant(int argc, char** argv);  // vgpu bench oversub-tenant (the same)
int RunBenchMig(int argc, char** argv);            // vgpu bench mig (cmd_bench_mig.cc)
int RunTopo(int argc, char** argv);
int RunBenchTopo(int argc, char** argv);  // vgpu bench topo (cmd_bench_topo.cc)

}  // namespace vgpu::cli
