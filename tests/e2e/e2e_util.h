// Helpers shared by the end-to-end tests: files, the worker's "key value" output, shares measured
// from kernel records, and the simulated GPU's runtime environment. Background processes and free
// ports come from tests/cli/background_process.h.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace vgpu::e2e {

// CLOCK_MONOTONIC in nanoseconds (the clock `vgpu bench tenant` records kernels with).
uint64_t MonotonicNs();

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

}  // namespace vgpu::e2e
