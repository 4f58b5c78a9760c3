// Runs a program to completion in a controlled environment, for bench_intercept: the processes it
// measures must see exactly the variables it gives them (libvgpu.so preloaded or not, which
// driver library is found), whatever the caller's environment holds.
#pragma once

#include <string>
#include <vector>

namespace vgpu::bench {

// Starts argv[0] (a path) with argv; its environment is the current one without any variable
// whose name is in `drop` or starts with a prefix in `drop_prefixes`, plus `add` ("NAME=value").
// With `out` non-null its standard output is collected there; otherwise it is inherited.
// Standard error is inherited. Returns the exit status, 128 + signal when killed, or -1 (with a
// message on stderr) when the program cannot be started.
int RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& drop,
               const std::vector<std::string>& drop_prefixes, const std::vector<std::string>& add,
               std::string* out);

}  // namespace vgpu::bench
