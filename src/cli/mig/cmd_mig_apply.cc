// vgpu mig apply / vgpu mig status: a node's GPU modes and static MIG layouts, on the local GPUs
// (NVML) or the simulated GPU (--sim).
//
//   vgpu mig apply --config FILE [--sim [--sim-config FILE]] [--nvml-library PATH]
//   vgpu mig status [--sim [--sim-config FILE]] [--nvml-library PATH] [--json]
//
// apply reads the GPU mode file (node/modes/gpu_modes.h) and, per GPU: mode `mig` makes its
// instances exactly the file's profile counts; `mig-dynamic` enables MIG and leaves the instances
// to the node daemon; the other modes disable MIG when it is on and no instance is left. Changes
// are made only on an idle GPU (no process on it); a busy GPU is reported and left as it is, never
// forced. Exit 0 when every GPU is as the file says, 1 when some GPU was left (busy, pending a
// reset, a driver error), 2 for a bad file.
// status lists each GPU's MIG mode and instances (profile, placement, UUID, memory, SMs).
#include "cli/mig/cmd_mig_apply.h"

#include <cstdio>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "cli/cli_util.h"
#include "cli/mig/mig_commands.h"
#include "device/nvml_backend.h"
#include "mig/profiles.h"
#include "node/modes/gpu_mode_setup.h"
#include "node/modes/gpu_modes.h"
#include "node/modes/mig_static.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

struct BackendFlags {
  bool sim = false;
  std::string sim_config;
  std::string nvml_library = "libnvidia-ml.so.1";
};

void AddBackendFlags(CLI::App& app, BackendFlags* f) {
  app.add_flag("--sim", f->sim, "Use the simulated GPU (build/lib/simgpu) instead of the driver");
  app.add_option("--sim-config", f->sim_config, "Simulated GPU config file; needs --sim");
  app.add_option("--nvml-library", f->nvml_library, "NVML library to load")->capture_default_str();
}

Result<std::unique_ptr<device::NvmlBackend>> Open(const BackendFlags& f) {
  device::NvmlBackendOptions options;
  options.library_path = f.nvml_library;
  options.cuda_library_path = "";
  if (Status s = UseSimConfig(f.sim, f.sim_config); !s.ok()) return s;
  if (f.sim) {
    Result<std::string> dir = SimulatedGpuDir("--sim");
    if (!dir) return dir.error();
    options.library_path = (fs::path(*dir) / "libnvidia-ml.so.1").string();
  }
  auto backend = device::NvmlBackend::Open(options);
  if (!backend) {
    const std::string hint = f.nvml_library == "libnvidia-ml.so.1" ? NoDriverHint(f.sim) : "";
    return Status(backend.error().code(), backend.error().message() + hint);
  }
  return std::move(*backend);
}

std::string InstanceLine(const device::MigInstance& m) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), "  %-11s @%d  GI %-2d  %s  %llu MiB  %d SMs", m.profile.c_str(),
                m.start, m.gi_id, m.uuid.empty() ? "(no compute instance)" : m.uuid.c_str(),
                static_cast<unsigned long long>(m.memory_bytes >> 20), m.sm_count);
  return buf;
}

// Mode changes other than static layouts: enable for mig-dynamic, disable for the rest.
Status ApplyMode(device::DeviceBackend* b, int index, bool want_mig, bool idle,
                 std::vector<std::string>* steps) {
  Result<device::MigModeState> mode = b->GetMigMode(index);
  if (!mode) return want_mig ? mode.error() : Status::Ok();  // no MIG: nothing to disable
  if (mode->current == want_mig) return Status::Ok();
  if (!idle) return Status::FailedPrecondition("in use: the MIG mode changes only when idle");
  if (!want_mig) {
    Result<std::vector<device::MigInstance>> have = b->MigInstances(index);
    if (have && !have->empty()) {
      return Status::FailedPrecondition(std::to_string(have->size()) +
                                        " MIG instance(s) left; not disabling MIG");
    }
  }
  Status s = b->SetMigMode(index, want_mig);
  if (!s.ok()) return s;
  steps->push_back(want_mig ? "enabled MIG" : "disabled MIG");
  return Status::Ok();
}

}  // namespace

int RunMigApply(int argc, char** argv) {
  BackendFlags f;
  std::string config_path;
  CLI::App app(
      "Applies a node's GPU mode file: static MIG layouts (mode mig), MIG on for mig-dynamic, "
      "MIG off for the other modes. Only idle GPUs are changed; a busy one is reported.",
      "vgpu mig apply");
  app.add_option("--config", config_path, "GPU mode file (YAML, docs/mig.md)")->required();
  AddBackendFlags(app, &f);
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  Result<node::GpuModeConfig> config = node::LoadGpuModeConfig(config_path);
  if (!config) return ReportStatus("mig apply", config.error().WithContext("--config"));
  auto backend = Open(f);
  if (!backend) return ReportStatus("mig apply", backend.error());
  auto gpus = (*backend)->Discover();
  if (!gpus) return ReportStatus("mig apply", gpus.error());
  std::vector<int> present;
  for (const device::DeviceInfo& d : *gpus) present.push_back(d.index);
  Status devices = node::CheckGpuModeDevices(*config, present);
  if (!devices.ok()) return ReportStatus("mig apply", devices.WithContext("--config"));
  int left = 0;
  for (const device::DeviceInfo& d : *gpus) {
    const node::GpuModeEntry* e = node::EntryFor(*config, d.index, node::MigModelKey(d));
    node::GpuMode mode = e == nullptr ? node::GpuMode::kShared : e->mode;
    auto sample = (*backend)->Sample(d.index);
    bool idle = sample && sample->processes.empty();
    std::vector<std::string> steps;
    Status s = Status::Ok();
    std::vector<device::MigInstance> instances;
    if (mode == node::GpuMode::kMig) {
      auto report = node::ApplyStaticLayout(backend->get(), d.index, e->mig_devices, idle);
      if (report) {
        steps = report->steps;
        instances = report->instances;
      } else {
        s = report.error();
      }
    } else {
      s = ApplyMode(backend->get(), d.index, mode == node::GpuMode::kMigDynamic, idle, &steps);
    }
    std::printf("GPU %d %s (%s): mode %s: %s\n", d.index, d.uuid.c_str(), d.name.c_str(),
                std::string(node::GpuModeName(mode)).c_str(),
                !s.ok()         ? ("left as it is: " + s.message()).c_str()
                : steps.empty() ? "already so"
                                : "applied");
    for (const std::string& step : steps) std::printf("  %s\n", step.c_str());
    for (const device::MigInstance& m : instances) std::printf("%s\n", InstanceLine(m).c_str());
    if (!s.ok()) {
      if (s.code() == StatusCode::kInvalidArgument) return ReportStatus("mig apply", s);
      ++left;
    }
  }
  return left > 0 ? kExitFailure : kExitOk;
}

int RunMigStatus(int argc, char** argv) {
  BackendFlags f;
  bool json = false;
  CLI::App app("Lists each GPU's MIG mode and MIG instances.", "vgpu mig status");
  AddBackendFlags(app, &f);
  app.add_flag("--json", json, "JSON output");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  auto backend = Open(f);
  if (!backend) return ReportStatus("mig status", backend.error());
  auto gpus = (*backend)->Discover();
  if (!gpus) return ReportStatus("mig status", gpus.error());
  nlohmann::json out = nlohmann::json::array();
  for (const device::DeviceInfo& d : *gpus) {
    auto mode = (*backend)->GetMigMode(d.index);
    nlohmann::json g = {{"index", d.index}, {"uuid", d.uuid}, {"name", d.name}};
    std::string mode_text = !mode ? "not supported"
                            : mode->current == mode->pending
                                ? (mode->current ? "enabled" : "disabled")
                                : (mode->current ? "enabled, disabled after a reset"
                                                 : "disabled, enabled after a reset");
    g["mig"] = mode_text;
    g["instances"] = nlohmann::json::array();
    std::vector<device::MigInstance> instances;
    if (mode && mode->current) {
      auto have = (*backend)->MigInstances(d.index);
      if (have) instances = *have;
    }
    for (const device::MigInstance& m : instances) {
      g["instances"].push_back({{"profile", m.profile},
                                {"profile_id", m.profile_id},
                                {"start", m.start},
                                {"size", m.size},
                                {"gi_id", m.gi_id},
                                {"ci_id", m.ci_id},
                                {"uuid", m.uuid},
                                {"memory_mib", m.memory_bytes >> 20},
                                {"sm_count", m.sm_count}});
    }
    if (!json) {
      std::printf("GPU %d %s (%s): MIG %s\n", d.index, d.uuid.c_str(), d.name.c_str(),
                  mode_text.c_str());
      for (const device::MigInstance& m : instances) std::printf("%s\n", InstanceLine(m).c_str());
    }
    out.push_back(g);
  }
  if (json) std::printf("%s\n", out.dump(2).c_str());
  return kExitOk;
}

[[maybe_unused]] static const bool kMigApply = RegisterMigSubcommand(
    {"apply", "apply a node's GPU mode file: static MIG layouts, MIG on or off", RunMigApply});
[[maybe_unused]] static const bool kMigStatus =
    RegisterMigSubcommand({"status", "each GPU's MIG mode and MIG instances", RunMigStatus});

}  // namespace vgpu::cli
