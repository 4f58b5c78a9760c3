#include "cli/run/nested_slice.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <tuple>

#include "common/units.h"
#include "intercept/config/config.h"
#include "shm/region_file.h"
#include "shm/region_ops.h"

extern char** environ;

namespace vgpu::cli {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : "";
}

bool InsideSlice() {
  return !Env("VGPU_LIMITS_FILE").empty() || !Env("CUDA_DEVICE_MEMORY_SHARED_CACHE").empty() ||
         Env("LD_PRELOAD").find("libvgpu") != std::string::npos ||
         access(intercept::kSystemLimitsFile, F_OK) == 0;
}

// Where the outer slice's settings come from, for messages.
std::string Source() {
  std::string file = Env("VGPU_LIMITS_FILE");
  if (!file.empty()) return file;
  if (access(intercept::kSystemLimitsFile, F_OK) == 0) return intercept::kSystemLimitsFile;
  return "the environment";
}

// The region as a process of the outer slice would create it when none exists yet (a slice set
// up by environment variables alone).
shm::RegionConfig OuterRegionConfig(const intercept::Config& c) {
  shm::RegionConfig rc{};
  rc.device_count = c.device_count;
  rc.priority = c.priority;
  for (int d = 0; d < shm::kMaxDevices; ++d) {
    rc.memory_limit[d] = c.region_limit[d];
    rc.sm_limit[d] = c.sm_limit[d];
  }
  return rc;
}

// How many parents `region` has above it.
int Depth(const shm::Region* region) {
  int depth = 0;
  std::string path;
  shm::Mapping m;
  for (const shm::Region* r = region; r->header.minor >= 2 && r->header.parent[0] != '\0';
       r = m.region()) {
    if (++depth > shm::kMaxParents) break;
    path.assign(r->header.parent, strnlen(r->header.parent, shm::kRegionPathMax));
    if (shm::Mapping::OpenExisting(path.c_str(), false, &m) != shm::RegionError::kOk) break;
  }
  return depth;
}

}  // namespace

Result<std::optional<OuterSlice>> FindOuterSlice() {
  if (!InsideSlice()) return std::optional<OuterSlice>();
  intercept::Config config;
  intercept::ConfigErrors errors;
  intercept::LoadConfig(environ, &config, &errors);
  if (errors.count > 0) {
    return Status::InvalidArgument("this runs inside a slice whose limits cannot be read (" +
                                   Source() + "): " + errors.messages[0]);
  }
  if (config.region_path[0] == '\0') return std::optional<OuterSlice>();
  OuterSlice outer;
  outer.region_path = config.region_path;
  namespace fs = std::filesystem;
  outer.name = fs::path(outer.region_path).parent_path().filename().string();
  if (outer.name.empty()) outer.name = outer.region_path;
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenExisting(outer.region_path.c_str(), true, &mapping);
  if (e == shm::RegionError::kIo) {
    e = shm::Mapping::OpenOrCreate(outer.region_path.c_str(), OuterRegionConfig(config), &mapping);
  }
  if (e != shm::RegionError::kOk) {
    return Status::IoError("cannot open the region " + outer.region_path + " of the slice " +
                           outer.name + " this runs in: " + shm::RegionErrorText(e));
  }
  if (Depth(mapping.region()) >= shm::kMaxParents) {
    return Status::InvalidArgument("the slice " + outer.name + " this runs in is already nested " +
                                   std::to_string(shm::kMaxParents) +
                                   " levels deep; slices nest no deeper");
  }
  for (uint32_t d = 0; d < config.device_count && d < shm::kMaxDevices; ++d) {
    uint64_t limit = config.memory_limit[d];
    uint64_t region = shm::ConfigLimit(mapping.region(), static_cast<int>(d));
    if (region < limit) limit = region;
    if (limit < outer.memory) outer.memory = limit;
  }
  outer.copy_h2d = config.copy_rate[0];
  outer.copy_d2h = config.copy_rate[1];
  outer.copy_borrow = config.copy_borrow;
  outer.compute = config.compute_limited;
  if (outer.compute) {
    slice::SliceSpec& c = outer.compute_spec;
    for (uint32_t d = 0; d < config.device_count && d < shm::kMaxDevices; ++d) {
      int cores = config.sm_limit[d] == 0 ? 100 : static_cast<int>(config.sm_limit[d]);
      if (c.cores == 0 || cores < c.cores) c.cores = cores;
    }
    if (c.cores == 100) c.cores = 0;
    c.elastic = config.compute_mode == shm::kModeElastic;
    c.mode_given = true;
    if (c.elastic) c.guarantee = static_cast<int>(config.guarantee[0]);
    c.weight = static_cast<int>(config.weight);
    c.priority = config.priority;
    c.priority_given = true;
    c.time_slice_ns = config.time_slice_ns;
    c.latency_slack_ns = static_cast<int64_t>(config.latency_slack_ns);
    outer.arbiter_dir = config.arbiter_dir;
  }
  return std::optional<OuterSlice>(outer);
}

Result<slice::SliceSpec> BoundByOuter(const OuterSlice& outer, slice::SliceSpec spec,
                                      const slice::SliceFlags& flags, std::string* note) {
  if (spec.memory == shm::kNoLimit || spec.memory > outer.memory) {
    if (spec.memory != shm::kNoLimit) {
      *note = "--memory " + flags.memory + " is more than the slice " + outer.name +
              " this runs in allows (" + FormatBytes(outer.memory) + "); the nested slice gets " +
              FormatBytes(outer.memory);
    }
    spec.memory = outer.memory;
  }
  // Copy caps: the smaller of each (0 is none).
  for (auto [cap, outer_cap, name] : {std::tuple{&spec.copy_h2d, outer.copy_h2d, "H2D"},
                                      std::tuple{&spec.copy_d2h, outer.copy_d2h, "D2H"}}) {
    if (outer_cap != 0 && (*cap == 0 || *cap > outer_cap)) {
      if (*cap != 0) {
        *note += std::string(note->empty() ? "" : "; ") + "the " + name +
                 " copy cap is more than the slice " + outer.name +
                 " allows; the nested slice "
                 "gets " +
                 std::to_string(outer_cap) + " bytes/s";
      }
      *cap = outer_cap;
    }
  }
  spec.copy_borrow = spec.copy_borrow && outer.copy_borrow;
  if (!outer.compute) return spec;
  const std::pair<const char*, bool> given[] = {
      {"--cores", !flags.cores.empty()},
      {"--guarantee", !flags.guarantee.empty()},
      {"--elastic", flags.elastic},
      {"--weight", !flags.weight.empty()},
      {"--priority", !flags.priority.empty()},
      {"--time-slice", !flags.time_slice.empty()},
      {"--latency-slack", !flags.latency_slack.empty()},
  };
  for (const auto& [flag, set] : given) {
    if (set) {
      return Status::InvalidArgument(
          std::string(flag) + ": this runs inside the slice " + outer.name +
          ", which has a compute share; a nested slice shares that share with the outer slice's "
          "processes and takes no compute settings of its own");
    }
  }
  const slice::SliceSpec& c = outer.compute_spec;
  spec.cores = c.cores;
  spec.guarantee = c.guarantee;
  spec.elastic = c.elastic;
  spec.mode_given = c.mode_given;
  spec.weight = c.weight;
  spec.priority = c.priority;
  spec.priority_given = c.priority_given;
  spec.time_slice_ns = c.time_slice_ns;
  spec.latency_slack_ns = c.latency_slack_ns;
  spec.arbiter_dir = outer.arbiter_dir;
  return spec;
}

Status LinkToOuter(const std::string& region_path, const OuterSlice& outer) {
  shm::Mapping mapping;
  shm::RegionError e = shm::Mapping::OpenExisting(region_path.c_str(), true, &mapping);
  if (e != shm::RegionError::kOk) {
    return Status::IoError("cannot open " + region_path + ": " + shm::RegionErrorText(e));
  }
  if (!shm::SetRegionParent(mapping.region(), outer.region_path.c_str(),
                            outer.compute ? shm::kParentCompute : 0)) {
    return Status::InvalidArgument("the region path of the slice " + outer.name +
                                   " is too long to link a nested slice to (" + outer.region_path +
                                   ")");
  }
  return Status::Ok();
}

}  // namespace vgpu::cli
