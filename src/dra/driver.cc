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

void Driver::SetOffers(device::DeviceBackend* backend, std::vector<GpuOffer> offers) {
  std::lock_guard<std::mutex> lock(mu_);
  backend_ = backend;
  offers_ = std::move(offers);
}

Status Driver::EnableMig(device::DeviceBackend* backend, std::vector<GpuOffer> offers) {
  SetOffers(backend, std::move(offers));
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<int> dynamic;
  for (size_t i = 0; i < gpus_.size() && i < offers_.size(); ++i) {
    if (offers_[i].Dynamic()) dynamic.push_back(gpus_[i].index);
  }
  if (dynamic.empty()) return Status::Ok();
  mig_ = std::make_unique<node::MigManager>(backend, options_.state_dir + "/mig-claims");
  if (Status s = mig_->Recover(dynamic); !s.ok()) return s;
  std::set<std::string> live;
  for (const auto& [uid, c] : prepared_) live.insert(uid);
  if (int n = mig_->ReleaseGone(live); n > 0) {
    VGPU_LOG_INFO("destroyed %d MIG instance(s) that no prepared claim holds", n);
  }
  return Status::Ok();
}

std::set<int> Driver::GpusInUse() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::set<int> out;
  for (const auto& [uid, c] : prepared_) {
    for (const PreparedDevice& d : c.devices) {
      if (const device::DeviceInfo* g = FindGpu(d.gpu_uuid())) out.insert(g->index);
    }
  }
  return out;
}

const device::DeviceInfo* Driver::FindGpu(const std::string& uuid) const {
  for (const device::DeviceInfo& g : gpus_) {
    if (g.uuid == uuid) return &g;
  }
  return nullptr;
}

std::optional<Driver::Target> Driver::FindDevice(const std::string& name) const {
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const device::DeviceInfo& g = gpus_[i];
    const GpuOffer* offer = i < offers_.size() ? &offers_[i] : nullptr;
    if (GpuDeviceName(g.index) == name) {
      if (offer != nullptr && !offer->software) return std::nullopt;
      return Target{&g, offer, nullptr};
    }
    if (offer == nullptr) continue;
    for (const MigDeviceSpec& m : offer->mig) {
      if (MigDeviceName(g.index, m) == name) return Target{&g, offer, &m};
    }
  }
  return std::nullopt;
}

Status Driver::CheckHealth(const PreparedClaim& claim) const {
  for (const PreparedDevice& d : claim.devices) {
    if (healthy_ && !healthy_(d.gpu_uuid())) {
      return Status::Unavailable(claim.ref.Describe() + ": device " + d.device + " (GPU " +
                                 d.gpu_uuid() + ") is unhealthy");
    }
  }
  return Status::Ok();
}

// mig_mu_ held.
Status Driver::SetMigModeFor(const ClaimRef& ref, const AllocatedDevice& d, const Target& t,
                             bool on) {
  const std::string what = ref.Describe() + ": " + d.field + ".device: " + d.device;
  auto mode = backend_->GetMigMode(t.gpu->index);
  if (!mode) return Status(mode.error().code(), what + ": MIG mode: " + mode.error().message());
  if (mode->current == on) return Status::Ok();
  // A claim of the other kind on the GPU keeps it as it is (the scheduler's counters should
  // not have allowed this claim).
  for (const auto& [uid, c] : prepared_) {
    for (const PreparedDevice& p : c.devices) {
      if (p.gpu_uuid() == t.gpu->uuid && p.parent_uuid.empty() == on) {
        return Status::FailedPrecondition(what + ": GPU " + t.gpu->uuid + " has " +
                                          (on ? "a software slice" : "a MIG device") +
                                          " prepared for " + c.ref.Describe());
      }
    }
  }
  if (!on && mig_ != nullptr) {
    for (const node::MigClaim& c : mig_->Claims()) {
      if (c.gpu_index == t.gpu->index) {
        return Status::FailedPrecondition(what + ": GPU " + t.gpu->uuid +
                                          " has a MIG instance of claim " + c.pods.front());
      }
    }
  }
  if (Status s = backend_->SetMigMode(t.gpu->index, on); !s.ok()) {
    return Status(s.code(), what + ": turning MIG " + (on ? "on" : "off") + " on GPU " +
                                t.gpu->uuid + ": " + s.message());
  }
  VGPU_LOG_INFO("GPU %d (%s): MIG turned %s for %s", t.gpu->index, t.gpu->uuid.c_str(),
                on ? "on" : "off", ref.Describe().c_str());
  return Status::Ok();
}

Result<device::MigInstance> Driver::MigInstanceFor(const ClaimRef& ref, const AllocatedDevice& d,
                                                   const Target& t) {
  const std::string what = ref.Describe() + ": " + d.field + ".device: " + d.device;
  if (!t.offer->Dynamic()) {
    auto instances = backend_->MigInstances(t.gpu->index);
    if (!instances) {
      return Status(instances.error().code(), what + ": " + instances.error().message());
    }
    for (const device::MigInstance& m : *instances) {
      if (m.uuid == t.mig->uuid && m.ci_id >= 0) return m;
    }
    return Status::FailedPrecondition(what + ": MIG instance " + t.mig->uuid +
                                      " of the GPU's static layout is gone");
  }
  std::lock_guard<std::mutex> lock(mig_mu_);
  if (Status s = SetMigModeFor(ref, d, t, true); !s.ok()) return s;
  auto made = mig_->Acquire(ref.uid, t.gpu->index, t.mig->profile_id, t.mig->start);
  if (!made) return Status(made.error().code(), what + ": " + made.error().message());
  return made;
}

Status Driver::ReleaseMig(const std::string& claim_uid) {
  if (mig_ == nullptr) return Status::Ok();
  std::lock_guard<std::mutex> lock(mig_mu_);
  std::set<std::string> live;
  bool held = false;
  for (const node::MigClaim& c : mig_->Claims()) {
    for (const std::string& p : c.pods) {
      if (p == claim_uid) {
        held = true;
      } else {
        live.insert(p);
      }
    }
  }
  if (!held) return Status::Ok();
  (void)mig_->ReleaseGone(live);
  for (const node::MigClaim& c : mig_->Claims()) {
    if (std::find(c.pods.begin(), c.pods.end(), claim_uid) != c.pods.end()) {
      return Status::FailedPrecondition("its MIG instance " + c.uuid + " on GPU " +
                                        std::to_string(c.gpu_index) +
                                        " could not be destroyed yet (a process may still use "
                                        "it); retried");
    }
  }
  return Status::Ok();
}

Result<PreparedClaim> Driver::PrepareOne(const ClaimRef& ref) {
  Result<PreparedClaim> r = PrepareSteps(ref);
  if (!r) {
    // Nothing of a failed claim stays: its dynamic MIG instance goes too.
    if (Status s = ReleaseMig(ref.uid); !s.ok()) {
      VGPU_LOG_WARN("%s: %s", ref.Describe().c_str(), s.message().c_str());
    }
  }
  return r;
}

Result<Driver::Built> Driver::BuildClaim(const ClaimRef& ref, bool dry_run) {
  if (ref.uid.empty() || ref.name.empty() || ref.ns.empty()) {
    return Status::InvalidArgument(ref.Describe() + ": namespace, name and uid are required");
  }
  auto object = claims_->GetClaim(ref.ns, ref.name);
  if (!object)
    return Status(object.error().code(), ref.Describe() + ": " + object.error().message());
  auto alloc = ParseClaim(*object, ref, options_.driver);
  if (!alloc) return alloc.error();

  node::ContainerSlice spec;
  spec.pod_ns = ref.ns;
  spec.pod_name = ref.name;
  spec.pod_uid = ref.uid;
  spec.container = kContainer;
  Built built;
  PreparedClaim& out = built.claim;
  out.ref = ref;
  // The opaque configs first: a bad one makes nothing (no MIG instance either).
  for (const OpaqueConfig& c : alloc->configs) {
    auto settings = ParseGpuConfig(c.parameters, ref.Describe() + ": " + c.field);
    if (!settings) return settings.error();
    spec.compute.OverrideWith(*settings);
  }
  bool has_mig = false;
  std::map<std::string, size_t> position;  // device name -> index in spec.devices
  for (const AllocatedDevice& d : alloc->devices) {
    if (d.pool != options_.pool) {
      return Status::InvalidArgument(ref.Describe() + ": " + d.field + ".pool: \"" + d.pool +
                                     "\" is not this node's pool \"" + options_.pool + "\"");
    }
    const std::optional<Target> target = FindDevice(d.device);
    if (!target) {
      return Status::InvalidArgument(ref.Describe() + ": " + d.field + ".device: node " +
                                     options_.pool + " has no device \"" + d.device + "\"");
    }
    const device::DeviceInfo* gpu = target->gpu;
    if (healthy_ && !healthy_(gpu->uuid)) {
      return Status::Unavailable(ref.Describe() + ": " + d.field + ".device: " + d.device +
                                 " (GPU " + gpu->uuid + ") is unhealthy");
    }
    if (target->mig != nullptr) {
      // The whole instance, given to this claim only.
      if (position.count(d.device) != 0) {
        return Status::InvalidArgument(ref.Describe() + ": " + d.field + ".device: MIG device " +
                                       d.device + " is allocated twice");
      }
      if (dry_run && target->offer->Dynamic()) {
        return Status::FailedPrecondition(ref.Describe() + ": " + d.field + ".device: " + d.device +
                                          ": its MIG instance is made at NodePrepareResources");
      }
      auto instance = MigInstanceFor(ref, d, *target);
      if (!instance) return instance.error();
      position[d.device] = spec.devices.size();
      node::SliceDevice sd;
      sd.uuid = instance->uuid;
      sd.node_index = gpu->index;
      sd.memory_bytes = instance->memory_bytes;
      sd.cores = 100;
      sd.mig_gi = instance->gi_id;
      sd.mig_ci = instance->ci_id;
      spec.devices.push_back(sd);
      PreparedDevice pd;
      pd.pool = d.pool;
      pd.device = d.device;
      pd.uuid = instance->uuid;
      pd.parent_uuid = gpu->uuid;
      pd.requests.push_back(d.request);
      out.devices.push_back(pd);
      has_mig = true;
      continue;
    }
    if (!dry_run && target->offer != nullptr && target->offer->Dynamic()) {
      std::lock_guard<std::mutex> lock(mig_mu_);
      if (Status s = SetMigModeFor(ref, d, *target, false); !s.ok()) return s;
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

  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  auto record = dry_run ? slices_.Plan(spec, now) : slices_.Create(spec, now);
  if (!record) {
    return Status(record.error().code(), ref.Describe() + ": " + record.error().message());
  }
  built.allocation = node::BuildAllocation(*record, slices_.layout());
  node::DeviceListOptions device_list = options_.device_list;
  // A MIG device is reached through its parent's device node and its capability nodes.
  if (has_mig) device_list.pass_device_specs = true;
  if (Status s = node::ApplyDeviceList(*record, gpus_, device_list, &built.allocation); !s.ok()) {
    if (!dry_run) (void)slices_.Remove(record->name);
    return Status(s.code(), ref.Describe() + ": " + s.message());
  }
  out.slice = record->name;
  return built;
}

Result<PreparedClaim> Driver::PrepareSteps(const ClaimRef& ref) {
  auto built = BuildClaim(ref, /*dry_run=*/false);
  if (!built) return built.error();
  PreparedClaim& out = built->claim;
  if (Status s = WriteCdiSpec(options_.cdi_dir, ref.uid, built->allocation); !s.ok()) {
    (void)slices_.Remove(out.slice);
    return Status(s.code(),
                  ref.Describe() + ": CDI directory " + options_.cdi_dir + ": " + s.message());
  }
  for (PreparedDevice& d : out.devices) {
    d.cdi_ids.push_back(CdiDeviceId(ref.uid));
    if (!options_.nvidia_cdi_kind.empty())
      d.cdi_ids.push_back(options_.nvidia_cdi_kind + "=" + d.uuid);
  }
  return out;
}

Result<nlohmann::json> Driver::PlanCdiSpec(const ClaimRef& ref) {
  std::lock_guard<std::mutex> lock(mu_);
  auto built = BuildClaim(ref, /*dry_run=*/true);
  if (!built) return built.error();
  return CdiSpec(ref.uid, built->allocation);
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
        (void)ReleaseMig(uid);
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
    if (Status s = ReleaseMig(ref.uid); !s.ok()) {
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
