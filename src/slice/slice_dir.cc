#include "slice/slice_dir.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include "common/atomic_file.h"
#include "common/units.h"
#include "shm/priority.h"
#include "shm/region_file.h"
#include "slice/limits_file.h"
#include "slice/registry.h"

extern char** environ;

namespace vgpu::slice {
namespace {

namespace fs = std::filesystem;

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

std::string LimitsText(const SliceSpec& s, const std::string& dir, bool sim,
                       const std::string& arbiter_dir, const std::string& comment) {
  LimitsFile l;
  l.comments.push_back("limits of this slice, written by vgpu for: " + comment);
  l.memory = s.memory;
  l.cores = s.cores;
  l.guarantee = s.guarantee;
  if (s.elastic) {
    l.mode = "elastic";
  } else if (s.mode_given) {
    l.mode = "capped";
  }
  l.weight = s.weight;
  l.priority = s.priority;
  l.time_slice_ns = s.time_slice_ns;
  l.latency_slack_ns = s.latency_slack_ns;
  l.copy_h2d = s.copy_h2d;
  l.copy_d2h = s.copy_d2h;
  l.copy_borrow = s.copy_borrow;
  l.memory_mode = s.memory_mode;
  l.region = dir + "/region";
  l.arbiter_dir = arbiter_dir;
  // The simulated GPU's contexts take no device memory of their own.
  if (sim) l.context_overhead = 0;
  return LimitsFileText(l);
}

Result<SliceDir> SliceDir::Create(const std::string& name, const SliceSpec& spec, bool sim,
                                  const std::string& command_text) {
  std::string state = DefaultStateDir();
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
  if (Status st = WriteSliceMeta(dir.path_, {getpid(), command_text}); !st.ok()) return st;
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
  if (!get("VGPU_STATE_DIR").empty()) set.push_back({"VGPU_STATE_DIR", DefaultStateDir()});
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

std::string SliceName(const std::string& text) {
  std::string name = fs::path(text).filename().string();
  if (name.empty()) name = "slice";
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  return name;
}

}  // namespace vgpu::slice
