#include "dra/driver.h"

#include <algorithm>
#include <atomic>
#include <ctime>
#include <filesystem>
#include <optional>
#include <set>
#include <thread>

#include "common/log.h"
#include "dra/cdi_spec.h"
#include "dra/gpu_config.h"
#include "node/slice_region.h"

namespace vgpu::dra {

namespace fs = std::filesystem;

namespace {

constexpr const char* kContainer = "claim";
// Claims of one NodePrepareResources call prepared at the same time.
constexpr size_t kPrepareThreads = 8;

node::SliceLayout WithRoot(node::SliceLayout layout, const std::string& state_dir) {
  if (layout.root.empty() || layout.root == node::SliceLayout{}.root) {
    layout.root = state_dir + "/slices";
  }
  return layout;
}

std::string CheckpointPath(const DriverOptions& o) { return o.state_dir + "/checkpoint.json"; }

}  // namespace

std::string GpuDeviceName(int index) { return "gpu-" + std::to_string(index); }

Driver::Driver(DriverOptions options, std::vector<device::DeviceInfo> gpus, ClaimSource* claims,
               HealthFn healthy)
    : options_(std::move(options)),
      gpus_(std::move(gpus)),
      claims_(claims),
      healthy_(std::move(healthy)),
      slices_(WithRoot(options_.slices, options_.state_dir)) {
  options_.slices = slices_.layout();
}

Status Driver::Init() {
  std::error_code ec;
  fs::create_directories(options_.state_dir, ec);
  if (ec) return Status::Internal("create " + options_.state_dir + ": " + ec.message());
  fs::create_directories(options_.cdi_dir, ec);
  if (ec) {
    VGPU_LOG_WARN("cannot create the CDI directory %s: %s (claims fail until it is writable)",
                  options_.cdi_dir.c_str(), ec.message().c_str());
  }
  if (Status s = slices_.Init(); !s.ok()) return s;
  auto loaded = LoadCheckpoint(CheckpointPath(options_));
  if (!loaded) return loaded.error();
  std::lock_guard<std::mutex> lock(mu_);
  prepared_ = std::move(*loaded);
  // What a crash between the steps of Prepare left behind.
  std::set<std::string> known;
  for (const auto& [uid, c] : prepared_) known.insert(c.slice);
  for (const node::SliceRecord& r : slices_.List()) {
    if (known.count(r.name) == 0) {
      VGPU_LOG_INFO("removing slice %s: no prepared claim holds it", r.name.c_str());
      (void)slices_.Remove(r.name);
      (void)RemoveCdiSpec(options_.cdi_dir, r.spec.pod_uid);
    }
  }
  return Status::Ok();
}

const device::DeviceInfo* Driver::FindDevice(const std::string& name) const {
  for (const device::DeviceInfo& g : gpus_) {
    if (GpuDeviceName(g.index) == name) return &g;
  }
  return nullptr;
}

Status Driver::CheckHealth(const PreparedClaim& claim) const {
  for (const PreparedDevice& d : claim.devices) {
    if (healthy_ && !healthy_(d.uuid)) {
      return Status::Unavailable(claim.ref.Describe() + ": device " + d.device + " (GPU " + d.uuid +
                                 ") is unhealthy");
    }
  }
  return Status::Ok();
}

Result<PreparedClaim> Driver::PrepareOne(const ClaimRef& ref) {
  if (ref.uid.empty() || ref.name.empty() || ref.ns.empty()) {
    return Status::InvalidArgument(ref.Describe() + ": namespace, name and uid are required");
  }
  auto object = claims_->GetClaim(ref.ns, ref.name);
  if (!object)
    return Status(object.error().code(), ref.Describe() + ": " + object.error().message());
  auto alloc = ParseClaim(*object, ref, options_.driver);
  if (!alloc) return alloc.error();

  node::SliceSpec spec;
  spec.pod_ns = ref.ns;
  spec.pod_name = ref.name;
  spec.pod_uid = ref.uid;
  spec.container = kContainer;
  PreparedClaim out;
  out.ref = ref;
  std::map<std::string, size_t> position;  // device name -> index in spec.devices
  for (const AllocatedDevice& d : alloc->devices) {
    if (d.pool != options_.pool) {
      return Status::InvalidArgument(ref.Describe() + ": " + d.field + ".pool: \"" + d.pool +
                                     "\" is not this node's pool \"" + options_.pool + "\"");
    }
    const device::DeviceInfo* gpu = FindDevice(d.device);
    if (gpu == nullptr) {
      return Status::InvalidArgument(ref.Describe() + ": " + d.field + ".device: node " +
                                     options_.pool + " has no device \"" + d.device + "\"");
    }
    if (healthy_ && !healthy_(gpu->uuid)) {
      return Status::Unavailable(ref.Describe() + ": " + d.field + ".device: " + d.device +
                                 " (GPU " + gpu->uuid + ") is unhealthy");
    }
    const uint64_t memory =
        d.has_memory ? static_cast<uint64_t>(d.memory_bytes) : gpu->memory_total_bytes;
    if (memory > gpu->memory_total_bytes) {
      return Status::InvalidArgument(
          ref.Describe() + ": " + d.field + ".consumedCapacity.memory: " + std::to_string(memory) +
          " bytes exceed the GPU's " + std::to_string(gpu->memory_total_bytes));
    }
    const int cores = d.has_cores ? d.cores : 100;
    auto it = position.find(d.device);
    if (it == position.end()) {
      position[d.device] = spec.devices.size();
      node::SliceDevice sd;
      sd.uuid = gpu->uuid;
      sd.node_index = gpu->index;
      sd.memory_bytes = memory;
      sd.cores = cores;
      spec.devices.push_back(sd);
      PreparedDevice pd;
      pd.pool = d.pool;
      pd.device = d.device;
      pd.uuid = gpu->uuid;
      out.devices.push_back(pd);
      it = position.find(d.device);
    } else {
      // Two requests of the claim on one shared GPU: one container, the sum of both.
      node::SliceDevice& sd = spec.devices[it->second];
      sd.memory_bytes = std::min<uint64_t>(sd.memory_bytes + memory, gpu->memory_total_bytes);
      sd.cores = std::min(sd.cores + cores, 100);
    }
    out.devices[it->second].requests.push_back(d.request);
  }
  for (const OpaqueConfig& c : alloc->configs) {
    auto settings = ParseGpuConfig(c.parameters, ref.Describe() + ": " + c.field);
    if (!settings) return settings.error();
    spec.compute.OverrideWith(*settings);
  }

  auto record = slices_.Create(spec, static_cast<int64_t>(std::time(nullptr)));
  if (!record) {
    return Status(record.error().code(), ref.Describe() + ": " + record.error().message());
  }
  node::ContainerAllocation allocation = node::BuildAllocation(*record, slices_.layout());
  if (Status s = node::ApplyDeviceList(*record, gpus_, options_.device_list, &allocation);
      !s.ok()) {
    (void)slices_.Remove(record->name);
    return Status(s.code(), ref.Describe() + ": " + s.message());
  }
  if (Status s = WriteCdiSpec(options_.cdi_dir, ref.uid, allocation); !s.ok()) {
    (void)slices_.Remove(record->name);
    return Status(s.code(),
                  ref.Describe() + ": CDI directory " + options_.cdi_dir + ": " + s.message());
  }
  out.slice = record->name;
  for (PreparedDevice& d : out.devices) {
    d.cdi_ids.push_back(CdiDeviceId(ref.uid));
    if (!options_.nvidia_cdi_kind.empty())
      d.cdi_ids.push_back(options_.nvidia_cdi_kind + "=" + d.uuid);
  }
  return out;
}

std::map<std::string, Driver::PrepareResult> Driver::Prepare(const std::vector<ClaimRef>& claims) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, PrepareResult> out;
  std::vector<std::string> added;
  std::vector<ClaimRef> fresh;  // not prepared yet, each once
  for (const ClaimRef& ref : claims) {
    PrepareResult& r = out[ref.uid];
    auto it = prepared_.find(ref.uid);
    if (it != prepared_.end()) {
      if (Status s = CheckHealth(it->second); !s.ok()) {
        r.error = s.message();
      } else {
        r.devices = it->second.devices;
      }
      continue;
    }
    if (std::none_of(fresh.begin(), fresh.end(),
                     [&](const ClaimRef& f) { return f.uid == ref.uid; })) {
      fresh.push_back(ref);
    }
  }
  // Each claim has its own files (slice directory, CDI spec): they are made in parallel, so
  // that the fsyncs of many claims overlap.
  std::vector<std::optional<Result<PreparedClaim>>> results(fresh.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < fresh.size();) results[i] = PrepareOne(fresh[i]);
  };
  std::vector<std::thread> workers;
  const size_t threads = std::min<size_t>(fresh.size(), kPrepareThreads);
  for (size_t t = 1; t < threads; ++t) workers.emplace_back(work);
  work();
  for (std::thread& t : workers) t.join();
  for (size_t i = 0; i < fresh.size(); ++i) {
    PrepareResult& r = out[fresh[i].uid];
    Result<PreparedClaim>& p = *results[i];
    if (!p) {
      r.error = p.error().message();
      VGPU_LOG_WARN("NodePrepareResources: %s", r.error.c_str());
      continue;
    }
    r.devices = p->devices;
    prepared_[fresh[i].uid] = std::move(*p);
    added.push_back(fresh[i].uid);
  }
  if (!added.empty()) {
    if (Status s = SaveCheckpoint(CheckpointPath(options_), prepared_); !s.ok()) {
      // Not recorded: undo, so that a retry starts clean.
      for (const std::string& uid : added) {
        (void)RemoveCdiSpec(options_.cdi_dir, uid);
        (void)slices_.Remove(prepared_[uid].slice);
        prepared_.erase(uid);
        out[uid].devices.clear();
        out[uid].error = "claim " + uid + ": saving the checkpoint: " + s.message();
      }
    }
  }
  return out;
}

std::map<std::string, std::string> Driver::Unprepare(const std::vector<ClaimRef>& claims) {
  std::lock_guard<std::mutex> lock(mu_);
  std::map<std::string, std::string> out;
  PreparedClaims before = prepared_;
  bool changed = false;
  for (const ClaimRef& ref : claims) {
    std::string& error = out[ref.uid];
    auto it = prepared_.find(ref.uid);
    if (it == prepared_.end()) continue;
    if (Status s = RemoveCdiSpec(options_.cdi_dir, ref.uid); !s.ok()) {
      error = ref.Describe() + ": " + s.message();
      continue;
    }
    if (Status s = slices_.Remove(it->second.slice); !s.ok() && s.code() != StatusCode::kNotFound) {
      error = ref.Describe() + ": " + s.message();
      continue;
    }
    prepared_.erase(it);
    changed = true;
  }
  if (changed) {
    if (Status s = SaveCheckpoint(CheckpointPath(options_), prepared_); !s.ok()) {
      // The files are gone; keep the entries so that a retry finds them and succeeds.
      prepared_ = std::move(before);
      for (auto& [uid, e] : out) {
        if (e.empty()) e = "claim " + uid + ": saving the checkpoint: " + s.message();
      }
    }
  }
  return out;
}

size_t Driver::prepared_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return prepared_.size();
}

}  // namespace vgpu::dra
