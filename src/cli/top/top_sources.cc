#include "cli/top/top_sources.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "device/nvml_backend.h"
#include "node/slice.h"
#include "shm/region_file.h"

namespace vgpu::cli {

TopGpus::TopGpus(const std::string& nvml_path) {
  device::NvmlBackendOptions options;
  options.library_path = nvml_path;
  options.cuda_library_path.clear();  // SM counts are not shown; do not load the CUDA driver
  auto backend = device::NvmlBackend::Open(options);
  if (!backend) {
    note_ = "NVML not available: " + backend.error().message();
    return;
  }
  auto devices = (*backend)->Discover();
  if (!devices) {
    note_ = "NVML did not list the GPUs: " + devices.error().message();
    return;
  }
  devices_ = std::move(*devices);
  backend_ = std::move(*backend);
}

std::vector<GpuInfo> TopGpus::Read() const {
  std::vector<GpuInfo> out;
  if (backend_ == nullptr) return out;
  for (const device::DeviceInfo& d : devices_) {
    GpuInfo g;
    g.index = static_cast<unsigned>(d.index);
    g.name = d.name;
    g.uuid = d.uuid;
    g.memory_total = d.memory_total_bytes;
    auto sample = backend_->Sample(d.index);
    if (sample) {
      g.memory_used = sample->memory_used_bytes;
      if (sample->sm_utilization.has_value()) {
        g.utilization = static_cast<int>(*sample->sm_utilization * 100.0 + 0.5);
      }
    }
    auto mode = backend_->GetMigMode(d.index);
    if (mode && mode->current) {
      auto instances = backend_->MigInstances(d.index);
      if (instances) g.mig = std::move(*instances);
    }
    out.push_back(std::move(g));
  }
  return out;
}

std::string TopSlice::Uuid(int d) const {
  const char* recorded = entry.region.header.uuid[d];
  std::string uuid(recorded, strnlen(recorded, shm::kUuidLength));
  if (uuid.empty() && d >= 0 && static_cast<size_t>(d) < uuids.size()) uuid = uuids[d];
  return uuid;
}

std::string NodeSliceDir(const std::string* flag) {
  if (flag != nullptr) return *flag == "none" ? "" : *flag;
  if (const char* env = std::getenv("VGPU_NODE_SLICE_DIR"); env != nullptr) {
    return std::string(env) == "none" ? "" : env;
  }
  std::error_code ec;
  const std::string standard = node::SliceLayout().root;
  return std::filesystem::is_directory(standard, ec) ? standard : "";
}

std::vector<TopSlice> CollectSlices(const std::string& state_dir,
                                    const std::string& node_slice_dir) {
  std::vector<TopSlice> out;
  for (slice::SliceEntry& e : slice::ReadSlices(state_dir)) {
    TopSlice s;
    s.kind = "run";
    s.region_path = e.dir + "/region";
    s.arbiter_dir = state_dir + "/arbiter";
    s.entry = std::move(e);
    out.push_back(std::move(s));
  }
  if (node_slice_dir.empty()) return out;
  node::SliceLayout layout;
  layout.root = node_slice_dir;
  std::vector<node::SliceRecord> records = node::SliceManager(layout).List();
  std::sort(records.begin(), records.end(),
            [](const node::SliceRecord& a, const node::SliceRecord& b) { return a.name < b.name; });
  for (const node::SliceRecord& r : records) {
    TopSlice s;
    s.kind = "pod";
    s.region_path = r.region_path;
    s.arbiter_dir = r.arbiter_dir;
    s.ns = r.spec.pod_ns;
    s.pod = r.spec.pod_name;
    s.pod_uid = r.spec.pod_uid;
    s.container = r.spec.container;
    for (const node::SliceDevice& d : r.spec.devices) s.uuids.push_back(d.uuid);
    s.entry.dir = r.dir;
    s.entry.name = r.name;
    shm::Mapping mapping;
    shm::RegionError e = shm::Mapping::OpenExisting(r.region_path.c_str(), false, &mapping);
    if (e == shm::RegionError::kOk) {
      std::memcpy(&s.entry.region, mapping.region(), sizeof(shm::Region));
    } else {
      s.entry.error = shm::RegionErrorText(e);
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace vgpu::cli
