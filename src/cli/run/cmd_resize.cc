// vgpu resize: changes a running slice's memory limit and compute share without restarting its
// processes (shm/region_resize.h: live overrides in the slice's region, which libvgpu.so reads on
// its charge and launch paths; a new share holds from each process's next kernel launch).
//
//   vgpu resize (--slice NAME | --region PATH) [--memory SIZE|unlimited] [--cores PCT]
//               [--priority LEVEL] [--device INDEX] [--state-dir DIR] [--slice-dir DIR] [--json]
//
// --slice finds the slice by name among `vgpu run`'s slices (<state>/slices/NAME, or the one
// NAME-XXXXXX that `vgpu run --name NAME` made) and the node daemon's pod slices (--slice-dir). A
// memory limit can shrink only down to what the slice has in use: a lower one is refused with the
// usage, exit 1, and nothing changes. Bad input (a flag's value, an unknown slice): exit 2 naming
// the flag.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/top/top_sources.h"
#include "common/json_string.h"
#include "common/units.h"
#include "shm/arbiter.h"
#include "shm/priority.h"
#include "slice/registry.h"
#include "slice/resize.h"
#include "slice/slice_dir.h"

namespace vgpu::cli {
namespace {

// The region of slice `slice`: the slice of that exact name, else the one `vgpu run --name
// NAME` made (its directory is NAME-XXXXXX) when there is exactly one.
Result<std::string> FindRegion(const std::string& slice, const std::string& state_dir,
                               const std::string& node_slice_dir) {
  std::string names;
  std::vector<std::string> prefixed;
  for (const TopSlice& s : CollectSlices(state_dir, node_slice_dir)) {
    const std::string& n = s.entry.name;
    if (n == slice) return s.region_path;
    if (s.kind == "run" && n.size() == slice.size() + 7 && n.compare(0, slice.size(), slice) == 0 &&
        n[slice.size()] == '-') {
      prefixed.push_back(s.region_path);
    }
    names += (names.empty() ? "" : ", ") + n;
  }
  if (prefixed.size() == 1) return prefixed[0];
  if (prefixed.size() > 1) {
    return Status::InvalidArgument("--slice: \"" + slice +
                                   "\": " + std::to_string(prefixed.size()) +
                                   " slices of that name run; name one exactly (" + names + ")");
  }
  return Status::NotFound("--slice: \"" + slice + "\": no such slice (" +
                          (names.empty() ? "none running" : "running: " + names) + ")");
}

}  // namespace

int RunResize(int argc, char** argv) {
  std::string slice, region, memory, cores, priority, state_dir = slice::DefaultStateDir(),
                                                      slice_dir;
  int device = -1;
  bool json = false;
  CLI::App app(
      "Changes a running slice's memory limit and compute share without restarting its "
      "processes. A memory limit can shrink only down to what the slice has in use (refused "
      "otherwise, with the usage); a new compute share holds from each process's next launch.",
      "vgpu resize");
  auto* slice_opt = app.add_option("--slice", slice,
                                   "the slice by name (vgpu run's --name, or a pod slice's name)");
  auto* region_opt = app.add_option("--region", region, "the slice's accounting region file");
  slice_opt->excludes(region_opt);
  app.add_option("--memory", memory, "new memory limit per device (4GiB, 4096m, unlimited)");
  app.add_option("--cores", cores, std::string("new maximum compute share: ") + slice::kCoresRange);
  app.add_option("--priority", priority,
                 "new priority at the compute gate: realtime, high, normal, low or idle");
  app.add_option("--device", device, "change only this CUDA device index of the slice")
      ->check(CLI::Range(0, shm::kMaxDevices - 1));
  app.add_option("--state-dir", state_dir, "registry of vgpu run's slices");
  auto* slice_dir_opt = app.add_option(
      "--slice-dir", slice_dir,
      "the node daemon's slice directory (default $VGPU_NODE_SLICE_DIR or /var/lib/vgpu/slices)");
  AllowEmptyValues(app, {"--slice-dir"});
  app.add_flag("--json", json, "print the result as JSON");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (slice.empty() && region.empty()) {
    return ReportStatus("resize", Status::InvalidArgument("give --slice NAME or --region PATH"));
  }
  slice::SliceResize change;
  change.device = device;
  if (!memory.empty()) {
    if (memory == "unlimited") {
      change.memory = shm::kNoLimit;
    } else {
      Result<uint64_t> m = ParseByteSize(memory, "--memory");
      if (!m.has_value()) return ReportStatus("resize", m.error());
      if (*m == 0) {
        return ReportStatus(
            "resize", Status::InvalidArgument("--memory: \"" + memory + "\": must be above 0"));
      }
      change.memory = *m;
    }
  }
  if (!cores.empty()) {
    Result<int> c = slice::ParseCores(cores, "--cores");
    if (!c.has_value()) return ReportStatus("resize", c.error());
    change.cores = *c;
  }
  if (!priority.empty()) {
    int32_t level = -1;
    if (shm::ParsePriority(priority, &level)) change.priority = level;
    if (!change.priority) {
      return ReportStatus("resize", Status::InvalidArgument("--priority: \"" + priority +
                                                            "\": use " + shm::kPriorityChoices));
    }
  }
  if (!change.memory && !change.cores && !change.priority) {
    return ReportStatus("resize", Status::InvalidArgument(
                                      "nothing to change: give --memory, --cores or --priority"));
  }
  if (region.empty()) {
    Result<std::string> found =
        FindRegion(slice, state_dir, NodeSliceDir(slice_dir_opt->count() ? &slice_dir : nullptr));
    if (!found.has_value()) return ReportStatus("resize", found.error());
    region = *found;
  }
  Result<slice::SliceResizeResult> r = slice::ResizeSlice(region, change);
  if (!r.has_value()) {
    if (json) {
      std::printf("{\"ok\":false,\"region\":%s,\"error\":%s}\n", JsonString(region).c_str(),
                  JsonString(r.error().message()).c_str());
    }
    return ReportStatus("resize", r.error());
  }
  if (json) {
    std::printf("{\"ok\":true,\"region\":%s,\"seq\":%llu,\"change\":%s}\n",
                JsonString(region).c_str(), static_cast<unsigned long long>(r->seq),
                JsonString(r->summary).c_str());
  } else {
    std::printf("resized %s: %s\n", slice.empty() ? region.c_str() : slice.c_str(),
                r->summary.c_str());
  }
  return kExitOk;
}

}  // namespace vgpu::cli
