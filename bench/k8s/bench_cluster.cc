#include "bench_cluster.h"

#include <cstdio>

#include "common/json_string.h"
#include "common/rng.h"
#include "harness.h"

namespace vgpu::k8s::bench {

std::vector<std::string> BuildBenchCluster(PlacementState& state, int nodes, int* placed) {
  std::vector<std::string> names;
  for (int n = 0; n < nodes; ++n) {
    char name[32];
    std::snprintf(name, sizeof name, "gpu-node-%04d", n);
    names.push_back(name);
    const bool big = n % 5 < 3;
    state.UpsertNode(
        name,
        *ParseInventory(testing::InventoryJson(name, 8, big ? "NVIDIA A100-SXM4-80GB" : "NVIDIA L4",
                                               big ? 81920 : 23034)),
        HostResources{big ? 254000 : 94000, big ? 2000000 : 380000});
  }
  // A third of the GPUs carry pods already.
  Rng rng(7);
  int count = 0;
  for (int i = 0; i < nodes * 8 / 3; ++i) {
    PodGpuRequest r;
    ContainerGpuRequest c;
    c.name = "main";
    c.count = 1;
    c.cores = 10 + static_cast<int>(rng.UniformInt(6)) * 10;
    c.memory_mib = 2000 + static_cast<int64_t>(rng.UniformInt(8)) * 1000;
    r.containers.push_back(c);
    const std::string uid = "pre-" + std::to_string(i);
    auto t = state.Assume(uid, "bench", uid, r, names[rng.UniformInt(names.size())]);
    if (t) {
      state.BindSucceeded(uid, t->generation);
      ++count;
    }
  }
  if (placed != nullptr) *placed = count;
  return names;
}

std::vector<Json> BenchPods(bool cpu_only) {
  const Json base = testing::Fixture("pod_train.json");
  if (cpu_only) {
    // The same pod without GPUs, in six CPU and memory sizes.
    std::vector<Json> pods;
    for (int s = 0; s < 6; ++s) {
      Json pod = base;
      Json& res = pod["spec"]["containers"][0]["resources"];
      res["requests"] = {{"cpu", std::to_string(1 + s) + "000m"},
                         {"memory", std::to_string(2 << s) + "Gi"}};
      res["limits"] = res["requests"];
      pod["metadata"]["annotations"] = Json::object();
      pods.push_back(pod);
    }
    return pods;
  }
  const int kShapes = 6;
  const int cores[kShapes] = {10, 20, 30, 50, 100, 100};
  const int counts[kShapes] = {1, 1, 1, 1, 1, 2};
  const int64_t mems[kShapes] = {4000, 8000, 12000, 20000, 0, 0};
  std::vector<Json> pods;
  for (int s = 0; s < kShapes; ++s) {
    Json pod = base;
    Json& lim = pod["spec"]["containers"][0]["resources"]["limits"];
    lim["nvidia.com/gpu"] = std::to_string(counts[s]);
    lim["nvidia.com/gpucores"] = std::to_string(cores[s]);
    if (mems[s] > 0) {
      lim["nvidia.com/gpumem"] = std::to_string(mems[s]);
    } else {
      lim.erase("nvidia.com/gpumem");
    }
    pod["spec"]["containers"][0]["resources"]["requests"] = lim;
    pod["metadata"]["annotations"] = Json::object();
    pods.push_back(pod);
  }
  return pods;
}

std::string NamesJson(const std::vector<std::string>& names) {
  std::string out = "[";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += ',';
    AppendJsonString(&out, names[i]);
  }
  out += ']';
  return out;
}

std::string ExtenderArgsBody(const std::string& pod_json, const std::string& names_json) {
  return "{\"Pod\":" + pod_json + ",\"Nodes\":null,\"NodeNames\":" + names_json + "}";
}

}  // namespace vgpu::k8s::bench
