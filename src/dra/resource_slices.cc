#include "dra/resource_slices.h"

#include <cctype>

#include "dra/driver.h"

namespace vgpu::dra {

using nlohmann::json;

namespace {

struct Model {
  const char* needle;
  const char* architecture;
  const char* cc;
  bool mig;
};

// Longest needles first where one contains another.
constexpr Model kModels[] = {
    {"GB200", "Blackwell", "10.0", true},  {"B200", "Blackwell", "10.0", true},
    {"H200", "Hopper", "9.0", true},       {"H100", "Hopper", "9.0", true},
    {"H800", "Hopper", "9.0", true},       {"H20", "Hopper", "9.0", true},
    {"GH200", "Hopper", "9.0", true},      {"A100", "Ampere", "8.0", true},
    {"A800", "Ampere", "8.0", true},       {"A30", "Ampere", "8.0", true},
    {"A40", "Ampere", "8.6", false},       {"A10", "Ampere", "8.6", false},
    {"L40", "Ada Lovelace", "8.9", false}, {"L4", "Ada Lovelace", "8.9", false},
    {"T4", "Turing", "7.5", false},        {"V100", "Volta", "7.0", false},
};

std::string Quantity(uint64_t v) { return std::to_string(v); }

json CounterSet(const SliceGpu& g) {
  json counters = {{"memory", {{"value", Quantity(g.info.memory_total_bytes)}}},
                   {"multiprocessors", {{"value", Quantity(g.info.sm_count)}}}};
  if (g.mig_capable || !g.mig_devices.empty()) {
    for (int s = 0; s < kMigMemorySlices; ++s) {
      counters["memory-slice-" + std::to_string(s)] = {{"value", "1"}};
    }
  }
  return {{"name", GpuDeviceName(g.info.index)}, {"counters", counters}};
}

json WholeGpu(const SliceGpu& g) {
  const std::string name = GpuDeviceName(g.info.index);
  json attrs = {{"type", {{"string", "gpu"}}},
                {"uuid", {{"string", g.info.uuid}}},
                {"productName", {{"string", g.info.name.substr(0, 64)}}},
                {"index", {{"int", g.info.index}}}};
  if (!g.architecture.empty()) attrs["architecture"] = {{"string", g.architecture}};
  if (const std::string v = SemVer(g.compute_capability); !v.empty()) {
    attrs["cudaComputeCapability"] = {{"version", v}};
  }
  if (const std::string v = SemVer(g.driver_version); !v.empty()) {
    attrs["driverVersion"] = {{"version", v}};
  }
  if (g.info.numa_node >= 0) attrs["numaNode"] = {{"int", g.info.numa_node}};
  if (!g.pcie_root.empty()) attrs["resource.kubernetes.io/pcieRoot"] = {{"string", g.pcie_root}};
  json capacity = {
      {"memory",
       {{"value", Quantity(g.info.memory_total_bytes)},
        {"requestPolicy",
         {{"default", Quantity(g.info.memory_total_bytes)},
          {"validRange", {{"min", "1Mi"}, {"step", "1Mi"}}}}}}},
      {"cores",
       {{"value", "100"},
        {"requestPolicy",
         {{"default", "100"}, {"validRange", {{"min", "1"}, {"max", "100"}, {"step", "1"}}}}}}}};
  json consumes = CounterSet(g);
  return {{"name", name},
          {"attributes", attrs},
          {"capacity", capacity},
          {"allowMultipleAllocations", true},
          {"consumesCounters",
           json::array({{{"counterSet", name}, {"counters", consumes["counters"]}}})}};
}

json MigDevice(const SliceGpu& g, const MigDeviceSpec& m) {
  json attrs = WholeGpu(g)["attributes"];
  attrs["type"] = {{"string", "mig"}};
  attrs["profile"] = {{"string", m.profile}};
  attrs["parentUUID"] = {{"string", g.info.uuid}};
  attrs["placementStart"] = {{"int", m.start}};
  attrs["placementSize"] = {{"int", m.memory_slices}};
  if (m.uuid.empty()) {
    attrs.erase("uuid");
  } else {
    attrs["uuid"] = {{"string", m.uuid}};
  }
  json counters = {{"memory", {{"value", Quantity(m.memory_bytes)}}},
                   {"multiprocessors", {{"value", Quantity(m.sm_count)}}}};
  for (int s = m.start; s < m.start + m.memory_slices && s < kMigMemorySlices; ++s) {
    counters["memory-slice-" + std::to_string(s)] = {{"value", "1"}};
  }
  return {{"name", MigDeviceName(g.info.index, m)},
          {"attributes", attrs},
          {"capacity",
           {{"memory", {{"value", Quantity(m.memory_bytes)}}},
            {"multiprocessors", {{"value", Quantity(m.sm_count)}}}}},
          {"consumesCounters",
           json::array({{{"counterSet", GpuDeviceName(g.info.index)}, {"counters", counters}}})}};
}

json Slice(const std::string& name, const std::string& node, const std::string& driver,
           int64_t generation) {
  return {{"apiVersion", "resource.k8s.io/v1"},
          {"kind", "ResourceSlice"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"driver", driver},
            {"nodeName", node},
            {"pool", {{"name", node}, {"generation", generation}, {"resourceSliceCount", 0}}}}}};
}

}  // namespace

std::string MigDeviceName(int gpu_index, const MigDeviceSpec& mig) {
  std::string p = mig.profile;
  for (char& c : p) {
    if (c == '.' || c == '+') c = '-';
  }
  return GpuDeviceName(gpu_index) + "-mig-" + p + "-" + std::to_string(mig.start);
}

void FillFromProductName(SliceGpu* gpu) {
  for (const Model& m : kModels) {
    if (gpu->info.name.find(m.needle) != std::string::npos) {
      if (gpu->architecture.empty()) gpu->architecture = m.architecture;
      if (gpu->compute_capability.empty()) gpu->compute_capability = m.cc;
      gpu->mig_capable = m.mig;
      return;
    }
  }
}

std::string DriverVersionOf(const std::string& description) {
  const std::string key = "driver ";
  size_t p = description.find(key);
  if (p == std::string::npos) return "";
  p += key.size();
  size_t e = p;
  while (e < description.size() &&
         (std::isdigit(static_cast<unsigned char>(description[e])) || description[e] == '.')) {
    ++e;
  }
  return description.substr(p, e - p);
}

std::string SemVer(const std::string& dotted) {
  if (dotted.empty()) return "";
  int parts = 1;
  bool digit = false;
  for (char c : dotted) {
    if (c == '.') {
      if (!digit) return "";
      ++parts;
      digit = false;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      digit = true;
    } else {
      return "";
    }
  }
  if (!digit || parts > 3) return "";
  std::string out = dotted;
  for (; parts < 3; ++parts) out += ".0";
  // Semantic versions have no leading zeros in a part: "550.54.03" -> "550.54.3".
  std::string clean;
  size_t start = 0;
  while (start <= out.size()) {
    size_t end = out.find('.', start);
    if (end == std::string::npos) end = out.size();
    std::string part = out.substr(start, end - start);
    while (part.size() > 1 && part[0] == '0') part.erase(0, 1);
    if (!clean.empty()) clean += ".";
    clean += part;
    start = end + 1;
  }
  return clean;
}

std::string SliceLayoutName(SliceLayout layout) {
  return layout == SliceLayout::kCountersWithDevices ? "1.34" : "1.35";
}

Result<SliceLayout> SliceLayoutForRelease(int major, int minor) {
  if (major > 1 || (major == 1 && minor >= 35)) return SliceLayout::kCountersApart;
  if (major == 1 && minor == 34) return SliceLayout::kCountersWithDevices;
  return Status::FailedPrecondition("Kubernetes " + std::to_string(major) + "." +
                                    std::to_string(minor) +
                                    " has no resource.k8s.io/v1 ResourceSlices (1.34 or later)");
}

Result<SliceLayout> SliceLayoutForVersion(const json& version) {
  // "35", "35+": the leading digits.
  const auto number = [&version](const char* key) -> int {
    if (!version.is_object() || !version.contains(key) || !version[key].is_string()) return -1;
    const std::string text = version[key];
    size_t n = 0;
    while (n < text.size() && n < 6 && std::isdigit(static_cast<unsigned char>(text[n]))) ++n;
    return n == 0 ? -1 : std::stoi(text.substr(0, n));
  };
  const int major = number("major");
  const int minor = number("minor");
  if (major < 0 || minor < 0) {
    return Status::InvalidArgument("the API server's /version has no major and minor numbers: " +
                                   version.dump());
  }
  return SliceLayoutForRelease(major, minor);
}

namespace {

struct GpuPart {
  json counter_set;
  std::vector<json> devices;
  size_t counters = 0;  // in its counter set
  size_t consumed = 0;  // counters its devices consume
};

std::vector<GpuPart> Parts(const std::vector<SliceGpu>& gpus) {
  std::vector<GpuPart> out;
  for (const SliceGpu& g : gpus) {
    GpuPart p;
    p.counter_set = CounterSet(g);
    p.counters = p.counter_set["counters"].size();
    if (g.healthy) {
      if (g.software) p.devices.push_back(WholeGpu(g));
      for (const MigDeviceSpec& m : g.mig_devices) p.devices.push_back(MigDevice(g, m));
    }
    for (const json& d : p.devices) {
      for (const json& c : d["consumesCounters"]) p.consumed += c["counters"].size();
    }
    out.push_back(std::move(p));
  }
  return out;
}

// 1.35: counter sets and devices in slices of their own.
std::vector<json> CountersApart(const std::string& node, const std::string& driver,
                                const std::vector<GpuPart>& parts, int64_t generation) {
  std::vector<json> out;
  const std::string prefix = node + "-" + driver;
  for (size_t i = 0, k = 0; i < parts.size(); i += kMaxCounterSetsPerSlice, ++k) {
    json s = Slice(prefix + "-counters-" + std::to_string(k), node, driver, generation);
    json sets = json::array();
    for (size_t j = i; j < parts.size() && j < i + kMaxCounterSetsPerSlice; ++j) {
      sets.push_back(parts[j].counter_set);
    }
    s["spec"]["sharedCounters"] = sets;
    out.push_back(s);
  }
  std::vector<json> devices;
  for (const GpuPart& p : parts) devices.insert(devices.end(), p.devices.begin(), p.devices.end());
  for (size_t i = 0, k = 0; i < devices.size() || k == 0;
       i += kMaxDevicesPerSliceWithCounters, ++k) {
    json s = Slice(prefix + "-devices-" + std::to_string(k), node, driver, generation);
    json list = json::array();
    for (size_t j = i; j < devices.size() && j < i + kMaxDevicesPerSliceWithCounters; ++j) {
      list.push_back(devices[j]);
    }
    s["spec"]["devices"] = list;
    out.push_back(s);
    if (devices.empty()) break;
  }
  return out;
}

// 1.34: each slice holds whole GPUs, their counter sets with all their devices, as many GPUs
// in order as the slice's limits take. One GPU always fits (at most 10 counters, 26 devices).
std::vector<json> CountersWithDevices(const std::string& node, const std::string& driver,
                                      const std::vector<GpuPart>& parts, int64_t generation) {
  std::vector<json> out;
  const std::string prefix = node + "-" + driver + "-";
  json sets = json::array();
  json devices = json::array();
  size_t counters = 0, consumed = 0;
  const auto flush = [&] {
    json s = Slice(prefix + std::to_string(out.size()), node, driver, generation);
    if (!sets.empty()) s["spec"]["sharedCounters"] = sets;
    if (!devices.empty() || sets.empty()) s["spec"]["devices"] = devices;
    out.push_back(s);
    sets = json::array();
    devices = json::array();
    counters = consumed = 0;
  };
  for (const GpuPart& p : parts) {
    if (!sets.empty() && (counters + p.counters > kMaxSharedCountersPerSlice134 ||
                          devices.size() + p.devices.size() > kMaxDevicesPerSlice134 ||
                          consumed + p.consumed > kMaxConsumedCountersPerSlice134)) {
      flush();
    }
    sets.push_back(p.counter_set);
    for (const json& d : p.devices) devices.push_back(d);
    counters += p.counters;
    consumed += p.consumed;
  }
  if (!sets.empty() || out.empty()) flush();
  return out;
}

}  // namespace

std::vector<json> BuildResourceSlices(const std::string& node, const std::string& driver,
                                      const std::vector<SliceGpu>& gpus, int64_t generation,
                                      SliceLayout layout) {
  const std::vector<GpuPart> parts = Parts(gpus);
  std::vector<json> out = layout == SliceLayout::kCountersWithDevices
                              ? CountersWithDevices(node, driver, parts, generation)
                              : CountersApart(node, driver, parts, generation);
  for (json& s : out) s["spec"]["pool"]["resourceSliceCount"] = static_cast<int64_t>(out.size());
  return out;
}

}  // namespace vgpu::dra
