#include "cli/slice_setup.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "cli/cli_util.h"
#include "common/atomic_file.h"
#include "common/limits_format.h"
#include "common/printable.h"
#include "common/units.h"
#include "shm/priority.h"
#include "shm/region_file.h"
#include "shm/slice_registry.h"

extern char** environ;

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

Status Bad(const std::string& prefix, const std::string& flag, const std::string& value,
           const std::string& why) {
  return Status::InvalidArgument(prefix + flag + ": \"" + value + "\": " + why);
}

Status CreateRegion(const std::string& dir, const SliceSpec& s) {
  shm::RegionConfig config{};
  config.device_count = s.devices.empty() ? 1 : static_cast<uint32_t>(s.devices.size());
  config.priority = s.priority;
  for (int d = 0; d < shm::kMaxDevices; ++d) {
    config.memory_limit[d] = s.memory;
    config.sm_limit[d] = static_cast<uint32_t>(s.cores);
  }
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenOrCreate((dir + "/region").c_str(), config, &mapping);
  if (e != shm::RegionError::kOk) {
    return Status::IoError("cannot create the slice region in " + dir + ": " +
                           shm::RegionErrorText(e));
  }
  return Status::Ok();
}

}  // namespace

Result<uint64_t> ParseCopyCap(const std::string& text, const std::string& what) {
  if (text == "unlimited") return uint64_t{0};
  Result<uint64_t> r = ParseRate(text, what);
  if (!r.has_value()) return r.error();
  if (*r < 1'000'000 || *r > 10'000'000'000'000ULL) {
    return Status::InvalidArgument(what + ": \"" + text +
                                   "\": must be between 1MB/s and 10TB/s (or unlimited)");
  }
  return *r;
}

Result<int> ParseCores(const std::string& text, const std::string& what) {
  Parsed<int> p = ParsePercentRaw(text);
  if (p.ok() && p.value >= 1) return p.value;
  const std::string why = p.ok() || p.error == ParseError::kOutOfRange
                              ? "must be 1-100"
                              : std::string(ParseErrorText(p.error)) + ": must be an integer 1-100";
  return Status::InvalidArgument(what + ": \"" + text + "\": " + why +
                                 " (percent of each GPU's time, e.g. 30 or 30%)");
}

Result<SliceSpec> ParseSliceSpec(const SliceFlags& o, const std::string& prefix) {
  SliceSpec s;
  if (!o.memory.empty()) {
    Result<uint64_t> m = ParseByteSize(o.memory, prefix + "--memory");
    if (!m.has_value()) return m.error();
    if (*m == 0) return Bad(prefix, "--memory", o.memory, "must be above 0");
    s.memory = *m;
  }
  if (!o.cores.empty()) {
    Result<int> c = ParseCores(o.cores, prefix + "--cores");
    if (!c.has_value()) return c.error();
    s.cores = *c == 100 ? 0 : *c;
  }
  if (!o.guarantee.empty()) {
    Result<int> g = ParsePercent(o.guarantee, prefix + "--guarantee");
    if (!g.has_value()) return g.error();
    int max = s.cores == 0 ? 100 : s.cores;
    if (*g > max) {
      return Bad(prefix, "--guarantee", o.guarantee,
                 "above the maximum share (--cores " + std::to_string(max) + ")");
    }
    s.guarantee = *g;
    s.elastic = true;
  }
  if (o.elastic) s.elastic = true;
  if (!o.weight.empty()) {
    Result<uint64_t> w = ParseUnsigned(o.weight, prefix + "--weight");
    if (!w.has_value()) return w.error();
    if (*w < 1 || *w > shm::kMaxWeight) {
      return Bad(prefix, "--weight", o.weight, "must be 1-" + std::to_string(shm::kMaxWeight));
    }
    s.weight = static_cast<int>(*w);
  }
  if (!o.priority.empty()) {
    int32_t level = -1;
    if (!shm::ParsePriority(o.priority, &level)) {
      return Bad(prefix, "--priority", o.priority, std::string("use ") + shm::kPriorityChoices);
    }
    s.priority = level;
    s.priority_given = true;
  }
  if (!o.time_slice.empty()) {
    Result<int64_t> t = ParseDuration(o.time_slice, prefix + "--time-slice");
    if (!t.has_value()) return t.error();
    if (static_cast<uint64_t>(*t) < shm::kMinTimeSliceNs ||
        static_cast<uint64_t>(*t) > shm::kMaxTimeSliceNs) {
      return Bad(prefix, "--time-slice", o.time_slice, "must be between 500us and 1s");
    }
    s.time_slice_ns = static_cast<uint64_t>(*t);
  }
  if (!o.latency_slack.empty()) {
    Result<int64_t> t = ParseDuration(o.latency_slack, prefix + "--latency-slack");
    if (!t.has_value()) return t.error();
    if (*t < 0 || static_cast<uint64_t>(*t) > shm::kMaxLatencySlackUs * 1000ULL) {
      return Bad(prefix, "--latency-slack", o.latency_slack, "must be between 0 and 1s");
    }
    s.latency_slack_ns = *t;
  }
  if (!o.copy_bandwidth.empty()) {
    // H2D[,D2H]; one value caps both directions.
    size_t comma = o.copy_bandwidth.find(',');
    std::string h2d = o.copy_bandwidth.substr(0, comma);
    std::string d2h = comma == std::string::npos ? h2d : o.copy_bandwidth.substr(comma + 1);
    if (d2h.find(',') != std::string::npos) {
      return Bad(prefix, "--copy-bandwidth", o.copy_bandwidth, "use H2D[,D2H], e.g. 10GB/s,5GB/s");
    }
    Result<uint64_t> h = ParseCopyCap(h2d, prefix + "--copy-bandwidth");
    if (!h.has_value()) return h.error();
    Result<uint64_t> d = ParseCopyCap(d2h, prefix + "--copy-bandwidth");
    if (!d.has_value()) return d.error();
    s.copy_h2d = *h;
    s.copy_d2h = *d;
  }
  s.copy_borrow = o.copy_borrow;
  if (!o.memory_mode.empty()) {
    s.memory_mode = -1;
    for (int i = 0; i < 3; ++i) {
      if (o.memory_mode == kMemoryModeNames[i]) s.memory_mode = i;
    }
    if (s.memory_mode < 0) {
      return Bad(prefix, "--memory-mode", o.memory_mode, "use strict, overcommit or spill");
    }
    if (s.memory_mode == kMemoryModeSpill && s.memory == shm::kNoLimit) {
      return Status::InvalidArgument(prefix +
                                     "--memory-mode: spill needs a memory limit (--memory)");
    }
  }
  if (!o.devices.empty()) {
    size_t start = 0;
    while (start <= o.devices.size()) {
      size_t comma = o.devices.find(',', start);
      std::string d =
          o.devices.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      bool index = !d.empty() && d.find_first_not_of("0123456789") == std::string::npos;
      bool uuid = d.rfind("GPU-", 0) == 0 || d.rfind("MIG-", 0) == 0;
      if (!index && !uuid) {
        return Bad(prefix, "--device", d, "use device indices or GPU- UUIDs, e.g. 0,1");
      }
      s.devices.push_back(d);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (s.devices.size() > static_cast<size_t>(shm::kMaxDevices)) {
      return Status::InvalidArgument(prefix + "--device: at most " +
                                     std::to_string(shm::kMaxDevices) + " devices");
    }
  }
  return s;
}

std::string LimitsText(const SliceSpec& s, const std::string& dir, bool sim,
                       const std::string& arbiter_dir, const std::string& comment) {
  // The command on one printable line (control characters and non-ASCII bytes escaped).
  char c[512];
  EscapeForDisplay(comment, c, sizeof(c), 200);
  // The header first and the end marker last (common/limits_format.h): a cut-short copy is
  // rejected by libvgpu.so.
  std::string t = std::string(kLimitsFileHeader) + "\n";
  t += std::string("# limits of this slice, written by vgpu for: ") + c + "\n";
  if (s.memory != shm::kNoLimit) t += "memory=" + std::to_string(s.memory) + "\n";
  if (s.cores != 0) t += "cores=" + std::to_string(s.cores) + "\n";
  if (s.guarantee >= 0) t += "guarantee=" + std::to_string(s.guarantee) + "\n";
  if (s.elastic) {
    t += "mode=elastic\n";
  } else if (s.mode_given) {
    t += "mode=capped\n";
  }
  if (s.weight > 0) t += "weight=" + std::to_string(s.weight) + "\n";
  t += std::string("priority=") + shm::PriorityName(s.priority) + "\n";
  if (s.time_slice_ns != 0) t += "time_slice=" + std::to_string(s.time_slice_ns) + "ns\n";
  if (s.latency_slack_ns >= 0) {
    t += "latency_slack=" + std::to_string(s.latency_slack_ns) + "ns\n";
  }
  if (s.copy_h2d != 0) t += "copy_h2d=" + std::to_string(s.copy_h2d) + "\n";
  if (s.copy_d2h != 0) t += "copy_d2h=" + std::to_string(s.copy_d2h) + "\n";
  if (s.copy_borrow) t += "copy_borrow=on\n";
  // Always written: the environment may lower the mode, never raise it (intercept/config.h).
  t += std::string("memory_mode=") + kMemoryModeNames[s.memory_mode] + "\n";
  t += "region=" + dir + "/region\n";
  t += "arbiter_dir=" + arbiter_dir + "\n";
  // The simulated GPU's contexts take no device memory of their own.
  if (sim) t += "context_overhead=0\n";
  t += std::string(kLimitsFileEnd) + "\n";
  return t;
}

Result<SliceDir> SliceDir::Create(const std::string& name, const SliceSpec& spec, bool sim,
                                  const std::string& command_text) {
  std::string state = shm::DefaultStateDir();
  std::error_code ec;
  fs::create_directories(fs::path(state) / "slices", ec);
  if (ec) return Status::IoError("cannot create " + state + "/slices: " + ec.message());
  std::string tmpl = state + "/slices/" + name + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) {
    return Status::IoError("cannot create a slice directory in " + state +
                           "/slices: " + std::strerror(errno));
  }
  SliceDir dir;
  dir.path_ = buf.data();
  dir.spec_ = spec;
  dir.sim_ = sim;
  if (Status st = WriteFileAtomically(
          dir.path_ + "/limits",
          LimitsText(spec, dir.path_, sim,
                     spec.arbiter_dir.empty() ? state + "/arbiter" : spec.arbiter_dir,
                     command_text),
          0444);
      !st.ok()) {
    return st;
  }
  if (Status st = CreateRegion(dir.path_, spec); !st.ok()) return st;
  if (Status st = shm::WriteSliceMeta(dir.path_, {getpid(), command_text}); !st.ok()) return st;
  return dir;
}

SliceDir::~SliceDir() {
  if (path_.empty()) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

SliceDir::SliceDir(SliceDir&& other) noexcept { *this = std::move(other); }

SliceDir& SliceDir::operator=(SliceDir&& other) noexcept {
  if (this != &other) {
    if (!path_.empty()) {
      std::error_code ec;
      fs::remove_all(path_, ec);
    }
    path_ = std::exchange(other.path_, std::string());
    spec_ = other.spec_;
    sim_ = other.sim_;
  }
  return *this;
}

std::vector<std::string> SliceDir::ChildEnvironment(const std::string& libvgpu,
                                                    const std::string& simgpu_dir) const {
  auto get = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v != nullptr ? v : "";
  };
  // libvgpu.so goes first, except for sanitizer runtimes, which must precede every other library.
  std::string first, rest;
  std::string existing = get("LD_PRELOAD");
  for (size_t pos = 0; pos < existing.size();) {
    size_t end = existing.find_first_of(" :", pos);
    if (end == std::string::npos) end = existing.size();
    std::string entry = existing.substr(pos, end - pos);
    pos = end + 1;
    if (entry.empty()) continue;
    std::string base = fs::path(entry).filename().string();
    bool sanitizer = base.rfind("libasan", 0) == 0 || base.rfind("libtsan", 0) == 0 ||
                     base.rfind("libubsan", 0) == 0 || base.rfind("libhwasan", 0) == 0 ||
                     base.rfind("libclang_rt.", 0) == 0;
    (sanitizer ? first : rest) += entry + " ";
  }
  std::vector<std::pair<std::string, std::string>> set = {
      {"LD_PRELOAD", first + libvgpu + (rest.empty() ? "" : " " + rest)},
      {"VGPU_LIMITS_FILE", path_ + "/limits"},
      {"CUDA_DEVICE_MEMORY_SHARED_CACHE", path_ + "/region"},
  };
  // A relative state directory is passed on absolute, so the command may change directory.
  if (!get("VGPU_STATE_DIR").empty()) set.push_back({"VGPU_STATE_DIR", shm::DefaultStateDir()});
  if (!spec_.devices.empty()) {
    std::string list;
    for (const std::string& d : spec_.devices) list += (list.empty() ? "" : ",") + d;
    set.push_back({"CUDA_VISIBLE_DEVICES", list});
  }
  if (sim_) {
    std::string path = get("LD_LIBRARY_PATH");
    set.push_back({"LD_LIBRARY_PATH", simgpu_dir + (path.empty() ? "" : ":" + path)});
    set.push_back({"VGPU_REAL_LIBCUDA", simgpu_dir + "/libcuda.so.1"});
    set.push_back({"VGPU_REAL_LIBNVML", simgpu_dir + "/libnvidia-ml.so.1"});
  }
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    bool replaced = false;
    for (const auto& [k, v] : set) replaced |= entry.rfind(k + "=", 0) == 0;
    if (!replaced) env.push_back(entry);
  }
  for (const auto& [k, v] : set) env.push_back(k + "=" + v);
  return env;
}

Result<Libraries> FindLibraries(bool sim, const std::string& who) {
  (void)who;
  Libraries l;
  std::string lib_dir = LibraryDir();
  l.libvgpu = lib_dir + "/libvgpu.so";
  if (access(l.libvgpu.c_str(), R_OK) != 0) {
    return Status::FailedPrecondition(
        l.libvgpu + " not found (" +
        (RunsFromBuildTree() ? "build it: cmake --build build"
                             : "the vgpu installation is incomplete: reinstall the vgpu package") +
        ")");
  }
  if (sim) {
    Result<std::string> dir = SimulatedGpuDir("--sim");
    if (!dir.has_value()) return dir.error();
    l.simgpu_dir = *dir;
  }
  return l;
}

std::string SliceName(const std::string& text) {
  std::string name = fs::path(text).filename().string();
  if (name.empty()) name = "slice";
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return name;
}

}  // namespace vgpu::cli
