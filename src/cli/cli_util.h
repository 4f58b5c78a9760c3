// Helpers shared by the `vgpu` subcommands: argument parsing with the project's exit codes, and
// locating the installation (libraries, data) relative to the executable.
//
// Exit codes (ARCHITECTURE.md): 0 success, 2 bad input (message names what and where),
// 1 any other failure.
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "common/status.h"

namespace vgpu::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitBadInput = 2;

// Parses argv with `app`. Returns std::nullopt when the command should run, or the exit code to
// return right away: 0 after --help, 2 (with a message on stderr) for a bad flag or value.
std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv);

// Prints "vgpu <command>: <message>" to stderr and returns the exit code for `status`:
// 2 for kInvalidArgument / kOutOfRange / kNotFound (bad input), 1 otherwise, 0 for OK.
int ReportStatus(std::string_view command, const Status& status);

// Directory of the running executable (resolved /proc/self/exe), e.g. /opt/vgpu/bin.
std::string ExecutableDir();

// The library directory that belongs to this executable: <exe>/../lib.
std::string LibraryDir();

// The project root or installation prefix: <exe>/../.. for the build tree (build/bin/vgpu),
// <exe>/.. for an install (prefix/bin/vgpu). Used to find bundled data.
std::string DataDir();

// True when standard error is a terminal (progress bars are drawn only then).
bool StderrIsTty();

}  // namespace vgpu::cli
