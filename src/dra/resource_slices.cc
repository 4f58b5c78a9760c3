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

std::vector<json> BuildResourceSlices(const std::string& node, const std::string& driver,
                                      const std::vector<SliceGpu>& gpus, int64_t generation) {
  std::vector<json> out;
  const std::string prefix = node + "-" + driver;
  for (size_t i = 0, k = 0; i < gpus.size(); i += kMaxCounterSetsPerSlice, ++k) {
    json s = Slice(prefix + "-counters-" + std::to_string(k), node, driver, generation);
    json sets = json::array();
    for (size_t j = i; j < gpus.size() && j < i + kMaxCounterSetsPerSlice; ++j) {
      sets.push_back(CounterSet(gpus[j]));
    }
    s["spec"]["sharedCounters"] = sets;
    out.push_back(s);
  }
  std::vector<json> devices;
  for (const SliceGpu& g : gpus) {
    if (!g.healthy) continue;
    if (g.software) devices.push_back(WholeGpu(g));
    for (const MigDeviceSpec& m : g.mig_devices) devices.push_back(MigDevice(g, m));
  }
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
  for (json& s : out) s["spec"]["pool"]["resourceSliceCount"] = static_cast<int64_t>(out.size());
  return out;
}

}  // namespace vgpu::dra
