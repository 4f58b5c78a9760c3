#include "support/run_command.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace vgpu::testing {
namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

CommandResult RunCommand(const std::string& command_line) {
  char out_path[] = "/tmp/vgpu-test-out-XXXXXX";
  char err_path[] = "/tmp/vgpu-test-err-XXXXXX";
  int out_fd = mkstemp(out_path);
  int err_fd = mkstemp(err_path);
  close(out_fd);
  close(err_fd);
  std::string full = "(" + command_line + ") >" + out_path + " 2>" + err_path;
  int status = std::system(full.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = Slurp(out_path);
  r.err = Slurp(err_path);
  unlink(out_path);
  unlink(err_path);
  return r;
}

}  // namespace vgpu::testing
