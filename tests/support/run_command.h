// RunCommand: runs a shell command line and captures its exit code, stdout and stderr. Test-only.
#pragma once

#include <string>

namespace vgpu::testing {

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `command_line` with /bin/sh -c. stdout and stderr are captured separately.
CommandResult RunCommand(const std::string& command_line);

}  // namespace vgpu::testing
