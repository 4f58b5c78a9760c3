#include "node/modes/gpu_modes.h"

#include <yaml-cpp/yaml.h>

#include "mig/profiles.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace vgpu::node {
namespace {

std::string Where(const std::string& file, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Status BadEntry(const std::string& file, const YAML::Node& node, const std::string& why) {
  return Status::InvalidArgument(Where(file, node) + ": " + why);
}

bool IsProfileName(const std::string& s) {
  // "1g.18gb", "1g.18gb+me", "7g.141gb"
  size_t g = s.find("g.");
  return g != std::string::npos && g > 0 && s.size() > g + 4 &&
         std::all_of(s.begin(), s.begin() + static_cast<long>(g), ::isdigit);
}

Result<GpuModeEntry> ParseEntry(const YAML::Node& e, const std::string& file, int number) {
  std::string where = "gpus[" + std::to_string(number) + "]";
  if (!e.IsMap()) return BadEntry(file, e, where + ": must be a map");
  GpuModeEntry entry;
  for (const auto& kv : e) {
    std::string key = kv.first.as<std::string>();
    if (key != "devices" && key != "model" && key != "mode" && key != "mig-devices") {
      return BadEntry(
          file, kv.first,
          where + ": unknown key \"" + key + "\" (known: devices model mode mig-devices)");
    }
  }
  const YAML::Node devices = e["devices"];
  if (!devices)
    return BadEntry(file, e, where + ": devices is missing (\"all\" or a list of indices)");
  if (devices.IsScalar() && devices.as<std::string>() == "all") {
    // all
  } else if (devices.IsSequence()) {
    for (const YAML::Node& d : devices) {
      int index = -1;
      if (!d.IsScalar() || !YAML::convert<int>::decode(d, index) || index < 0 || index > 63) {
        return BadEntry(file, d, where + ".devices: not a GPU index 0..63");
      }
      entry.devices.push_back(index);
      entry.devices_where.push_back(Where(file, d));
    }
    if (entry.devices.empty()) return BadEntry(file, devices, where + ".devices: empty list");
  } else {
    return BadEntry(file, devices, where + ".devices: must be \"all\" or a list of indices");
  }
  if (const YAML::Node model = e["model"]) {
    if (!model.IsScalar()) return BadEntry(file, model, where + ".model: must be a model key");
    entry.model = model.as<std::string>();
    const mig::ModelTable* table = mig::ModelByKey(entry.model);
    if (table == nullptr) {
      Result<const mig::ModelTable*> named = mig::LookupModel(entry.model);
      return BadEntry(
          file, model,
          where + ".model: \"" + entry.model + "\" is not a MIG table key (" +
              (named ? "use its key " + std::string((*named)->key) : "known: " + mig::ModelKeys()) +
              ")");
    }
    entry.model = std::string(table->key);
  }
  const YAML::Node mode = e["mode"];
  if (!mode || !mode.IsScalar()) {
    return BadEntry(file, mode ? mode : e,
                    where + ".mode: missing (shared, whole, mig, mig-dynamic or mps)");
  }
  std::optional<GpuMode> parsed = k8s::ParseGpuMode(mode.as<std::string>());
  if (!parsed) {
    return BadEntry(file, mode,
                    where + ".mode: \"" + mode.as<std::string>() +
                        "\" is not a mode (shared, whole, mig, mig-dynamic, mps)");
  }
  entry.mode = *parsed;
  const YAML::Node mig = e["mig-devices"];
  if (mig && entry.mode != GpuMode::kMig) {
    return BadEntry(file, mig, where + ".mig-devices: only for mode mig");
  }
  if (entry.mode == GpuMode::kMig) {
    if (!mig || !mig.IsMap() || mig.size() == 0) {
      return BadEntry(file, mig ? mig : e,
                      where + ".mig-devices: mode mig needs profile counts, e.g. {\"3g.71gb\": 2}");
    }
    for (const auto& kv : mig) {
      std::string profile = kv.first.as<std::string>();
      int count = 0;
      if (!IsProfileName(profile)) {
        return BadEntry(
            file, kv.first,
            where + ".mig-devices: \"" + profile + "\" is not a MIG profile name (like 3g.71gb)");
      }
      if (!kv.second.IsScalar() || !YAML::convert<int>::decode(kv.second, count) || count < 0 ||
          count > 7) {
        return BadEntry(file, kv.second, where + ".mig-devices." + profile + ": not a count 0..7");
      }
      if (count > 0) entry.mig_devices.emplace_back(profile, count);
    }
  }
  return entry;
}

}  // namespace

Result<GpuModeConfig> ParseGpuModeConfig(std::string_view yaml, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) return Status::InvalidArgument(file + ": must be a YAML map (version, gpus)");
  const YAML::Node version = root["version"];
  if (!version || !version.IsScalar() || version.as<std::string>() != "v1") {
    return BadEntry(file, version ? version : root, "version: must be v1");
  }
  for (const auto& kv : root) {
    std::string key = kv.first.as<std::string>();
    if (key != "version" && key != "gpus") {
      return BadEntry(file, kv.first, "unknown key \"" + key + "\" (known: version gpus)");
    }
  }
  const YAML::Node gpus = root["gpus"];
  if (!gpus || !gpus.IsSequence())
    return BadEntry(file, gpus ? gpus : root, "gpus: must be a list");
  GpuModeConfig config;
  int number = 0;
  try {
    for (const YAML::Node& e : gpus) {
      Result<GpuModeEntry> entry = ParseEntry(e, file, number++);
      if (!entry) return entry.error();
      config.entries.push_back(std::move(*entry));
    }
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(file + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
  return config;
}

Result<GpuModeConfig> LoadGpuModeConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + ": cannot open the GPU mode file");
  std::stringstream text;
  text << in.rdbuf();
  return ParseGpuModeConfig(text.str(), path);
}

Status CheckGpuModeDevices(const GpuModeConfig& config, const std::vector<int>& present) {
  for (const GpuModeEntry& e : config.entries) {
    for (size_t k = 0; k < e.devices.size(); ++k) {
      if (std::find(present.begin(), present.end(), e.devices[k]) != present.end()) continue;
      std::string have;
      for (int i : present) have += (have.empty() ? "" : ", ") + std::to_string(i);
      const std::string where = k < e.devices_where.size() ? e.devices_where[k] + ": " : "";
      return Status::InvalidArgument(where + "devices: GPU " + std::to_string(e.devices[k]) +
                                     " does not exist on this node (its GPUs: " +
                                     (have.empty() ? "none" : have) + "); nothing was changed");
    }
  }
  return Status::Ok();
}

const GpuModeEntry* EntryFor(const GpuModeConfig& config, int index, std::string_view model_key) {
  for (const GpuModeEntry& e : config.entries) {
    if (!e.devices.empty() &&
        std::find(e.devices.begin(), e.devices.end(), index) == e.devices.end()) {
      continue;
    }
    if (!e.model.empty() && e.model != model_key) continue;
    return &e;
  }
  return nullptr;
}

}  // namespace vgpu::node
