// Helpers shared by the end-to-end tests: files, the worker's "key value" output, shares measured
// from kernel records, the simulated GPU's runtime environment and MIG instances, and local HTTP
// calls. Background processes and free ports come from tests/support/background_process.h.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "device/device_backend.h"
#include "support/background_process.h"

namespace vgpu::e2e {

// CLOCK_MONOTONIC in nanoseconds (the clock `vgpu bench tenant` records kernels with).
uint64_t MonotonicNs();

// The whole file; "" when it cannot be read.
std::string ReadFile(const std::string& path);

// The words of `line` (no quoting: the paths in tests hold no spaces).
std::vector<std::string> Words(const std::string& line);

// Polls `pred` every 20 ms until it holds (true) or `timeout_ms` passes (false): support's
// vgpu::testing::WaitFor with the e2e tests' poll interval.
bool WaitFor(const std::function<bool()>& pred, int timeout_ms);

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

// The MIG instances of GPU `index` as the simulated NVML library `nvml_library` reports them now,
// with the simulated GPU's environment `env` ("NAME=value" each, set in this process first);
// empty when NVML cannot be opened.
std::vector<device::MigInstance> SimMigInstances(const std::vector<std::string>& env,
                                                 const std::string& nvml_library, int index);

// The "key value" lines of `worker limits` (tests/simgpu's simgpu_worker) run with `env` and
// CUDA_VISIBLE_DEVICES=`visible`: the limits a container with that view of the GPU sees.
std::map<std::string, std::string> RunSimGpuWorkerLimits(const std::vector<std::string>& env,
                                                         const std::string& worker,
                                                         const std::string& visible);

// POSTs the JSON `body` to http://127.0.0.1:`port``path` (10 s to answer): the status and the
// parsed body (discarded when not JSON); {0, null} without an answer.
std::pair<int, nlohmann::json> PostJson(int port, const std::string& path, const std::string& body);

// GET http://127.0.0.1:`port`/metrics (1 s to connect): the body, "" unless the status is 200.
std::string GetMetrics(int port);

// The node every test pod is on.
inline constexpr const char* kTestNode = "e2e-node";

// One item of a `vgpu node --pods-file` list: Pending on kTestNode in namespace "default", uid
// "uid-<name>", created `second` (0..9) seconds after 2025-01-01T00:00:00Z, with `annotations`
// and one container, "main".
nlohmann::json PendingPod(const std::string& name, int second, const nlohmann::json& annotations);

// `vgpu node --sim` for a test node whose files are under `root`: devices.conf (the simulated
// GPUs), pods.json (its pods, unless it has an API server), kubelet/, slices/ and arbiter/; its
// log goes to root/<log_name> and the simulated GPU's state to root/simgpu.state.
struct SimNodeOptions {
  std::string vgpu_bin;
  std::string libvgpu;
  std::string root;
  std::string pod_resources_socket;  // the kubelet emulator's
  std::string metrics_listen;        // "127.0.0.1:PORT"; "" for the daemon's default
  int units_per_gpu = 10;
  std::vector<std::string> extra_args;
  std::string kubeconfig = "";  // the API server's; "" for root/pods.json
  std::string node_name = kTestNode;
  std::vector<std::string> extra_env = {};  // "NAME=value", for the daemon
  std::string log_name = "daemon.log";
};
std::unique_ptr<vgpu::testing::BackgroundProcess> StartSimNode(const SimNodeOptions& options);

// SIGTERM, up to five seconds for a clean exit, then SIGKILL; nothing when `node` is null.
void StopSimNode(vgpu::testing::BackgroundProcess* node);

}  // namespace vgpu::e2e
