#include "simgpu/config.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "common/units.h"
#include "hw/gpu_models_table.h"
#include "simgpu/mig_state.h"
#include "topo/presets.h"
#include "topo/topo_matrix.h"

namespace vgpu::simgpu {
namespace {

// Typical PCI bus numbers of the eight GPUs of an HGX board; further devices count on from 0xe0.
constexpr uint32_t kPciBuses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};

constexpr uint64_t kMiB = 1ULL << 20;
constexpr uint64_t kMaxLinkBytesPerS = 10'000'000'000'000ULL;
constexpr uint64_t kMinLinkBytesPerS = 1'000'000ULL;

// The presets are src/hw's models with a simulated GPU's preset (hw::SimPreset); h100, the
// default, stands in for an unknown model.
constexpr const hw::GpuModel* kDefaultPreset = hw::ModelOfKey("h100-80gb");
static_assert(kDefaultPreset->sim->model == "h100");  // a null pointer would not compile

const hw::GpuModel& FindPreset(std::string_view model) {
  const hw::GpuModel* m = hw::FindSimPreset(model);
  return m != nullptr ? *m : *kDefaultPreset;
}

bool KnownModel(std::string_view model) { return hw::FindSimPreset(model) != nullptr; }

std::string DefaultName(const DeviceSpec& d) {
  const std::string_view label = FindPreset(d.model).sim->label;
  char buf[96];
  uint64_t gib = (d.memory_bytes + (1ULL << 29)) >> 30;  // rounded to the nearest GiB
  std::snprintf(buf, sizeof(buf), "vgpu simulated %.*s (%llu GiB)", static_cast<int>(label.size()),
                label.data(), static_cast<unsigned long long>(gib));
  return buf;
}

void DeriveUuid(DeviceSpec* d, int index) {
  std::string key = "vgpu-simgpu/" + std::to_string(index) + "/" + d->model;
  uint64_t a = Fnv1a(key);
  uint64_t b = Fnv1a(key, a ^ 0x9e3779b97f4a7c15ULL);
  for (int i = 0; i < 8; ++i) {
    d->uuid_bytes[i] = static_cast<uint8_t>(a >> (56 - 8 * i));
    d->uuid_bytes[8 + i] = static_cast<uint8_t>(b >> (56 - 8 * i));
  }
  d->uuid = FormatUuid(d->uuid_bytes);
}

std::string Where(std::string_view file, int line, int column) {
  return std::string(file) + ":" + std::to_string(line) + ":" + std::to_string(column);
}

Status BadValue(std::string_view file, int line, int column, std::string_view key,
                std::string_view value, std::string_view why) {
  return Status::InvalidArgument(Where(file, line, column) + ": " + std::string(key) + "=\"" +
                                 std::string(value) + "\": " + std::string(why));
}

Result<int> ParseSmallInt(std::string_view value, int min, int max) {
  Parsed<uint64_t> v = ParseUnsignedRaw(value);
  if (!v.ok()) return Status::InvalidArgument(std::string(ParseErrorText(v.error)));
  if (v.value < static_cast<uint64_t>(min) || v.value > static_cast<uint64_t>(max)) {
    return Status::OutOfRange("must be between " + std::to_string(min) + " and " +
                              std::to_string(max));
  }
  return static_cast<int>(v.value);
}

uint32_t HexValue(std::string_view s, bool* ok) {
  if (s.empty() || s.size() > 8) {
    *ok = false;
    return 0;
  }
  uint32_t v = 0;
  for (char c : s) {
    int digit = (c >= '0' && c <= '9')   ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                         : -1;
    if (digit < 0) {
      *ok = false;
      return 0;
    }
    v = v * 16 + static_cast<uint32_t>(digit);
  }
  return v;
}

// Applies one key=value to `d`. Returns an error message (without location) or "".
std::string ApplyKey(DeviceSpec* d, std::string_view key, std::string_view value) {
  if (key == "name") {
    if (value.empty() || value.size() > 63) return "must be 1 to 63 characters";
    d->name = value;
  } else if (key == "memory" || key == "l2" || key == "context_memory") {
    Parsed<uint64_t> v = ParseByteSizeRaw(value);
    if (!v.ok()) return std::string(ParseErrorText(v.error));
    if (key == "memory") {
      if (v.value < kMiB) return "must be at least 1MiB";
      d->memory_bytes = v.value & ~uint64_t{511};
    } else if (key == "l2") {
      d->l2_bytes = v.value;
    } else {
      d->context_bytes = v.value;
    }
  } else if (key == "sms" || key == "clock_mhz" || key == "memory_clock_mhz" ||
             key == "bus_width" || key == "power_w") {
    Result<int> v = ParseSmallInt(value, 1, 1000000);
    if (!v) return v.error().message();
    if (key == "sms") d->sm_count = *v;
    if (key == "clock_mhz") d->clock_mhz = *v;
    if (key == "memory_clock_mhz") d->memory_clock_mhz = *v;
    if (key == "bus_width") d->bus_width_bits = *v;
    if (key == "power_w") d->power_w = *v;
  } else if (key == "cc") {
    size_t dot = value.find('.');
    if (dot == std::string_view::npos) return "must be MAJOR.MINOR, e.g. 9.0";
    Result<int> major = ParseSmallInt(value.substr(0, dot), 1, 99);
    Result<int> minor = ParseSmallInt(value.substr(dot + 1), 0, 9);
    if (!major || !minor) return "must be MAJOR.MINOR, e.g. 9.0";
    d->cc_major = *major;
    d->cc_minor = *minor;
  } else if (key == "uuid") {
    if (!ParseUuid(value, &d->uuid_bytes)) {
      return "must look like GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx (hex digits)";
    }
    d->uuid = FormatUuid(d->uuid_bytes);
  } else if (key == "pci") {
    // DOMAIN:BUS:DEVICE.0
    size_t c1 = value.find(':');
    size_t c2 = value.find(':', c1 == std::string_view::npos ? 0 : c1 + 1);
    size_t dot = value.find('.');
    bool ok = c1 != std::string_view::npos && c2 != std::string_view::npos &&
              dot != std::string_view::npos && dot > c2 && value.substr(dot + 1) == "0";
    uint32_t domain = 0, bus = 0, dev = 0;
    if (ok) domain = HexValue(value.substr(0, c1), &ok);
    if (ok) bus = HexValue(value.substr(c1 + 1, c2 - c1 - 1), &ok);
    if (ok) dev = HexValue(value.substr(c2 + 1, dot - c2 - 1), &ok);
    if (!ok || bus > 0xff || dev > 0x1f || domain > 0xffff) {
      return "must be DOMAIN:BUS:DEVICE.0 in hex, e.g. 0000:18:00.0";
    }
    d->pci_domain = domain;
    d->pci_bus = bus;
    d->pci_device = dev;
  } else if (key == "kernel_time") {
    Parsed<int64_t> v = ParseDurationRaw(value);
    if (!v.ok()) return std::string(ParseErrorText(v.error)) + " (use e.g. 10us, 2ms)";
    if (v.value <= 0) return "must be positive";
    d->kernel_ns = static_cast<uint64_t>(v.value);
  } else if (key == "h2d_bandwidth" || key == "d2h_bandwidth") {
    Parsed<uint64_t> v = ParseRateRaw(value);
    if (!v.ok()) return std::string(ParseErrorText(v.error)) + " (use e.g. 55GB/s, or 0)";
    if (v.value > kMaxLinkBytesPerS) return "must be at most 10TB/s";
    if (v.value != 0 && v.value < kMinLinkBytesPerS) return "must be 0 or at least 1MB/s";
    (key == "h2d_bandwidth" ? d->h2d_bytes_per_s : d->d2h_bytes_per_s) = v.value;
  } else if (key == "fault_latency") {
    Parsed<int64_t> v = ParseDurationRaw(value);
    if (!v.ok()) return std::string(ParseErrorText(v.error)) + " (use e.g. 20us)";
    if (v.value < 0 || v.value > 1'000'000'000) return "must be between 0 and 1s";
    d->fault_latency_ns = static_cast<uint64_t>(v.value);
  } else if (key == "link_coupling") {
    Result<int> v = ParseSmallInt(value, 1, 100);
    if (!v) return v.error().message() + " (percent)";
    d->link_coupling_pct = static_cast<uint32_t>(*v);
  } else if (key == "mig") {
    if (value != "on" && value != "off") return "must be on or off";
    d->mig_enabled = value == "on";
  } else if (key == "mig_layout") {
    d->mig_layout = value;  // checked against the model's profiles once the line is read
  } else if (key == "pcie_gen") {
    Result<int> v = ParseSmallInt(value, 1, 6);
    if (!v) return v.error().message();
    d->pcie_generation = *v;
  } else if (key == "pcie_width") {
    Result<int> v = ParseSmallInt(value, 1, 32);
    if (!v || (*v & (*v - 1)) != 0) return "must be 1, 2, 4, 8, 16 or 32 lanes";
    d->pcie_width = *v;
  } else {
    return "unknown key (known: model name memory sms cc clock_mhz memory_clock_mhz bus_width l2 "
           "power_w uuid pci kernel_time context_memory h2d_bandwidth d2h_bandwidth "
           "link_coupling fault_latency mig mig_layout pcie_gen pcie_width)";
  }
  return "";
}

struct Token {
  std::string key;
  std::string value;
  int key_column = 0;
  int value_column = 0;
};

// Splits a line into key=value tokens. Returns "" or an error message; *column is set to where
// the error is.
std::string Tokenize(std::string_view line, std::vector<Token>* tokens, int* column) {
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r') {
      ++i;
      continue;
    }
    if (c == '#') break;
    Token t;
    t.key_column = static_cast<int>(i) + 1;
    while (i < line.size() && ((line[i] >= 'a' && line[i] <= 'z') || line[i] == '_' ||
                               (line[i] >= '0' && line[i] <= '9'))) {
      t.key += line[i++];
    }
    if (t.key.empty() || i >= line.size() || line[i] != '=') {
      *column = static_cast<int>(i) + 1;
      return "expected key=value";
    }
    ++i;
    t.value_column = static_cast<int>(i) + 1;
    if (i < line.size() && line[i] == '"') {
      ++i;
      bool closed = false;
      while (i < line.size()) {
        if (line[i] == '\\' && i + 1 < line.size()) {
          t.value += line[i + 1];
          i += 2;
        } else if (line[i] == '"') {
          closed = true;
          ++i;
          break;
        } else {
          t.value += line[i++];
        }
      }
      if (!closed) {
        *column = t.value_column;
        return "unterminated quoted value";
      }
    } else {
      while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r' &&
             line[i] != '#') {
        t.value += line[i++];
      }
    }
    tokens->push_back(std::move(t));
  }
  return "";
}

}  // namespace

uint64_t Fnv1a(std::string_view data, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : data) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string FormatUuid(const std::array<uint8_t, 16>& b) {
  char buf[64];
  std::snprintf(buf, sizeof(buf),
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

bool ParseUuid(std::string_view text, std::array<uint8_t, 16>* bytes) {
  if (text.size() != 40 || text.substr(0, 4) != "GPU-") return false;
  std::string_view hex = text.substr(4);
  int n = 0;
  for (size_t i = 0; i < hex.size(); ++i) {
    if (i == 8 || i == 13 || i == 18 || i == 23) {
      if (hex[i] != '-') return false;
      continue;
    }
    if (i + 1 >= hex.size()) return false;
    bool ok = true;
    uint32_t v = HexValue(hex.substr(i, 2), &ok);
    if (!ok || n >= 16) return false;
    (*bytes)[n++] = static_cast<uint8_t>(v);
    ++i;
  }
  return n == 16;
}

DeviceSpec DefaultDevice(int index, std::string_view model) {
  const hw::GpuModel& p = FindPreset(model);
  DeviceSpec d;
  d.model = p.sim->model;
  d.memory_bytes = static_cast<uint64_t>(p.SimMemoryMib()) * kMiB;
  d.sm_count = p.sm_count;
  d.cc_major = p.cc_major;
  d.cc_minor = p.cc_minor;
  d.clock_mhz = p.clock_mhz;
  d.memory_clock_mhz = p.memory_clock_mhz;
  d.bus_width_bits = p.bus_width_bits;
  d.l2_bytes = static_cast<uint64_t>(p.l2_mib) * kMiB;
  d.power_w = p.power_w;
  d.pci_device_id = p.SimPciDeviceId();
  d.pci_domain = 0;
  d.pci_bus = index < 8 ? kPciBuses[index] : 0xe0 + static_cast<uint32_t>(index - 8);
  d.pci_device = 0;
  d.kernel_ns = 10'000;
  d.context_bytes = 0;
  d.h2d_bytes_per_s = p.sim->host_link_bytes_per_s;
  d.d2h_bytes_per_s = p.sim->host_link_bytes_per_s;
  d.link_coupling_pct = 70;
  d.fault_latency_ns = 20'000;
  d.name = DefaultName(d);
  DeriveUuid(&d, index);
  return d;
}

uint64_t Config::Hash() const {
  std::string canonical;
  for (const DeviceSpec& d : devices) {
    char buf[512];
    std::snprintf(
        buf, sizeof(buf), "%s|%s|%llu|%d|%d.%d|%d|%d|%d|%llu|%d|%x|%s|%x:%x:%x|%llu|%llu\n",
        d.model.c_str(), d.name.c_str(), static_cast<unsigned long long>(d.memory_bytes),
        d.sm_count, d.cc_major, d.cc_minor, d.clock_mhz, d.memory_clock_mhz, d.bus_width_bits,
        static_cast<unsigned long long>(d.l2_bytes), d.power_w, d.pci_device_id, d.uuid.c_str(),
        d.pci_domain, d.pci_bus, d.pci_device, static_cast<unsigned long long>(d.kernel_ns),
        static_cast<unsigned long long>(d.context_bytes));
    canonical += buf;
    std::snprintf(buf, sizeof(buf), "link|%llu|%llu|%u\n",
                  static_cast<unsigned long long>(d.h2d_bytes_per_s),
                  static_cast<unsigned long long>(d.d2h_bytes_per_s), d.link_coupling_pct);
    canonical += buf;
    if (d.mig_enabled || !d.mig_layout.empty()) {
      canonical += "mig=" + std::string(d.mig_enabled ? "on" : "off") + "|" + d.mig_layout + "\n";
    }
    if (d.pcie_generation != 0 || d.pcie_width != 0) {
      canonical +=
          "pcie=" + std::to_string(d.pcie_generation) + "|" + std::to_string(d.pcie_width) + "\n";
    }
  }
  if (has_topology) canonical += "topology=" + topology_spec;
  return Fnv1a(canonical);
}

Result<Config> ParseConfigText(std::string_view text, std::string_view file_name) {
  Config config;
  config.source = file_name;
  int line_number = 0;
  int topology_line = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    std::vector<Token> tokens;
    int column = 0;
    std::string error = Tokenize(line, &tokens, &column);
    if (!error.empty()) {
      return Status::InvalidArgument(Where(file_name, line_number, column) + ": " + error);
    }
    if (tokens.empty()) continue;
    if (tokens[0].key == "topology") {
      if (tokens.size() != 1) {
        return Status::InvalidArgument(Where(file_name, line_number, tokens[1].key_column) +
                                       ": topology= stands alone on its line");
      }
      config.topology_spec = tokens[0].value;
      topology_line = line_number;
      continue;
    }
    int index = static_cast<int>(config.devices.size());
    if (index >= kMaxDevices) {
      return Status::OutOfRange(Where(file_name, line_number, 1) + ": more than " +
                                std::to_string(kMaxDevices) + " devices");
    }
    std::string model = "h100";
    for (const Token& t : tokens) {
      if (t.key != "model") continue;
      if (!KnownModel(t.value)) {
        return BadValue(file_name, line_number, t.value_column, t.key, t.value,
                        "unknown model (known: h100 h200 a100)");
      }
      model = t.value;
    }
    DeviceSpec d = DefaultDevice(index, model);
    bool named = false;
    for (const Token& t : tokens) {
      if (t.key == "model") continue;
      std::string why = ApplyKey(&d, t.key, t.value);
      if (!why.empty()) {
        int col = why.rfind("unknown key", 0) == 0 ? t.key_column : t.value_column;
        return BadValue(file_name, line_number, col, t.key, t.value, why);
      }
      named = named || t.key == "name";
    }
    if (!named) d.name = DefaultName(d);
    if (!d.mig_layout.empty()) {
      const mig::ModelTable* table = MigTableFor(d);
      if (table == nullptr) {
        return Status::InvalidArgument(
            Where(file_name, line_number, 1) + ": mig_layout: the device has no MIG table: " +
            mig::IdentifyModel(
                {d.name, static_cast<int64_t>(d.memory_bytes >> 20), d.pci_device_id})
                .why);
      }
      if (!d.mig_enabled) {
        return Status::InvalidArgument(Where(file_name, line_number, 1) +
                                       ": mig_layout needs mig=on");
      }
      Result<mig::Layout> layout = mig::ParseLayout(*table, d.mig_layout);
      if (!layout) {
        return Status::InvalidArgument(Where(file_name, line_number, 1) +
                                       ": mig_layout: " + layout.error().message());
      }
    }
    if (d.context_bytes >= d.memory_bytes) {
      return Status::InvalidArgument(Where(file_name, line_number, 1) +
                                     ": context_memory must be smaller than memory");
    }
    config.devices.push_back(std::move(d));
  }
  if (config.devices.empty()) {
    return Status::InvalidArgument(std::string(file_name) + ": no devices (one line per device)");
  }
  for (size_t i = 0; i < config.devices.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      if (config.devices[i].uuid == config.devices[j].uuid) {
        return Status::InvalidArgument(std::string(file_name) + ": devices " + std::to_string(j) +
                                       " and " + std::to_string(i) + " have the same uuid");
      }
    }
  }
  if (!config.topology_spec.empty()) {
    std::string spec = config.topology_spec;
    Status s = ApplyTopology(&config, spec, Where(file_name, topology_line, 1));
    if (!s.ok()) return s;
  }
  return config;
}

Result<topo::Topology> LoadTopologySpec(const std::string& spec) {
  if (std::optional<topo::Topology> preset = topo::Preset(spec)) return *preset;
  std::ifstream in(spec);
  if (!in) {
    std::string names;
    for (const std::string& n : topo::PresetNames()) names += " " + n;
    return Status::NotFound("\"" + spec + "\" is neither a preset (" + names.substr(1) +
                            ") nor a readable nvidia-smi topo -m file");
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  return topo::ParseTopoMatrix(buffer.str(), spec);
}

Status ApplyTopology(Config* config, const std::string& spec, const std::string& where) {
  Result<topo::Topology> t = LoadTopologySpec(spec);
  if (!t) return Status::InvalidArgument(where + ": topology=" + spec + ": " + t.error().message());
  if (t->size() != static_cast<int>(config->devices.size())) {
    return Status::InvalidArgument(
        where + ": topology " + spec + " has " + std::to_string(t->size()) + " GPUs but " +
        std::to_string(config->devices.size()) + " devices are configured");
  }
  config->topology_spec = spec;
  config->topology = std::move(*t);
  config->has_topology = true;
  return Status::Ok();
}

Result<Config> LoadConfigFromEnvironment() {
  if (const char* path = std::getenv("VGPU_SIMGPU_CONFIG"); path != nullptr && *path != '\0') {
    std::ifstream in(path);
    if (!in) {
      return Status::NotFound(std::string("VGPU_SIMGPU_CONFIG=") + path + ": cannot open file");
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    Result<Config> parsed = ParseConfigText(buffer.str(), path);
    const char* env_topology = std::getenv("VGPU_SIMGPU_TOPOLOGY");
    if (parsed && !parsed->has_topology && env_topology != nullptr && *env_topology != '\0') {
      Status s = ApplyTopology(&*parsed, env_topology, "VGPU_SIMGPU_TOPOLOGY");
      if (!s.ok()) return s;
    }
    return parsed;
  }
  Config config;
  int count = 1;
  const char* env_topology = std::getenv("VGPU_SIMGPU_TOPOLOGY");
  bool topology = env_topology != nullptr && *env_topology != '\0';
  if (const char* n = std::getenv("VGPU_SIMGPU_DEVICES"); n != nullptr && *n != '\0') {
    Result<int> v = ParseSmallInt(n, 1, kMaxDevices);
    if (!v) {
      return Status::InvalidArgument(std::string("VGPU_SIMGPU_DEVICES=\"") + n +
                                     "\": " + v.error().message() + " (a device count, 1 to " +
                                     std::to_string(kMaxDevices) + ")");
    }
    count = *v;
    config.source = std::string("VGPU_SIMGPU_DEVICES=") + n;
  } else if (topology) {
    Result<topo::Topology> t = LoadTopologySpec(env_topology);
    if (!t) return Status::InvalidArgument("VGPU_SIMGPU_TOPOLOGY: " + t.error().message());
    if (t->size() > kMaxDevices) {
      return Status::OutOfRange(std::string("VGPU_SIMGPU_TOPOLOGY=") + env_topology + ": " +
                                std::to_string(t->size()) + " GPUs, more than " +
                                std::to_string(kMaxDevices));
    }
    count = t->size();
    config.source = std::string("VGPU_SIMGPU_TOPOLOGY=") + env_topology;
  } else {
    config.source = "default (one device)";
  }
  for (int i = 0; i < count; ++i) config.devices.push_back(DefaultDevice(i));
  if (topology) {
    Status s = ApplyTopology(&config, env_topology, "VGPU_SIMGPU_TOPOLOGY");
    if (!s.ok()) return s;
  }
  return config;
}

}  // namespace vgpu::simgpu
