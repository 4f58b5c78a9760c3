// BackgroundProcess: a program (a `vgpu` daemon, usually) running while a test talks to it, with
// its output in a log file and a guaranteed reap; FreePort: a loopback port to make it listen on.
// Test-only.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace vgpu::testing {

// A loopback TCP port that was free a moment ago and that this process has not been given
// before: drawn at random from 20000..32000 (below the kernel's ephemeral range, so tests running
// in parallel rarely draw the same one), checked by binding it; 0 if none could be found.
int FreePort();

// Starts `args[0]` (a path, not searched on PATH) with `args` as its argv; stdout and stderr go to
// `log` (created or truncated), and `env` ("NAME=value") is added to, or replaces in, the current
// environment. Destroying it while it still runs sends SIGTERM, waits up to two seconds, then
// SIGKILL, and reaps it: a failing test leaves no process behind.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& args, const std::vector<std::string>& env,
                    std::string log);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Sends `signal` (unless it has already been reaped) and waits up to `limit` for the exit: the
  // exit code (128 + signal when a signal ended it), or -1 on timeout (it is then still running).
  int Stop(int signal, std::chrono::milliseconds limit);
  // True while it has not exited.
  bool Running();
  // What it has written so far; "" when the log cannot be read.
  std::string Log() const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_;
};

}  // namespace vgpu::testing
