#include "container_runtime.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace vgpu::e2e {

ContainerSpec ContainerSpec::FromAllocation(const v1beta1::ContainerAllocateResponse& response) {
  ContainerSpec spec;
  for (const auto& [k, v] : response.envs()) spec.envs[k] = v;
  for (const auto& m : response.mounts()) {
    spec.mounts.push_back({m.container_path(), m.host_path(), m.read_only()});
  }
  return spec;
}

const Mount* ContainerSpec::MountOf(const std::string& path) const {
  const Mount* best = nullptr;
  for (const Mount& m : mounts) {
    const std::string& c = m.container_path;
    bool covers = path == c || (path.size() > c.size() && path.compare(0, c.size(), c) == 0 &&
                                path[c.size()] == '/');
    if (covers && (best == nullptr || c.size() > best->container_path.size())) best = &m;
  }
  return best;
}

std::string ContainerSpec::HostPath(const std::string& path) const {
  const Mount* m = MountOf(path);
  if (m == nullptr) return path;
  return m->host_path + path.substr(m->container_path.size());
}

std::vector<std::string> ContainerSpec::Environment(const std::vector<std::string>& runtime_env,
                                                    const std::string& first_preload) const {
  std::vector<std::string> env;
  for (const auto& [k, v] : envs) {
    env.push_back(k + "=" + (!v.empty() && v.front() == '/' ? HostPath(v) : v));
  }
  std::string preload = first_preload;
  if (MountOf("/etc/ld.so.preload") != nullptr) {
    std::ifstream in(HostPath("/etc/ld.so.preload"));
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line.front() == '#') continue;
      preload += (preload.empty() ? "" : " ") + HostPath(line);
    }
  }
  if (!preload.empty()) env.push_back("LD_PRELOAD=" + preload);
  for (const std::string& e : runtime_env) env.push_back(e);
  return env;
}

std::string SimGpuVisibleDevices(const ContainerSpec& container,
                                 const std::vector<std::string>& node_gpus) {
  auto it = container.envs.find("NVIDIA_VISIBLE_DEVICES");
  if (it == container.envs.end() || it->second.empty()) return "";
  std::vector<std::string> named;
  std::istringstream list(it->second);
  for (std::string id; std::getline(list, id, ',');) named.push_back(id);
  std::string visible;
  for (const std::string& gpu : node_gpus) {
    if (std::find(named.begin(), named.end(), gpu) == named.end()) continue;
    visible += (visible.empty() ? "" : ",") + gpu;
  }
  return visible.empty() ? "" : "CUDA_VISIBLE_DEVICES=" + visible;
}

}  // namespace vgpu::e2e
