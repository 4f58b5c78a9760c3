// Loading a bundled trace for the simulator tests.
#pragma once

#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "sim/snapshot.h"
#include "sim/trace.h"

namespace vgpu::sim::testing {

inline const std::string kDataDir = std::string(VGPU_SOURCE_DIR) + "/data/alibaba-gpu-v2023/";

struct LoadedTrace {
  std::unique_ptr<sched::ModelRegistry> models = std::make_unique<sched::ModelRegistry>();
  SnapshotInput input;
};

// Loads the bundled node list and openb_pod_list_<name>.csv; fails the test on error.
inline LoadedTrace LoadTrace(const std::string& name) {
  LoadedTrace t;
  auto nodes = LoadNodeList(kDataDir + "openb_node_list_gpu_node.csv", t.models.get());
  EXPECT_TRUE(nodes.has_value()) << nodes.error().message();
  auto pods = LoadPodList(kDataDir + "openb_pod_list_" + name + ".csv", *t.models);
  EXPECT_TRUE(pods.has_value()) << pods.error().message();
  if (!nodes || !pods) return t;
  std::vector<std::pair<std::string, sched::PodRequest>> list;
  for (auto& p : *pods) list.emplace_back(p.name, p.request);
  t.input = MakeSnapshotInput(std::move(*nodes), std::move(list), t.models.get(),
                              "openb_pod_list_" + name);
  return t;
}

}  // namespace vgpu::sim::testing
