// The cluster and the requests shared by the extender benchmarks: a cache of `nodes` nodes with
// 8 GPUs each (60% A100-80GB with 254 cores and ~2 TB, 40% L4 with 94 cores and ~380 GB), a
// third of the GPUs already carrying a pod, and six pod shapes built from the realistic fixture
// pod (tests/k8s/fixtures/pod_train.json).
#pragma once

#include <string>
#include <vector>

#include "k8s/api/kube_client.h"
#include "k8s/extender/placement_state.h"

namespace vgpu::k8s::bench {

// Node names "gpu-node-0000"...; returns them. Fills `state` and places the existing pods;
// `placed` (optional) gets how many were placed.
std::vector<std::string> BuildBenchCluster(PlacementState& state, int nodes, int* placed);

// The six pod shapes (uid left as in the fixture; callers set their own); with `cpu_only`, six
// shapes of the same pod without GPUs (CPU and memory only).
std::vector<Json> BenchPods(bool cpu_only = false);

// `names` as a JSON array of strings.
std::string NamesJson(const std::vector<std::string>& names);

// An ExtenderArgs body as kube-scheduler writes it: {"Pod":...,"Nodes":null,"NodeNames":[...]}.
std::string ExtenderArgsBody(const std::string& pod_json, const std::string& names_json);

}  // namespace vgpu::k8s::bench
