#include "node/plugin/device_list.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace vgpu::node {
namespace {

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

std::string JoinPath(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + path;
}

}  // namespace

Status ParseDeviceListStrategy(const std::string& text, DeviceListOptions* options) {
  DeviceListOptions o = *options;
  o.envvar = o.cdi_annotations = o.cdi_cri = false;
  std::set<std::string> seen;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string item = text.substr(start, comma - start);
    if (!seen.insert(item).second) {
      return Status::InvalidArgument("\"" + item + "\" is given twice");
    }
    if (item == "envvar") {
      o.envvar = true;
    } else if (item == "cdi-annotations") {
      o.cdi_annotations = true;
    } else if (item == "cdi-cri") {
      o.cdi_cri = true;
    } else {
      return Status::InvalidArgument(
          "\"" + item + "\" is not one of envvar, cdi-annotations, cdi-cri (comma-separated)");
    }
    start = comma + 1;
  }
  *options = o;
  return Status::Ok();
}

Status CheckCdiKind(const std::string& kind) {
  const size_t slash = kind.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == kind.size() ||
      kind.find('/', slash + 1) != std::string::npos) {
    return Status::InvalidArgument("\"" + kind +
                                   "\" is not <vendor>/<class> (e.g. nvidia.com/gpu)");
  }
  for (size_t i = 0; i < kind.size(); ++i) {
    const char c = kind[i];
    const bool ok = IsAlnum(c) || c == '-' || c == '.' || i == slash || (i > slash && c == '_');
    if (!ok) {
      return Status::InvalidArgument("\"" + kind + "\" has the character '" + std::string(1, c) +
                                     "' at position " + std::to_string(i + 1));
    }
  }
  if (!IsAlnum(kind.front()) || !IsAlnum(kind[slash - 1]) || !IsAlnum(kind[slash + 1]) ||
      !IsAlnum(kind.back())) {
    return Status::InvalidArgument("\"" + kind +
                                   "\": the vendor and the class must begin and end with a "
                                   "letter or digit");
  }
  return Status::Ok();
}

std::string CdiAnnotationKey(const std::string& pod_uid) {
  // The name part of an annotation key has at most 63 characters.
  return "cdi.k8s.io/vgpu_" + pod_uid.substr(0, 58);
}

Result<std::pair<int, int>> MigCapMinors(const std::string& mig_minors, int gpu_minor, int gi_id,
                                         int ci_id) {
  const std::string gi = "gpu" + std::to_string(gpu_minor) + "/gi" + std::to_string(gi_id);
  const std::string gi_key = gi + "/access";
  const std::string ci_key = gi + "/ci" + std::to_string(ci_id) + "/access";
  int gi_minor = -1, ci_minor = -1;
  std::istringstream in(mig_minors);
  std::string key;
  int minor = 0;
  while (in >> key >> minor) {
    if (key == gi_key) gi_minor = minor;
    if (key == ci_key) ci_minor = minor;
  }
  if (gi_minor < 0 || ci_minor < 0) {
    return Status::NotFound("mig-minors has no \"" + (gi_minor < 0 ? gi_key : ci_key) + "\"");
  }
  return std::pair<int, int>(gi_minor, ci_minor);
}

Status ApplyDeviceList(const SliceRecord& slice, const std::vector<device::DeviceInfo>& gpus,
                       const DeviceListOptions& options, ContainerAllocation* allocation) {
  if (!options.envvar) allocation->envs["NVIDIA_VISIBLE_DEVICES"] = "void";
  if (options.AnyCdi()) {
    std::vector<std::string> names;
    std::string joined;
    for (const SliceDevice& d : slice.spec.devices) {
      names.push_back(options.cdi_kind + "=" + d.uuid);
      joined += (joined.empty() ? "" : ",") + names.back();
    }
    if (options.cdi_annotations) {
      allocation->annotations[CdiAnnotationKey(slice.spec.pod_uid)] = joined;
    }
    if (options.cdi_cri) allocation->cdi_devices = names;
  }
  if (!options.pass_device_specs) return Status::Ok();
  std::vector<std::string> paths;
  for (const SliceDevice& d : slice.spec.devices) {
    const bool mig = d.uuid.rfind("MIG-", 0) == 0;
    const device::DeviceInfo* info = nullptr;
    for (const device::DeviceInfo& g : gpus) {
      if (mig ? g.index == d.node_index : g.uuid == d.uuid) info = &g;
    }
    if (info == nullptr || info->minor_number < 0) {
      return Status::FailedPrecondition("GPU " + d.uuid +
                                        ": the driver did not tell its minor number, so its "
                                        "device node is unknown (--pass-device-specs)");
    }
    paths.push_back("/dev/nvidia" + std::to_string(info->minor_number));
    if (mig) {
      const std::string file = JoinPath(options.probe_root, "/proc/driver/nvidia-caps/mig-minors");
      std::ifstream in(file);
      std::stringstream text;
      text << in.rdbuf();
      auto minors = MigCapMinors(text.str(), info->minor_number, d.mig_gi, d.mig_ci);
      if (!in || !minors) {
        return Status::FailedPrecondition(
            "MIG device " + d.uuid + ": its /dev/nvidia-caps nodes are unknown (" +
            (!in ? file + " cannot be read" : minors.error().message()) + ")");
      }
      paths.push_back("/dev/nvidia-caps/nvidia-cap" + std::to_string(minors->first));
      paths.push_back("/dev/nvidia-caps/nvidia-cap" + std::to_string(minors->second));
    }
  }
  paths.push_back("/dev/nvidiactl");
  for (const char* optional : {"/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset"}) {
    std::error_code ec;
    if (std::filesystem::exists(JoinPath(options.probe_root, optional), ec)) {
      paths.push_back(optional);
    }
  }
  for (const std::string& p : paths) {
    allocation->devices.push_back({p, JoinPath(options.dev_root, p), "rw"});
  }
  return Status::Ok();
}

}  // namespace vgpu::node
