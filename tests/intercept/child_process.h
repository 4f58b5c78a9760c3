// ChildProcess: runs a program with extra environment variables and pipes to its stdin and
// stdout, for libvgpu's multi-process tests. Test-only.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace vgpu::testing {

class ChildProcess {
 public:
  // Starts argv[0] with `args`; `env` ("NAME=value") is added to (or replaces in) the current
  // environment. stderr is inherited.
  ChildProcess(const std::vector<std::string>& args, const std::vector<std::string>& env);
  ~ChildProcess();
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // The next output line without its newline; "" at end of file or after `timeout_ms`.
  std::string ReadLine(int timeout_ms = 20000);
  // Everything up to end of file (or `timeout_ms`), including what ReadLine left buffered.
  std::string ReadAll(int timeout_ms = 60000);
  bool Write(const std::string& text);
  void CloseStdin();
  void Kill(int signal);
  // Waits for the exit; returns the exit status, 128 + signal if killed, -1 on timeout.
  int Wait(int timeout_ms = 20000);
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  int in_ = -1;
  int out_ = -1;
  std::string buffer_;
  bool exited_ = false;
  int status_ = 0;
};

// Runs to completion; returns the whole output and sets *exit_code.
std::string RunToCompletion(const std::vector<std::string>& args,
                            const std::vector<std::string>& env, int* exit_code = nullptr);

// Monotonic milliseconds.
double NowMs();

}  // namespace vgpu::testing
