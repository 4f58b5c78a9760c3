#include "cli/top/top_compute.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/clock.h"
#include "shm/arbiter_file.h"
#include "shm/arbiter_policy.h"

namespace vgpu::cli {

std::vector<ArbiterView> ReadArbiters(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<ArbiterView> out;
  std::error_code ec;
  std::vector<std::string> paths;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".arbiter") paths.push_back(e.path().string());
  }
  std::sort(paths.begin(), paths.end());
  uint64_t now = static_cast<uint64_t>(MonotonicClock::Instance().NowNanos());
  for (const std::string& path : paths) {
    ArbiterView v;
    v.path = path;
    shm::ArbiterMapping m;
    shm::RegionError e = shm::ArbiterMapping::OpenExisting(path.c_str(), false, &m);
    if (e != shm::RegionError::kOk) {
      v.error = shm::RegionErrorText(e);
      out.push_back(v);
      continue;
    }
    // A private snapshot: the live file keeps changing under us.
    auto snapshot = std::make_unique<shm::Arbiter>();
    std::memcpy(snapshot.get(), m.arbiter(), sizeof(shm::Arbiter));
    const shm::Arbiter& a = *snapshot;
    v.uuid = std::string(a.header.uuid, strnlen(a.header.uuid, sizeof(a.header.uuid)));
    v.turns = a.header.turns;
    v.preemptions = a.header.preemptions;
    int owner = a.header.owner;
    for (int s = 0; s < shm::kMaxArbiterSlices; ++s) {
      const shm::ArbiterSlice& r = a.slices[s];
      if (r.key == 0) continue;
      ComputeSliceView c;
      c.key = r.key;
      c.name = std::string(r.name, strnlen(r.name, sizeof(r.name)));
      c.config = r.config;
      c.members = r.members;
      c.waiters = r.waiters;
      c.achieved_pct =
          100.0 * static_cast<double>(shm::SliceUsageInWindow(r, now, 1000000000ULL)) / 1e9;
      c.used_ns = r.used_ns;
      c.kernels = r.kernels;
      c.held_ns = r.held_ns;
      c.turns = r.turns;
      c.preempted = r.preempted;
      if (s == owner) v.owner = c.name;
      v.slices.push_back(c);
    }
    out.push_back(std::move(v));
  }
  return out;
}

const ComputeSliceView* FindComputeSlice(const std::vector<ArbiterView>& arbiters,
                                         const std::string& region_path, const std::string& uuid) {
  uint64_t key = shm::SliceKey(region_path.c_str());
  for (const ArbiterView& a : arbiters) {
    if (!uuid.empty() && a.uuid != uuid) continue;
    for (const ComputeSliceView& s : a.slices) {
      if (s.key == key) return &s;
    }
  }
  return nullptr;
}

std::string ComputePolicyText(const shm::ArbiterSliceConfig& c) {
  std::string t = "max " + std::to_string(c.max_pct) + "%";
  if (c.mode == shm::kModeElastic) {
    t += " guarantee " + std::to_string(c.guarantee_pct) + "% elastic";
  } else {
    t += " capped";
  }
  t += ", weight " + std::to_string(c.weight) + ", " + shm::PriorityName(c.level);
  char slice[32];
  std::snprintf(slice, sizeof slice, ", slice %.1fms", static_cast<double>(c.time_slice_ns) / 1e6);
  return t + slice;
}

}  // namespace vgpu::cli
