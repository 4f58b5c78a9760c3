// vgpu topo: the node's GPU topology in the `nvidia-smi topo -m` format (or JSON), read from NVML,
// from the simulated GPU (--sim; its topology comes from VGPU_SIMGPU_TOPOLOGY or the config's
// topology= line), from a saved `nvidia-smi topo -m` output (--from FILE) or a preset (--preset).
//
//   vgpu topo [--sim | --from FILE | --preset NAME] [--json]
//   vgpu topo --list-presets
//
// Exit codes: 0, 2 for bad input (a malformed file: file:line:column and what is wrong; an
// unknown preset), 1 when NVML cannot tell the topology.
#include <cstdio>
#include <fstream>
#include <sstream>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "device/nvml_backend.h"
#include "topo/presets.h"
#include "topo/topo_json.h"
#include "topo/topo_matrix.h"

namespace vgpu::cli {
namespace {

Result<topo::Topology> FromFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open file");
  std::stringstream text;
  text << in.rdbuf();
  return topo::ParseTopoMatrix(text.str(), path);
}

Result<topo::Topology> FromNvml(const std::string& library) {
  device::NvmlBackendOptions options;
  options.library_path = library;
  options.cuda_library_path = "";
  auto backend = device::NvmlBackend::Open(options);
  if (!backend) return backend.error();
  return (*backend)->ReadTopology();
}

}  // namespace

int RunTopo(int argc, char** argv) {
  bool sim = false, json = false, list = false;
  std::string from, preset;
  CLI::App app(
      "Prints how this node's GPUs are joined (NVLink count, NVSwitch, PCIe level, NUMA node) in "
      "the `nvidia-smi topo -m` format, or as JSON with the bandwidth model's figure per pair "
      "(docs/topology.md).",
      "vgpu topo");
  auto* sim_flag = app.add_flag("--sim", sim,
                                "read the simulated GPU's NVML (its topology: "
                                "VGPU_SIMGPU_TOPOLOGY=PRESET|FILE or the config's topology= line)");
  auto* from_flag =
      app.add_option("--from", from, "read a saved `nvidia-smi topo -m` output instead of NVML");
  auto* preset_flag = app.add_option("--preset", preset, "print a preset (see --list-presets)");
  app.add_flag("--list-presets", list, "list the presets with one line each");
  app.add_flag("--json", json, "JSON output (docs/topology.md)");
  sim_flag->excludes(from_flag)->excludes(preset_flag);
  from_flag->excludes(preset_flag);
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (list) {
    for (const std::string& name : topo::PresetNames()) {
      std::printf("%-16s %s\n", name.c_str(), topo::Preset(name)->description.c_str());
    }
    return kExitOk;
  }
  Result<topo::Topology> t = Status::Internal("no source");
  if (!from.empty()) {
    t = FromFile(from);
  } else if (preset_flag->count() > 0) {
    std::optional<topo::Topology> p = topo::Preset(preset);
    if (!p) {
      std::string names;
      for (const std::string& n : topo::PresetNames()) names += " " + n;
      return ReportStatus("topo", Status::InvalidArgument("--preset \"" + preset +
                                                          "\": unknown (known:" + names + ")"));
    }
    t = *p;
  } else if (sim) {
    Result<std::string> dir = SimulatedGpuDir("--sim");
    if (!dir) return ReportStatus("topo", dir.error());
    t = FromNvml(*dir + "/libnvidia-ml.so.1");
    if (!t && t.error().code() == StatusCode::kUnavailable) {
      t = Status::Unavailable(t.error().message() +
                              " (the simulated GPU has a topology only when "
                              "VGPU_SIMGPU_TOPOLOGY=PRESET|FILE or its config's topology= line "
                              "says so)");
    }
  } else {
    t = FromNvml("libnvidia-ml.so.1");
  }
  if (!t) return ReportStatus("topo", t.error());
  std::string out = json ? topo::TopologyJson(*t) : topo::FormatTopoMatrix(*t);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return kExitOk;
}

}  // namespace vgpu::cli
