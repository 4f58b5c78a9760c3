#include "node/modes/gpu_mode_setup.h"

#include "common/log.h"
#include "node/modes/mig_static.h"

namespace vgpu::node {

mig::ModelMatch MigModelOf(const device::DeviceInfo& d) {
  return mig::IdentifyModel(
      {d.name, static_cast<int64_t>(d.memory_total_bytes >> 20), d.pci_device_id});
}

std::string MigModelKey(const device::DeviceInfo& d) {
  const mig::ModelMatch m = MigModelOf(d);
  return m.table == nullptr ? "" : std::string(m.table->key);
}

void RefreshMigInstances(device::DeviceBackend* backend, NodeState* state) {
  for (const device::DeviceInfo& d : state->devices()) {
    GpuMode mode = state->Mode(d.index);
    if (mode != GpuMode::kMig && mode != GpuMode::kMigDynamic) continue;
    auto instances = backend->MigInstances(d.index);
    if (instances) {
      state->SetMigInstances(d.index, std::move(*instances));
    } else {
      VGPU_LOG_WARN("GPU %d: MIG instances unknown: %s", d.index,
                    instances.error().ToString().c_str());
    }
  }
}

std::vector<GpuModeOutcome> SetUpGpuModes(device::DeviceBackend* backend, NodeState* state,
                                          const GpuModeConfig& config, MpsManager* mps,
                                          const std::set<int>& assigned) {
  std::vector<GpuModeOutcome> out;
  for (const device::DeviceInfo& d : state->devices()) {
    GpuModeOutcome o;
    o.index = d.index;
    const mig::ModelMatch model = MigModelOf(d);
    const GpuModeEntry* e =
        EntryFor(config, d.index, model.table ? std::string(model.table->key) : "");
    o.wanted = e == nullptr ? GpuMode::kShared : e->mode;
    auto sample = backend->Sample(d.index);
    const bool idle = sample && sample->processes.empty() && assigned.count(d.index) == 0;
    auto mig_mode = backend->GetMigMode(d.index);
    const bool mig_on = mig_mode && mig_mode->current;
    Status s = Status::Ok();
    bool changed = false;
    switch (o.wanted) {
      case GpuMode::kMig: {
        auto applied = ApplyStaticLayout(backend, d.index, e->mig_devices, idle);
        if (applied) {
          changed = !applied->steps.empty();
          o.mode = GpuMode::kMig;
        } else {
          s = applied.error();
          o.mode = mig_on ? GpuMode::kMig : GpuMode::kShared;
        }
        break;
      }
      case GpuMode::kMigDynamic:
        if (model.table == nullptr) {
          VGPU_LOG_WARN(
              "GPU %d (%s): mig-dynamic: %s (the scheduler extender offers MIG only on "
              "models with a table)",
              d.index, d.uuid.c_str(), model.why.c_str());
        }
        if (!mig_on) {
          s = idle ? backend->SetMigMode(d.index, true)
                   : Status::FailedPrecondition("in use: MIG is enabled only on an idle GPU");
          changed = s.ok();
        }
        o.mode = s.ok() ? GpuMode::kMigDynamic : GpuMode::kShared;
        break;
      default:
        if (mig_on) {
          auto have = backend->MigInstances(d.index);
          if (!idle || !have || !have->empty()) {
            s = Status::FailedPrecondition("MIG is on and the GPU is not idle or has instances");
          } else {
            s = backend->SetMigMode(d.index, false);
            changed = s.ok();
          }
        }
        o.mode = s.ok() ? o.wanted : GpuMode::kMig;
        if (s.ok() && o.wanted == GpuMode::kMps) {
          if (mps == nullptr) {
            s = Status::FailedPrecondition("no MPS control configured");
          } else {
            s = mps->Start(d.index, d.uuid);
            changed = changed || s.ok();
          }
          if (!s.ok()) o.mode = GpuMode::kShared;
        }
        break;
    }
    o.report = !s.ok() ? s.message() : changed ? "applied" : "already so";
    if (o.mode == GpuMode::kMig || o.mode == GpuMode::kMigDynamic) {
      auto profiles = backend->MigProfiles(d.index);
      if (profiles) state->SetMigProfiles(d.index, std::move(*profiles));
    }
    state->SetMode(d.index, o.mode);
    if (o.mode == o.wanted) {
      VGPU_LOG_INFO("GPU %d (%s): mode %s: %s", d.index, d.uuid.c_str(),
                    std::string(GpuModeName(o.mode)).c_str(), o.report.c_str());
    } else {
      VGPU_LOG_WARN("GPU %d (%s): mode %s not applied (%s); it stays %s", d.index, d.uuid.c_str(),
                    std::string(GpuModeName(o.wanted)).c_str(), o.report.c_str(),
                    std::string(GpuModeName(o.mode)).c_str());
    }
    out.push_back(std::move(o));
  }
  RefreshMigInstances(backend, state);
  return out;
}

}  // namespace vgpu::node
