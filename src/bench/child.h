// A tenant process of a `vgpu bench` command: started with its own environment (its slice), its
// stdin a pipe the parent writes the start time to, its stdout a pipe the parent reads "ready" /
// "done" from, its stderr a file.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "common/result.h"

namespace vgpu::bench {

struct Child {
  pid_t pid = -1;
  int in = -1;   // its stdin (we write the start time, then close)
  int out = -1;  // its stdout ("ready", "done")
  std::string out_file;
  std::string err_file;
  std::string seen;
};

// Reads what is available on the child's stdout; true when `word` has been seen.
bool Saw(Child& c, const char* word);

// Starts `args` (args[0] the executable) with `env`; stderr goes to `err_file`.
Result<Child> SpawnChild(std::vector<std::string> args, std::vector<std::string> env,
                         const std::string& out_file, const std::string& err_file);

// The whole content of a file ("" when it cannot be read).
std::string ReadAll(const std::string& path);

// CLOCK_MONOTONIC in nanoseconds (common/clock.h's MonotonicClock).
uint64_t MonotonicNs();

}  // namespace vgpu::bench
