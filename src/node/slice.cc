#include "node/slice.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/atomic_file.h"
#include "common/log.h"
#include "node/slice_region.h"
#include "shm/priority.h"
#include "slice/limits_file.h"

namespace vgpu::node {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

bool SafeName(const std::string& s) {
  if (s.empty() || s.size() > 200 || s == "." || s == "..") return false;
  for (char c : s) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

json ComputeToJson(const slice::ComputeSettings& c) {
  json j = json::object();
  if (c.guarantee >= 0) j["guarantee"] = c.guarantee;
  if (c.weight > 0) j["weight"] = c.weight;
  if (!c.mode.empty()) j["mode"] = c.mode;
  if (c.level >= 0) j["priority"] = shm::PriorityName(c.level);
  if (c.time_slice_ns > 0) j["timeSliceNs"] = c.time_slice_ns;
  if (!c.memory_mode.empty()) j["memoryMode"] = c.memory_mode;
  if (c.copy_h2d.has_value()) j["copyH2d"] = *c.copy_h2d;
  if (c.copy_d2h.has_value()) j["copyD2h"] = *c.copy_d2h;
  if (c.copy_borrow.has_value()) j["copyBorrow"] = *c.copy_borrow;
  return j;
}

slice::ComputeSettings ComputeFromJson(const json& j) {
  slice::ComputeSettings c;
  if (!j.is_object()) return c;
  c.guarantee = j.value("guarantee", -1);
  c.weight = j.value("weight", 0);
  c.mode = j.value("mode", "");
  if (j.contains("priority") && j["priority"].is_string()) {
    auto parsed = slice::ParseComputeSettings("priority=" + j["priority"].get<std::string>(), "");
    if (parsed) c.level = parsed->level;
  }
  c.time_slice_ns = j.value("timeSliceNs", uint64_t{0});
  c.memory_mode = j.value("memoryMode", std::string());
  if (j.contains("copyH2d") && j["copyH2d"].is_number_unsigned()) c.copy_h2d = j["copyH2d"];
  if (j.contains("copyD2h") && j["copyD2h"].is_number_unsigned()) c.copy_d2h = j["copyD2h"];
  if (j.contains("copyBorrow") && j["copyBorrow"].is_boolean()) c.copy_borrow = j["copyBorrow"];
  return c;
}

json RecordToJson(const SliceRecord& r) {
  const ContainerSlice& s = r.spec;
  const int64_t created = r.created_unix;
  json j;
  j["version"] = 1;
  j["namespace"] = s.pod_ns;
  j["pod"] = s.pod_name;
  j["podUID"] = s.pod_uid;
  j["container"] = s.container;
  j["priority"] = s.priority;
  j["compute"] = ComputeToJson(s.compute);
  j["region"] = r.region_path;
  j["arbiterDir"] = r.arbiter_dir;
  j["arbitrated"] = r.arbitrated;
  j["created"] = created;
  j["devices"] = json::array();
  for (const SliceDevice& d : s.devices) {
    j["devices"].push_back({{"uuid", d.uuid},
                            {"index", d.node_index},
                            {"unit", d.unit},
                            {"memoryBytes", d.memory_bytes},
                            {"cores", d.cores}});
  }
  return j;
}

// Reads slice.json of the slice directory `dir`; false when it is not a slice.
bool RecordFromJson(const json& j, const std::string& dir, SliceRecord* r) {
  ContainerSlice* s = &r->spec;
  int64_t* created = &r->created_unix;
  if (!j.is_object() || j.value("version", 0) != 1) return false;
  // Slices written before the region moved out of shared/ say nothing of their paths.
  r->region_path = j.value("region", dir + "/shared/region");
  r->arbiter_dir = j.value("arbiterDir", "");
  r->arbitrated = j.value("arbitrated", false);
  s->compute = ComputeFromJson(j.value("compute", json::object()));
  s->pod_ns = j.value("namespace", "");
  s->pod_name = j.value("pod", "");
  s->pod_uid = j.value("podUID", "");
  s->container = j.value("container", "");
  s->priority = j.value("priority", -1);
  *created = j.value("created", int64_t{0});
  if (!j.contains("devices") || !j["devices"].is_array()) return false;
  for (const json& d : j["devices"]) {
    if (!d.is_object()) return false;
    SliceDevice sd;
    sd.uuid = d.value("uuid", "");
    sd.node_index = d.value("index", 0);
    sd.unit = d.value("unit", 0);
    sd.memory_bytes = d.value("memoryBytes", uint64_t{0});
    sd.cores = d.value("cores", 100);
    s->devices.push_back(std::move(sd));
  }
  return !s->pod_uid.empty() && !s->container.empty();
}

std::string MemoryEnv(uint64_t bytes) {
  // HAMi-core reads "<n>m" as MiB and a plain number as bytes.
  if (bytes % (1ULL << 20) == 0) return std::to_string(bytes >> 20) + "m";
  return std::to_string(bytes);
}

}  // namespace

int ContainerSlice::Level() const {
  if (compute.level >= 0) return compute.level;
  int32_t level = shm::kPriorityNormal;  // nvidia.com/priority not given (or not 0 or 1)
  shm::HamiPriorityLevel(priority, &level);
  return level;
}

bool ContainerSlice::HasComputeSettings() const {
  // What makes libvgpu.so gate the slice's launches (docs/compute.md): a time slice alone, or
  // the normal priority, does not.
  if (compute.guarantee >= 0 || compute.weight > 0 || !compute.mode.empty()) return true;
  if (Level() != shm::kPriorityNormal) return true;
  for (const SliceDevice& d : devices) {
    if (d.cores > 0 && d.cores < 100) return true;
  }
  return false;
}

std::string RegionDirName(const ContainerSlice& spec) {
  std::string name = spec.pod_ns + "_" + spec.pod_name + "_" + spec.container;
  // Pod names may be 253 characters long; a file name may not exceed 255. The display name in
  // the arbiter keeps 63 characters anyway.
  if (name.size() > 120) name.resize(120);
  for (char& c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_';
    if (!ok) c = '-';
  }
  return name;
}

std::string LimitsFileText(const SliceRecord& slice, const SliceLayout& layout) {
  const ContainerSlice& spec = slice.spec;
  slice::LimitsFile l;
  l.comments.push_back("vgpu slice limits for pod " + spec.pod_ns + "/" + spec.pod_name +
                       " container " + spec.container);
  l.comments.push_back("written by vgpu node at Allocate; read-only in the container");
  for (const SliceDevice& d : spec.devices) l.devices.push_back({d.uuid, d.memory_bytes, d.cores});
  const slice::ComputeSettings& c = spec.compute;
  l.guarantee = c.guarantee;
  l.weight = c.weight;
  if (c.weight <= 0 && layout.arbitrate_all && !spec.HasComputeSettings()) {
    l.comments.push_back(
        "no compute settings: weight=1 makes the slice take part in its GPUs' "
        "arbitration");
    l.weight = 1;
  }
  l.mode = c.mode;
  if (c.level >= 0 || spec.priority >= 0) l.priority = spec.Level();
  l.time_slice_ns = c.time_slice_ns;
  l.copy_h2d = c.copy_h2d.value_or(0);
  l.copy_d2h = c.copy_d2h.value_or(0);
  l.copy_borrow = c.copy_borrow.value_or(false);
  l.arbiter_dir = slice.arbiter_dir;
  l.context_overhead = layout.context_overhead;
  l.region = slice.region_path;
  if (!c.memory_mode.empty()) ParseMemoryMode(c.memory_mode, &l.memory_mode);
  return slice::LimitsFileText(l);
}

ContainerAllocation BuildAllocation(const SliceRecord& slice, const SliceLayout& layout) {
  ContainerAllocation a;
  const ContainerSlice& spec = slice.spec;
  std::string visible;
  for (size_t i = 0; i < spec.devices.size(); ++i) {
    const SliceDevice& d = spec.devices[i];
    if (i > 0) visible += ",";
    visible += d.uuid;
    a.envs["CUDA_DEVICE_MEMORY_LIMIT_" + std::to_string(i)] = MemoryEnv(d.memory_bytes);
    a.envs["CUDA_DEVICE_SM_LIMIT_" + std::to_string(i)] = std::to_string(d.cores);
  }
  a.envs["NVIDIA_VISIBLE_DEVICES"] = visible;
  // The limits are numbered in the slice's device order. In the node's (NVML, PCI bus) order:
  // CUDA numbers devices fastest first by default, which differs on a node that mixes GPU
  // models; PCI order makes CUDA's ordinals match the limits. In another order (the rank order
  // of a communication pattern, docs/topology.md): CUDA_VISIBLE_DEVICES lists the UUIDs in that
  // order, which is the order CUDA numbers them in.
  if (spec.devices.size() > 1) a.envs["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID";
  const bool node_order = std::is_sorted(
      spec.devices.begin(), spec.devices.end(),
      [](const SliceDevice& x, const SliceDevice& y) { return x.node_index < y.node_index; });
  if (!node_order) a.envs["CUDA_VISIBLE_DEVICES"] = visible;
  if (!spec.devices.empty()) {
    a.envs["CUDA_DEVICE_SM_LIMIT"] = std::to_string(spec.devices[0].cores);
  }
  a.envs["CUDA_DEVICE_MEMORY_SHARED_CACHE"] = slice.region_path;
  // HAMi-core's number when the level is one it has (0 high, 1 normal); the level's name
  // otherwise, since libvgpu.so takes the less important of the file's and the environment's.
  const int level = spec.Level();
  if (spec.priority >= 0 && (level == shm::kPriorityHigh || level == shm::kPriorityNormal)) {
    a.envs["CUDA_TASK_PRIORITY"] = level == shm::kPriorityHigh ? "0" : "1";
  }
  if (spec.compute.level >= 0 || spec.priority >= 0)
    a.envs["VGPU_PRIORITY"] = shm::PriorityName(level);
  if (!slice.arbiter_dir.empty()) a.envs["VGPU_ARBITER_DIR"] = slice.arbiter_dir;
  a.envs["VGPU_LIMITS_FILE"] = layout.container_limits;
  a.envs["VGPU_SLICE"] = spec.pod_ns + "/" + spec.pod_name + "/" + spec.container;

  a.mounts.push_back({layout.container_libvgpu, layout.host_libvgpu, true});
  if (layout.preload) {
    a.mounts.push_back({"/etc/ld.so.preload", layout.root + "/ld.so.preload", true});
  }
  a.mounts.push_back({layout.container_limits, slice.limits_path, true});
  const std::string region_dir = slice.region_path.substr(0, slice.region_path.rfind('/'));
  a.mounts.push_back({region_dir, region_dir, false});
  if (!slice.arbiter_dir.empty()) a.mounts.push_back({slice.arbiter_dir, slice.arbiter_dir, false});
  a.annotations["vgpu.io/slice"] = slice.name;
  return a;
}

SliceManager::SliceManager(SliceLayout layout) : layout_(std::move(layout)) {}

Status SliceManager::Init() {
  std::error_code ec;
  fs::create_directories(layout_.root, ec);
  if (ec) return Status::IoError("create " + layout_.root + ": " + ec.message());
  VGPU_RETURN_IF_ERROR(
      WriteFileAtomically(layout_.root + "/ld.so.preload", layout_.container_libvgpu + "\n", 0444));
  if (!layout_.arbiter_dir.empty()) {
    fs::create_directories(layout_.arbiter_dir, ec);
    if (ec) return Status::IoError("create " + layout_.arbiter_dir + ": " + ec.message());
    // Processes of every container, as any user, create and join the arbiters (like /tmp).
    if (::chmod(layout_.arbiter_dir.c_str(), 01777) != 0) {
      return Status::IoError("chmod " + layout_.arbiter_dir + ": " + std::strerror(errno));
    }
  }
  if (!fs::exists(layout_.host_libvgpu, ec)) {
    VGPU_LOG_WARN(
        "%s does not exist on this host: containers that get GPU units will fail to "
        "start until it is installed",
        layout_.host_libvgpu.c_str());
  }
  return Status::Ok();
}

Result<SliceRecord> SliceManager::Plan(const ContainerSlice& spec, int64_t now_unix) const {
  if (!SafeName(spec.pod_uid)) {
    return Status::InvalidArgument("pod UID \"" + spec.pod_uid + "\" cannot name a directory");
  }
  if (!SafeName(spec.container)) {
    return Status::InvalidArgument("container name \"" + spec.container +
                                   "\" cannot name a directory");
  }
  if (spec.devices.empty()) return Status::InvalidArgument("a slice needs at least one GPU");
  SliceRecord r;
  r.spec = spec;
  r.name = spec.pod_uid + "_" + spec.container;
  r.dir = layout_.root + "/" + r.name;
  r.limits_path = r.dir + "/limits";
  r.region_path = r.dir + "/" + RegionDirName(spec) + "/region";
  r.arbiter_dir = layout_.arbiter_dir;
  r.arbitrated = spec.HasComputeSettings() || layout_.arbitrate_all;
  r.created_unix = now_unix;
  return r;
}

Result<SliceRecord> SliceManager::Create(const ContainerSlice& spec, int64_t now_unix) {
  auto planned = Plan(spec, now_unix);
  if (!planned) return planned.error();
  SliceRecord& r = *planned;
  const std::string region_dir = r.dir + "/" + RegionDirName(spec);
  std::error_code ec;
  fs::create_directories(region_dir, ec);
  if (ec) return Status::IoError("create " + region_dir + ": " + ec.message());
  // Processes in the container may run as any user: the region's directory and the region in it
  // must be writable to them (HAMi's cache file broke for non-root users).
  if (::chmod(region_dir.c_str(), 01777) != 0) {
    return Status::IoError("chmod " + region_dir + ": " + std::strerror(errno));
  }
  // Keep the original creation time when the slice exists (a repeated Allocate).
  {
    std::ifstream in(r.dir + "/slice.json");
    if (in) {
      json old = json::parse(in, nullptr, false);
      if (old.is_object() && old.contains("created") && old["created"].is_number_integer()) {
        r.created_unix = old["created"].get<int64_t>();
      }
    }
  }
  VGPU_RETURN_IF_ERROR(WriteFileAtomically(r.limits_path, LimitsFileText(r, layout_), 0444));
  VGPU_RETURN_IF_ERROR(CreateSliceRegion(r.region_path, spec));
  VGPU_RETURN_IF_ERROR(WriteFileAtomically(r.dir + "/slice.json", RecordToJson(r).dump(2), 0644));
  return planned;
}

std::vector<SliceRecord> SliceManager::List() const {
  std::vector<SliceRecord> out;
  std::error_code ec;
  std::lock_guard<std::mutex> lock(parsed_mu_);
  std::map<std::string, ParsedRecord> seen;
  for (const fs::directory_entry& e : fs::directory_iterator(layout_.root, ec)) {
    if (!e.is_directory(ec)) continue;
    const std::string file = (e.path() / "slice.json").string();
    struct stat st;
    if (::stat(file.c_str(), &st) != 0) continue;
    ParsedRecord p;
    p.ino = st.st_ino;
    p.size = st.st_size;
    p.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
    auto cached = parsed_.find(file);
    if (cached != parsed_.end() && cached->second.ino == p.ino && cached->second.size == p.size &&
        cached->second.mtime_ns == p.mtime_ns) {
      p.record = cached->second.record;
    } else {
      std::ifstream in(file);
      if (!in) continue;
      json j = json::parse(in, nullptr, false);
      if (!RecordFromJson(j, e.path().string(), &p.record)) continue;
      p.record.name = e.path().filename().string();
      p.record.dir = e.path().string();
      p.record.limits_path = p.record.dir + "/limits";
    }
    out.push_back(p.record);
    seen.emplace(file, std::move(p));
  }
  parsed_ = std::move(seen);
  return out;
}

Status SliceManager::Remove(const std::string& name) {
  if (!SafeName(name.substr(0, name.find('_'))) || name.find('/') != std::string::npos ||
      name.find('_') == std::string::npos) {
    return Status::InvalidArgument("\"" + name + "\" is not a slice name");
  }
  std::error_code ec;
  fs::remove_all(layout_.root + "/" + name, ec);
  if (ec) return Status::IoError("remove " + layout_.root + "/" + name + ": " + ec.message());
  return Status::Ok();
}

std::vector<SliceRecord> SliceManager::CollectGarbage(const std::set<std::string>& live_pod_uids,
                                                      int64_t now_unix, int64_t grace_seconds) {
  std::vector<SliceRecord> removed;
  for (SliceRecord& r : List()) {
    if (live_pod_uids.count(r.spec.pod_uid)) continue;
    if (now_unix - r.created_unix < grace_seconds) continue;
    Status s = Remove(r.name);
    if (!s.ok()) {
      VGPU_LOG_WARN("cannot remove slice %s: %s", r.name.c_str(), s.ToString().c_str());
      continue;
    }
    removed.push_back(std::move(r));
  }
  return removed;
}

}  // namespace vgpu::node
