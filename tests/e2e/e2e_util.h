// Helpers shared by the end-to-end tests: ports, files, the worker's "key value" output, shares
// measured from kernel records, the simulated GPU's runtime environment, and a background
// process that is always reaped.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vgpu::e2e {

// CLOCK_MONOTONIC in nanoseconds (the clock `vgpu bench tenant` records kernels with).
uint64_t MonotonicNs();

// A loopback TCP port that was free a moment ago (0 if none could be found).
int FreePort();

// The whole file; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// "key value" lines of a worker's output.
std::map<std::string, std::string> Lines(const std::string& out);

// Percent of [from, to) during which the kernels recorded in `path` ("call start end" in ns per
// line, `vgpu bench tenant --out`) ran; -1 when the file cannot be read.
double ShareOf(const std::string& path, uint64_t from, uint64_t to);

// What the simulated GPU's container runtime adds to every container: its driver libraries
// (found first on the library path, and by libvgpu.so as the real driver) and the shared state
// of the simulated GPU under `root` (devices.conf, simgpu.state), so that the containers and
// the node daemon see the same device. `simgpu_dir` holds the simulated driver libraries.
std::vector<std::string> SimGpuRuntimeEnv(const std::string& simgpu_dir, const std::string& root);

// A program running in the background with stdout and stderr in `log` and `env` ("NAME=value")
// added to the environment. Destroying it sends SIGTERM, waits up to two seconds, then SIGKILL,
// and reaps it: a failing test leaves no process behind.
class BackgroundProcess {
 public:
  BackgroundProcess(const std::vector<std::string>& args, const std::vector<std::string>& env,
                    std::string log);
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  // Sends `signal` and waits up to `limit`: the exit code (128 + signal when killed by one), or
  // -1 on timeout.
  int Stop(int signal, std::chrono::milliseconds limit);
  // True while it has not exited.
  bool Running();
  std::string Log() const { return ReadFile(log_); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
  std::string log_;
};

}  // namespace vgpu::e2e
