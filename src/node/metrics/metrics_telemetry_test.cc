// The slice counters on /metrics through CollectMetrics: a slice in a MIG instance carries
// dcgm-exporter's GPU_I_PROFILE / GPU_I_ID labels on its counters; the region cache reads a
// region again once its file is replaced (a slice made again at the same path).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "node/metrics/metrics.h"
#include "node/node_state.h"
#include "node/slice.h"
#include "node/slice_region.h"
#include "shm/proc_identity.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

namespace vgpu::node {
namespace {

// The sample line of `name` whose labels contain every one of `parts`, or "".
std::string Line(const std::string& text, const std::string& name,
                 const std::vector<std::string>& parts) {
  size_t pos = 0;
  while ((pos = text.find("\n" + name + "{", pos)) != std::string::npos) {
    size_t end = text.find('\n', pos + 1);
    std::string line = text.substr(pos + 1, end - pos - 1);
    bool all = true;
    for (const std::string& p : parts) all = all && line.find(p) != std::string::npos;
    if (all) return line;
    pos = end;
  }
  return "";
}

// Writes `launches` into a new slot of the slice's region, as a process of the slice would.
void Count(const std::string& region_path, uint64_t launches) {
  shm::Mapping m;
  ASSERT_EQ(shm::Mapping::OpenExisting(region_path.c_str(), true, &m), shm::RegionError::kOk);
  const shm::ProcIdentity self = shm::CurrentProcIdentity();
  int slot = -1;
  ASSERT_EQ(shm::ClaimSlot(m.region(), self, &slot), shm::RegionError::kOk);
  m.region()->header.telemetry.flags = shm::kTelemetryCounting;
  m.region()->slots[slot].counters.launches = launches;
}

TEST(SliceTelemetryMetrics, MigSliceLabelsAndARegionMadeAgain) {
  const std::string root = "/tmp/vgpu-telemetry-metrics-" + std::to_string(getpid());
  std::filesystem::remove_all(root);
  device::DeviceInfo gpu;
  gpu.index = 0;
  gpu.uuid = "GPU-0";
  gpu.name = "NVIDIA H200";
  NodeState state({gpu}, 10, HealthRules{});
  device::MigInstance mi;
  mi.uuid = "MIG-0-3";
  mi.gi_id = 3;
  mi.ci_id = 0;
  mi.profile = "3g.71gb";
  state.SetMigInstances(0, {mi});
  SliceLayout layout;
  layout.root = root + "/slices";
  layout.host_libvgpu = root + "/libvgpu.so";
  layout.arbiter_dir = root + "/arbiter";
  SliceManager slices(layout);
  ASSERT_TRUE(slices.Init().ok());
  ContainerSlice spec;
  spec.pod_ns = "ml";
  spec.pod_name = "p";
  spec.pod_uid = "u";
  spec.container = "c";
  spec.devices = {{"MIG-0-3", 0, 0, 8ULL << 30, 100}};
  auto record = slices.Create(spec, 1);
  ASSERT_TRUE(record) << record.error().ToString();
  Count(record->region_path, 42);

  RegionCache cache;
  MetricsSources src;
  src.state = &state;
  src.slices = &slices;
  src.node_name = "n";
  src.regions = &cache;
  src.dcgm_aliases = true;
  std::string text = CollectMetrics(src);
  const std::string launches =
      Line(text, "vgpu_slice_kernel_launches_total",
           {"pod=\"p\"", "uuid=\"MIG-0-3\"", "GPU_I_PROFILE=\"3g.71gb\"", "GPU_I_ID=\"3\""});
  ASSERT_FALSE(launches.empty()) << text;
  EXPECT_EQ(launches.substr(launches.rfind(' ') + 1), "42");
  EXPECT_EQ(cache.size(), 1u);

  // The slice is made again (a new region file at the same path): the cache reads the new one.
  ASSERT_TRUE(slices.Remove(record->name).ok());
  record = slices.Create(spec, 2);
  ASSERT_TRUE(record);
  Count(record->region_path, 7);
  text = CollectMetrics(src);
  const std::string again = Line(text, "vgpu_slice_kernel_launches_total", {"pod=\"p\""});
  ASSERT_FALSE(again.empty()) << text;
  EXPECT_EQ(again.substr(again.rfind(' ') + 1), "7");
  // Gone slices leave the cache.
  ASSERT_TRUE(slices.Remove(record->name).ok());
  CollectMetrics(src);
  EXPECT_EQ(cache.size(), 0u);
  std::filesystem::remove_all(root);
}

}  // namespace
}  // namespace vgpu::node
