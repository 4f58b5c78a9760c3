#include "dra/gpu_offers.h"

#include <algorithm>

#include "common/log.h"
#include "mig/profiles.h"
#include "node/modes/gpu_mode_setup.h"
#include "node/node_state.h"

namespace vgpu::dra {

std::vector<MigDeviceSpec> StaticMigDevices(const std::vector<device::MigInstance>& instances) {
  std::vector<MigDeviceSpec> out;
  for (const device::MigInstance& m : instances) {
    if (m.ci_id < 0 || m.uuid.empty()) continue;  // half made: not a MIG device
    out.push_back({m.profile, m.start, m.size, m.sm_count, m.memory_bytes, m.uuid, m.profile_id});
  }
  std::sort(out.begin(), out.end(),
            [](const MigDeviceSpec& a, const MigDeviceSpec& b) { return a.start < b.start; });
  return out;
}

std::vector<MigDeviceSpec> DynamicMigDevices(const std::vector<device::MigProfileInfo>& profiles) {
  std::vector<MigDeviceSpec> out;
  for (const device::MigProfileInfo& p : profiles) {
    std::vector<int> starts = p.starts;
    std::sort(starts.begin(), starts.end());
    for (int start : starts) {
      out.push_back({p.name, start, p.memory_slices, p.sm_count, p.memory_bytes, "", p.profile_id});
    }
  }
  return out;
}

std::vector<device::MigProfileInfo> TableMigProfiles(const device::DeviceInfo& gpu) {
  std::vector<device::MigProfileInfo> out;
  const mig::ModelTable* table = node::MigModelOf(gpu).table;  // exact model, or no offers
  if (table == nullptr) return out;
  for (const mig::Profile& p : table->profiles) {
    out.push_back({p.profile_id, std::string(p.name), p.memory_slices, p.compute_slices, p.sm_count,
                   static_cast<uint64_t>(p.memory_mib) << 20, p.max_count, p.Starts(),
                   p.engines.copy, p.engines.decoder, p.engines.encoder, p.engines.jpeg,
                   p.engines.ofa});
  }
  return out;
}

namespace {

// A mig-dynamic GPU's offer: the software device and every placement of the profiles the driver
// reports (MIG on) or, with MIG off, of vgpu's table of the model; the software device only
// when neither tells them.
GpuOffer DynamicOffer(device::DeviceBackend* backend, const device::DeviceInfo& gpu) {
  GpuOffer offer;
  auto profiles = backend->MigProfiles(gpu.index);
  std::vector<device::MigProfileInfo> known =
      profiles && !profiles->empty() ? *profiles : TableMigProfiles(gpu);
  if (!known.empty()) {
    offer.mode = node::GpuMode::kMigDynamic;
    offer.mig = DynamicMigDevices(known);
  } else {
    VGPU_LOG_WARN(
        "GPU %d: mig-dynamic, but its MIG profiles are unknown (%s): it offers "
        "software slices only",
        gpu.index, profiles ? "none reported" : profiles.error().ToString().c_str());
  }
  return offer;
}

}  // namespace

std::vector<GpuOffer> PlanGpuOffers(device::DeviceBackend* backend,
                                    const std::vector<device::DeviceInfo>& gpus,
                                    const node::GpuModeConfig& config) {
  std::vector<GpuOffer> out(gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    const node::GpuModeEntry* entry =
        node::EntryFor(config, gpus[i].index, node::MigModelKey(gpus[i]));
    const node::GpuMode mode = entry != nullptr ? entry->mode : node::GpuMode::kShared;
    if (mode == node::GpuMode::kMigDynamic) {
      out[i] = DynamicOffer(backend, gpus[i]);
    } else if (mode == node::GpuMode::kMig) {
      out[i].mode = node::GpuMode::kMig;
      out[i].software = false;
      auto instances = backend->MigInstances(gpus[i].index);
      if (instances) out[i].mig = StaticMigDevices(*instances);
    } else {
      out[i].mode = mode;
    }
  }
  return out;
}

std::vector<GpuOffer> SetUpGpuOffers(device::DeviceBackend* backend,
                                     const std::vector<device::DeviceInfo>& gpus,
                                     const node::GpuModeConfig& config, const std::set<int>& busy) {
  node::NodeState state(gpus, 1, node::HealthRules{});
  std::vector<GpuOffer> out(gpus.size());
  if (config.entries.empty()) return out;
  const std::vector<node::GpuModeOutcome> outcomes =
      node::SetUpGpuModes(backend, &state, config, nullptr, busy);
  for (size_t i = 0; i < gpus.size() && i < outcomes.size(); ++i) {
    const node::GpuModeOutcome& o = outcomes[i];
    const int index = gpus[i].index;
    GpuOffer& offer = out[i];
    if (o.wanted == node::GpuMode::kMigDynamic) {
      // With MIG off (software claims kept it so) the driver lists no profiles: vgpu's table
      // of the model stands in until MIG is on again.
      offer = DynamicOffer(backend, gpus[i]);
    } else if (o.mode == node::GpuMode::kMig) {
      offer.mode = node::GpuMode::kMig;
      offer.software = false;
      offer.mig = StaticMigDevices(state.MigInstances(index));
    } else {
      offer.mode = o.mode;
    }
  }
  return out;
}

}  // namespace vgpu::dra
