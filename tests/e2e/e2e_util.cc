#include "e2e_util.h"

#include <httplib.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "device/nvml_backend.h"
#include "support/wait_for.h"

namespace vgpu::e2e {

std::vector<std::string> Words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

bool WaitFor(const std::function<bool()>& pred, int timeout_ms) {
  return vgpu::testing::WaitFor(pred, std::chrono::milliseconds(timeout_ms),
                                std::chrono::milliseconds(20));
}

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, std::string> Lines(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return m;
}

double ShareOf(const std::string& path, uint64_t from, uint64_t to) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  uint64_t call, start, end, busy = 0;
  while (std::fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64, &call, &start, &end) == 3) {
    uint64_t s = std::max(start, from), e = std::min(end, to);
    if (e > s) busy += e - s;
  }
  std::fclose(f);
  return 100.0 * static_cast<double>(busy) / static_cast<double>(to - from);
}

std::vector<std::string> SimGpuRuntimeEnv(const std::string& simgpu_dir, const std::string& root) {
  return {"LD_LIBRARY_PATH=" + simgpu_dir,
          "VGPU_REAL_LIBCUDA=" + simgpu_dir + "/libcuda.so.1",
          "VGPU_REAL_LIBNVML=" + simgpu_dir + "/libnvidia-ml.so.1",
          "VGPU_SIMGPU_CONFIG=" + root + "/devices.conf",
          "VGPU_SIMGPU_STATE=" + root + "/simgpu.state",
          "VGPU_SIMGPU_LOG_LEVEL=1",
          "LIBCUDA_LOG_LEVEL=1"};
}

std::vector<device::MigInstance> SimMigInstances(const std::vector<std::string>& env,
                                                 const std::string& nvml_library, int index) {
  for (const std::string& e : env) {
    const size_t eq = e.find('=');
    setenv(e.substr(0, eq).c_str(), e.substr(eq + 1).c_str(), 1);
  }
  device::NvmlBackendOptions o;
  o.library_path = nvml_library;
  o.cuda_library_path = "";
  auto b = device::NvmlBackend::Open(o);
  if (!b || !(*b)->Discover()) return {};
  auto i = (*b)->MigInstances(index);
  return i ? *i : std::vector<device::MigInstance>{};
}

std::map<std::string, std::string> RunSimGpuWorkerLimits(const std::vector<std::string>& env,
                                                         const std::string& worker,
                                                         const std::string& visible) {
  std::string cmd;
  for (const std::string& e : env) cmd += e + " ";
  cmd += "CUDA_VISIBLE_DEVICES=" + visible + " " + worker + " limits < /dev/null 2>&1";
  FILE* f = popen(cmd.c_str(), "r");
  std::string out;
  char buf[512];
  while (f != nullptr && std::fgets(buf, sizeof(buf), f) != nullptr) out += buf;
  if (f != nullptr) pclose(f);
  return Lines(out);
}

std::pair<int, nlohmann::json> PostJson(int port, const std::string& path,
                                        const std::string& body) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(10, 0);
  auto res = cli.Post(path, body, "application/json");
  if (!res) return {0, nlohmann::json(nullptr)};
  return {res->status, nlohmann::json::parse(res->body, nullptr, false)};
}

std::string GetMetrics(int port) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_connection_timeout(1, 0);
  auto res = cli.Get("/metrics");
  return res && res->status == 200 ? res->body : "";
}

nlohmann::json PendingPod(const std::string& name, int second, const nlohmann::json& annotations) {
  return {{"metadata",
           {{"name", name},
            {"namespace", "default"},
            {"uid", "uid-" + name},
            {"creationTimestamp", "2025-01-01T00:00:0" + std::to_string(second) + "Z"},
            {"annotations", annotations}}},
          {"spec", {{"nodeName", kTestNode}, {"containers", {{{"name", "main"}}}}}},
          {"status", {{"phase", "Pending"}}}};
}

std::unique_ptr<vgpu::testing::BackgroundProcess> StartSimNode(const SimNodeOptions& o) {
  std::vector<std::string> args = {o.vgpu_bin,
                                   "node",
                                   "--sim",
                                   "--sim-config",
                                   o.root + "/devices.conf",
                                   "--kubelet-dir",
                                   o.root + "/kubelet",
                                   "--slice-dir",
                                   o.root + "/slices",
                                   "--arbiter-dir",
                                   o.root + "/arbiter",
                                   "--libvgpu",
                                   o.libvgpu,
                                   "--node-name",
                                   o.node_name,
                                   o.kubeconfig.empty() ? "--pods-file" : "--kubeconfig",
                                   o.kubeconfig.empty() ? o.root + "/pods.json" : o.kubeconfig,
                                   "--pod-resources-socket",
                                   o.pod_resources_socket,
                                   "--units-per-gpu",
                                   std::to_string(o.units_per_gpu)};
  if (!o.metrics_listen.empty()) {
    args.insert(args.end(), {"--metrics-listen", o.metrics_listen});
  }
  args.insert(args.end(), o.extra_args.begin(), o.extra_args.end());
  std::vector<std::string> env = {"VGPU_SIMGPU_STATE=" + o.root + "/simgpu.state",
                                  "VGPU_SIMGPU_LOG_LEVEL=1"};
  env.insert(env.end(), o.extra_env.begin(), o.extra_env.end());
  return std::make_unique<vgpu::testing::BackgroundProcess>(args, env, o.root + "/" + o.log_name);
}

void StopSimNode(vgpu::testing::BackgroundProcess* node) {
  if (node != nullptr && node->Stop(SIGTERM, std::chrono::seconds(5)) == -1) {
    node->Stop(SIGKILL, std::chrono::seconds(10));
  }
}

}  // namespace vgpu::e2e
