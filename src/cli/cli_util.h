// Helpers shared by the `vgpu` subcommands: argument parsing with the project's exit codes, and
// locating the installation (libraries, data) relative to the executable.
//
// Exit codes (ARCHITECTURE.md): 0 success, 2 bad input (message names what and where),
// 1 any other failure.
#pragma once

#include <CLI/CLI.hpp>

#include <initializer_list>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/status.h"

namespace vgpu::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Parses argv with `app`. Returns std::nullopt when the command should run, or the exit code to
// return right away: 0 after --help, 2 (with a message on stderr) for a bad flag or value. An
// option that takes a value and is given an empty one (`--memory ""`, `--cores=`) is bad input,
// except the options named to AllowEmptyValues.
std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv);

// Options of `app` whose empty value means something (`--webhook-secret ""`: none). Call before
// ParseArgs.
void AllowEmptyValues(CLI::App& app, std::initializer_list<std::string_view> names);

// Prints "vgpu <command>: <message>" to stderr and returns the exit code for `status`:
// 2 for kInvalidArgument / kOutOfRange / kNotFound (bad input), 1 otherwise, 0 for OK.
int ReportStatus(std::string_view command, const Status& status);

// The error of a bad flag value: InvalidArgument "FLAG: WHY" (exit code 2 through ReportStatus).
Status BadFlag(std::string_view flag, std::string_view why);

// Directory of the running executable (resolved /proc/self/exe), e.g. /usr/bin.
std::string ExecutableDir();

// True when the executable runs from a build tree (<build>/bin/vgpu next to
// <build>/CMakeCache.txt) rather than from an installation.
bool RunsFromBuildTree();

// The directory of libvgpu.so (and of the simulated GPU's simgpu/ below it) that belongs to this
// executable: <build>/lib in a build tree; <prefix>/lib/vgpu when installed (<prefix>/bin/vgpu;
// the install layout of cmake/packaging.cmake).
std::string LibraryDir();

// The bundled data (the trace subset): <source>/data for a build tree, <prefix>/share/vgpu/data
// when installed.
std::string DataDir();

// The simulated GPU's directory (LibraryDir()/simgpu) when its libcuda.so.1 and
// libnvidia-ml.so.1 are there; otherwise kFailedPrecondition naming `flag`, the missing file and
// what to do: build it (a build tree needs CUDA's headers) or install the vgpu-simgpu package.
Result<std::string> SimulatedGpuDir(std::string_view flag = "--sim");

// Where the interception library and the simulated GPU are: LibraryDir()/libvgpu.so, and with
// `sim` SimulatedGpuDir(); kFailedPrecondition, saying what to build or install, when one is
// missing.
struct Libraries {
  std::string libvgpu;
  std::string simgpu_dir;
};
Result<Libraries> FindLibraries(bool sim, const std::string& who);

// --sim-config FILE, the simulated GPU's device configuration (docs/simgpu.md), as every command
// that takes --sim accepts it: InvalidArgument when it is given without `sim` or names no
// regular file; otherwise exported as VGPU_SIMGPU_CONFIG for the simulated libraries this
// process loads and for the processes it starts. An empty `path` does nothing.
Status UseSimConfig(bool sim, const std::string& path);

// The hint for GPUs that cannot be opened: " (no NVIDIA driver found; --sim runs on the
// simulated GPU)" when the driver's libnvidia-ml.so.1 cannot be loaded and `sim` is false,
// else "".
std::string NoDriverHint(bool sim);

// True when standard error is a terminal (progress bars are drawn only then).
bool StderrIsTty();

}  // namespace vgpu::cli
