// vgpu top: a live view of the GPUs and of the slices on this machine, like nvidia-smi for
// slices. GPUs come from the DeviceBackend over NVML (libnvidia-ml.so.1, or the simulated one
// with --sim); slices from the registry of `vgpu run` (slice/registry.h) and from the node
// daemon's slice directory (the containers of Kubernetes pods; top_sources.h), with their
// accounting regions.
//
//   vgpu top [--once] [--json] [--interval SECONDS] [--state-dir DIR] [--slice-dir DIR]
//            [--sim [--sim-config FILE]]
//
// Compute sharing: each slice's configured shares (max, guarantee, mode, weight, priority, time
// slice) and achieved share over the last second, from the per-GPU arbiters (shm/arbiter.h) in
// <state>/arbiter and in the node daemon's arbiter directory, and per GPU the slice holding the
// current turn.
//
// A slice whose region cannot be read (another version, corrupted) is listed with the reason;
// a slice whose `vgpu run` is gone is marked stale, and so are its processes that are still
// alive (they hold memory outside any running `vgpu run`; `vgpu gc` removes the slice once they
// are gone). Nothing is ever modified. The JSON of
// --once --json is documented in docs/intercept.md; keys are only ever added.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/top/top_compute.h"
#include "cli/top/top_keys.h"
#include "cli/top/top_sources.h"
#include "common/json_string.h"
#include "common/units.h"
#include "node/faults/tenant_levels.h"
#include "shm/proc_identity.h"
#include "shm/region_resize.h"
#include "slice/registry.h"

namespace vgpu::cli {
namespace {

// The node daemon's quarantine of a slice (shm/region.h TenantControl; docs/faults.md).
std::string QuarantineLevelName(uint32_t level) {
  return level <= 4 ? node::faults::TenantLevelName(static_cast<node::faults::TenantLevel>(level))
                    : "unknown";
}

std::string QuarantineText(const shm::TenantControl& c) {
  if (c.level == 0 && c.pause_until_ns == 0 && c.launch_failures == 0 && c.oom_refusals == 0) {
    return "";
  }
  std::string t = "  quarantine " + QuarantineLevelName(c.level);
  if (c.share_cap_pct != 0) t += " (share lowered to " + std::to_string(c.share_cap_pct) + "%)";
  if (c.pause_until_ns != 0) t += " (launches paused)";
  t += "\n  failed launches " + std::to_string(c.launch_failures) + "  refused allocations " +
       std::to_string(c.oom_refusals) + "  held launches " + std::to_string(c.held_launches) + "\n";
  return t;
}

std::string QuarantineJson(const shm::TenantControl& c) {
  return ",\"quarantine\":{\"level\":\"" + QuarantineLevelName(c.level) +
         "\",\"share_cap_pct\":" + std::to_string(c.share_cap_pct) +
         ",\"paused\":" + (c.pause_until_ns != 0 ? "true" : "false") +
         ",\"launch_failures\":" + std::to_string(c.launch_failures) +
         ",\"oom_refusals\":" + std::to_string(c.oom_refusals) +
         ",\"held_launches\":" + std::to_string(c.held_launches) + "}";
}

struct ProcessView {
  int pid = 0;
  bool alive = false;
  uint64_t used[shm::kMaxDevices] = {};
  std::string command;
};

std::string ProcessCommand(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline", std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

// A command line for one line of text: the program's base name and as much as fits.
std::string ShortCommand(const std::string& command, size_t width) {
  std::string s = command;
  for (char& c : s) {
    if (c == '\n' || c == '\t') c = ' ';
  }
  size_t space = s.find(' ');
  size_t slash = s.rfind('/', space == std::string::npos ? s.size() : space);
  if (slash != std::string::npos) s = s.substr(slash + 1);
  if (s.size() > width) s = s.substr(0, width - 3) + "...";
  return s;
}

// The text view's width: every line fits an 80-column terminal.
constexpr size_t kWidth = 80;

// `text` cut to `width` bytes with "..." (not inside a UTF-8 sequence); unchanged when it fits.
std::string Cut(const std::string& text, size_t width) {
  if (text.size() <= width) return text;
  size_t n = width >= 3 ? width - 3 : 0;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return text.substr(0, n) + "...";
}

// Every line of `text` cut to kWidth: names, commands and paths of any length stay on one line.
std::string FitWidth(const std::string& text) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    const bool newline = end != std::string::npos;
    if (!newline) end = text.size();
    out += Cut(text.substr(start, end - start), kWidth);
    if (newline) out += '\n';
    start = end + 1;
  }
  return out;
}

// `text` (one line) broken at spaces into lines of at most kWidth, continued with an indent.
std::string Wrap(const std::string& text) {
  std::string out, line;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(start, end - start);
    if (!line.empty() && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = "  ";
    }
    line += (line.empty() || line == "  " ? "" : " ") + word;
    start = end + 1;
  }
  return out + line + "\n";
}

std::vector<ProcessView> Processes(const shm::Region& r) {
  std::vector<ProcessView> out;
  uint64_t my_ns = shm::CurrentProcIdentity().pid_ns;
  for (const shm::ProcSlot& slot : r.slots) {
    if (slot.pid == 0) continue;
    ProcessView p;
    p.pid = slot.pid;
    shm::Liveness liveness = shm::CheckLiveness(slot, my_ns);
    p.alive = liveness != shm::Liveness::kDead;
    for (int d = 0; d < shm::kMaxDevices; ++d) p.used[d] = slot.used[d];
    // A pid of another pid namespace (a container) names another process here.
    if (liveness == shm::Liveness::kAlive) p.command = ProcessCommand(p.pid);
    out.push_back(std::move(p));
  }
  return out;
}

// Devices worth showing for a slice: configured ones, and any with usage.
std::vector<int> SliceDevices(const shm::Region& r) {
  std::vector<int> devs;
  for (int d = 0; d < shm::kMaxDevices; ++d) {
    if (d < static_cast<int>(r.header.config.device_count) || r.header.device_used[d] != 0) {
      devs.push_back(d);
    }
  }
  return devs;
}

std::string SliceState(const slice::SliceEntry& s) {
  if (!s.error.empty()) return "unreadable";
  return s.creator_alive || s.creator_pid == 0 ? "active" : "stale";
}

bool Stale(const slice::SliceEntry& s) { return SliceState(s) == "stale"; }

// "ns/pod/container" for a pod's slice, the registry name for vgpu run's.
std::string SliceTitle(const TopSlice& s) {
  return s.kind == "pod" ? s.ns + "/" + s.pod + "/" + s.container : s.entry.name;
}

std::string ComputeJson(const ComputeSliceView* c) {
  if (c == nullptr) return "null";
  return "{\"max\":" + std::to_string(c->config.max_pct) +
         ",\"guarantee\":" + std::to_string(c->config.guarantee_pct) + ",\"mode\":\"" +
         (c->config.mode == shm::kModeElastic ? "elastic" : "capped") +
         "\",\"weight\":" + std::to_string(c->config.weight) + ",\"priority\":\"" +
         shm::PriorityName(c->config.level) + "\",\"time_slice_ms\":" +
         FormatFixed(static_cast<double>(c->config.time_slice_ns) / 1e6, 2) +
         ",\"achieved_pct\":" + FormatFixed(c->achieved_pct, 2) +
         ",\"used_ns\":" + std::to_string(c->used_ns) +
         ",\"kernels\":" + std::to_string(c->kernels) +
         ",\"held_ns\":" + std::to_string(c->held_ns) + ",\"turns\":" + std::to_string(c->turns) +
         ",\"preempted\":" + std::to_string(c->preempted) +
         ",\"waiting\":" + std::to_string(c->waiters) + "}";
}

// The compute record of device `d` of a slice: by its GPU's UUID, else (one device) any.
const ComputeSliceView* SliceCompute(const std::vector<ArbiterView>& arbiters, const TopSlice& s,
                                     int d) {
  std::string uuid = s.Uuid(d);
  const ComputeSliceView* c = FindComputeSlice(arbiters, s.region_path, uuid);
  if (c == nullptr && d == 0 && s.entry.region.header.config.device_count <= 1) {
    c = FindComputeSlice(arbiters, s.region_path, "");
  }
  return c;
}

std::string TopJson(const std::vector<GpuInfo>& gpus, const std::string& note,
                    const std::vector<TopSlice>& slices, const std::vector<ArbiterView>& arbiters) {
  std::string j = "{\"gpus\":[";
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuInfo& g = gpus[i];
    j += (i ? "," : "");
    j += "{\"index\":" + std::to_string(g.index) + ",\"name\":" + JsonString(g.name) +
         ",\"uuid\":" + JsonString(g.uuid) + ",\"memory_total\":" + std::to_string(g.memory_total) +
         ",\"memory_used\":" + std::to_string(g.memory_used) +
         ",\"utilization_gpu\":" + (g.utilization < 0 ? "null" : std::to_string(g.utilization)) +
         ",\"mig\":[";
    for (size_t k = 0; k < g.mig.size(); ++k) {
      const device::MigInstance& m = g.mig[k];
      j += (k ? "," : "");
      j += "{\"profile\":" + JsonString(m.profile) + ",\"start\":" + std::to_string(m.start) +
           ",\"gi_id\":" + std::to_string(m.gi_id) + ",\"uuid\":" + JsonString(m.uuid) +
           ",\"memory_total\":" + std::to_string(m.memory_bytes) +
           ",\"sm_count\":" + std::to_string(m.sm_count) + ",\"slices\":[";
      bool first = true;
      for (const TopSlice& t : slices) {
        if (m.uuid.empty() || std::find(t.uuids.begin(), t.uuids.end(), m.uuid) == t.uuids.end()) {
          continue;
        }
        j += (first ? "" : ",") + JsonString(t.entry.name);
        first = false;
      }
      j += "]}";
    }
    j += "]}";
  }
  j += "],\"nvml_note\":" + (note.empty() ? std::string("null") : JsonString(note));
  j += ",\"slices\":[";
  for (size_t i = 0; i < slices.size(); ++i) {
    const TopSlice& t = slices[i];
    const slice::SliceEntry& s = t.entry;
    j += (i ? "," : "");
    j += "{\"name\":" + JsonString(s.name) + ",\"path\":" + JsonString(s.dir) +
         ",\"command\":" + JsonString(s.command) +
         ",\"creator_pid\":" + std::to_string(s.creator_pid) +
         ",\"state\":" + JsonString(SliceState(s)) + ",\"kind\":" + JsonString(t.kind) +
         ",\"region\":" + JsonString(t.region_path);
    if (t.kind == "pod") {
      j += ",\"pod\":{\"namespace\":" + JsonString(t.ns) + ",\"name\":" + JsonString(t.pod) +
           ",\"uid\":" + JsonString(t.pod_uid) + ",\"container\":" + JsonString(t.container) + "}";
    }
    if (!s.error.empty()) {
      j += ",\"error\":" + JsonString(s.error) + "}";
      continue;
    }
    const shm::RegionHeader& h = s.region.header;
    j += QuarantineJson(h.control);
    // Limits in force: a live resize (shm/region_resize.h) overrides the config.
    j += ",\"priority\":" + JsonString(shm::PriorityName(shm::PriorityInForce(&s.region))) +
         ",\"devices\":[";
    bool first = true;
    for (int d : SliceDevices(s.region)) {
      j += first ? "" : ",";
      first = false;
      uint64_t limit = shm::MemoryLimitInForce(&s.region, d);
      uint32_t sm = shm::SmLimitInForce(&s.region, d);
      j += "{\"index\":" + std::to_string(d) + ",\"uuid\":" + JsonString(t.Uuid(d)) +
           ",\"memory_limit\":" + (limit == shm::kNoLimit ? "null" : std::to_string(limit)) +
           ",\"memory_used\":" + std::to_string(h.device_used[d]) +
           ",\"cores\":" + (sm == 0 ? "null" : std::to_string(sm)) +
           ",\"compute\":" + ComputeJson(SliceCompute(arbiters, t, d)) + "}";
    }
    j += "],\"processes\":[";
    std::vector<ProcessView> procs = Processes(s.region);
    for (size_t p = 0; p < procs.size(); ++p) {
      j += (p ? "," : "");
      j += "{\"pid\":" + std::to_string(procs[p].pid) +
           ",\"alive\":" + (procs[p].alive ? "true" : "false") + ",\"memory_used\":[";
      for (int d = 0; d < shm::kMaxDevices; ++d) {
        j += (d ? "," : "") + std::to_string(procs[p].used[d]);
      }
      j += "],\"command\":" + JsonString(procs[p].command) +
           ",\"stale\":" + (procs[p].alive && Stale(s) ? "true" : "false") + "}";
    }
    j += "]}";
  }
  j += "],\"arbiters\":[";
  for (size_t i = 0; i < arbiters.size(); ++i) {
    const ArbiterView& a = arbiters[i];
    j += (i ? "," : "");
    j += "{\"uuid\":" + JsonString(a.uuid) + ",\"path\":" + JsonString(a.path) +
         ",\"error\":" + (a.error.empty() ? "null" : JsonString(a.error)) +
         ",\"owner\":" + (a.owner.empty() ? "null" : JsonString(a.owner)) +
         ",\"turns\":" + std::to_string(a.turns) +
         ",\"preemptions\":" + std::to_string(a.preemptions) + ",\"slices\":[";
    for (size_t k = 0; k < a.slices.size(); ++k) {
      j += (k ? "," : "");
      j += "{\"name\":" + JsonString(a.slices[k].name) +
           ",\"members\":" + std::to_string(a.slices[k].members) +
           ",\"compute\":" + ComputeJson(&a.slices[k]) + "}";
    }
    j += "]}";
  }
  j += "]}\n";
  return j;
}

std::string Text(const std::vector<GpuInfo>& gpus, const std::string& note,
                 const std::vector<TopSlice>& slices, const std::string& state_dir,
                 const std::string& node_slice_dir, const std::vector<ArbiterView>& arbiters) {
  std::string t;
  char line[512];
  if (gpus.empty()) t += Wrap("GPUs: " + (note.empty() ? std::string("none found") : note));
  for (const GpuInfo& g : gpus) {
    // The UUID whole; the name cut to what is left of the line.
    const std::string head = "GPU " + std::to_string(g.index) + "  ";
    const size_t room =
        kWidth > head.size() + 1 + g.uuid.size() ? kWidth - head.size() - 1 - g.uuid.size() : 8;
    std::snprintf(line, sizeof line, "%s%-*s %s\n       memory %s / %s   utilization %s\n",
                  head.c_str(), static_cast<int>(room), Cut(g.name, room).c_str(), g.uuid.c_str(),
                  FormatBytes(g.memory_used).c_str(), FormatBytes(g.memory_total).c_str(),
                  g.utilization < 0 ? "n/a" : (std::to_string(g.utilization) + "%").c_str());
    t += line;
    // MIG instances, each with the slices (containers) inside it.
    for (const device::MigInstance& m : g.mig) {
      std::snprintf(line, sizeof line, "       MIG %-11s @%d  %s, %d SMs\n         %s\n",
                    m.profile.c_str(), m.start, FormatBytes(m.memory_bytes).c_str(), m.sm_count,
                    m.uuid.empty() ? "(no compute instance)" : m.uuid.c_str());
      t += line;
      for (const TopSlice& top : slices) {
        if (m.uuid.empty() ||
            std::find(top.uuids.begin(), top.uuids.end(), m.uuid) == top.uuids.end()) {
          continue;
        }
        t += "         slice " + SliceTitle(top) + "\n";
      }
    }
    for (const ArbiterView& a : arbiters) {
      if (a.uuid != g.uuid || !a.error.empty()) continue;
      std::snprintf(line, sizeof line,
                    "       compute: %zu slice(s), %llu turns, %llu preemptions, turn held by %s\n",
                    a.slices.size(), static_cast<unsigned long long>(a.turns),
                    static_cast<unsigned long long>(a.preemptions),
                    a.owner.empty() ? "none" : a.owner.c_str());
      t += line;
    }
  }
  t += "\n";
  if (slices.empty()) {
    t += "No slices (start one with vgpu run) in " + state_dir + "/slices";
    t += node_slice_dir.empty() ? ".\n" : "\n  or in " + node_slice_dir + " (Kubernetes pods).\n";
    return FitWidth(t);
  }
  for (const TopSlice& top : slices) {
    const slice::SliceEntry& s = top.entry;
    // "SLICE NAME  [STATE]  COMMAND" (a pod: "pod UID"): the state always shows; a long name
    // is cut to leave it and 16 columns of the rest.
    const std::string state = "  [" + SliceState(s) + "]  ";
    const std::string rest = top.kind == "pod" ? "pod " + top.pod_uid : s.command;
    const size_t name_room = kWidth - 6 - state.size() - 16;
    const std::string head = "SLICE " + Cut(SliceTitle(top), name_room) + state;
    std::snprintf(
        line, sizeof line, "%s%s\n", head.c_str(),
        top.kind == "pod" ? rest.c_str() : ShortCommand(rest, kWidth - head.size()).c_str());
    t += line;
    if (!s.error.empty()) {
      t += "  region: " + s.error + "\n";
      continue;
    }
    if (Stale(s)) {
      t += "  its vgpu run (pid " + std::to_string(s.creator_pid) +
           ") is gone; vgpu gc removes the slice\n  once its processes have ended\n";
    }
    const shm::RegionHeader& h = s.region.header;
    t += QuarantineText(h.control);
    for (int d : SliceDevices(s.region)) {
      uint64_t limit = shm::MemoryLimitInForce(&s.region, d);
      uint32_t sm = shm::SmLimitInForce(&s.region, d);
      std::string limit_text = limit == shm::kNoLimit ? "no limit" : FormatBytes(limit);
      std::string pct = limit == shm::kNoLimit || limit == 0
                            ? ""
                            : " (" + std::to_string(h.device_used[d] * 100 / limit) + "%)";
      std::string cores = sm == 0 ? "all" : std::to_string(sm) + "%";
      std::snprintf(line, sizeof line, "  device %d  memory %s / %s%s  cores %s  priority %s\n", d,
                    FormatBytes(h.device_used[d]).c_str(), limit_text.c_str(), pct.c_str(),
                    cores.c_str(), shm::PriorityName(shm::PriorityInForce(&s.region)));
      t += line;
      if (const ComputeSliceView* c = SliceCompute(arbiters, top, d)) {
        std::snprintf(line, sizeof line,
                      "    compute %s\n    achieved %.1f%%  waited %.2f s in total\n",
                      ComputePolicyText(c->config).c_str(), c->achieved_pct,
                      static_cast<double>(c->held_ns) / 1e9);
        t += line;
      }
    }
    std::vector<ProcessView> procs = Processes(s.region);
    if (procs.empty()) t += "  no processes using the GPU\n";
    for (const ProcessView& p : procs) {
      uint64_t total = 0;
      for (uint64_t u : p.used) total += u;
      const char* state = !p.alive ? "(exited) " : Stale(s) ? "(stale) " : "";
      // "  pid N  SIZE  [state] " takes 26 columns and the state; the command gets the rest.
      const size_t room = kWidth - 26 - std::strlen(state);
      std::snprintf(line, sizeof line, "  pid %-8d %-10s %s%s\n", p.pid, FormatBytes(total).c_str(),
                    state,
                    p.command.empty() && p.alive && top.kind == "pod"
                        ? "(in the container's pid namespace)"
                        : ShortCommand(p.command, room).c_str());
      t += line;
    }
  }
  return FitWidth(t);
}

volatile sig_atomic_t g_stop = 0;
void Stop(int) { g_stop = 1; }

}  // namespace

int RunTop(int argc, char** argv) {
  bool once = false, json = false, sim = false;
  double interval = 1.0;
  std::string state_dir = slice::DefaultStateDir();
  std::string slice_dir;
  CLI::App app(
      "Shows the GPUs and the slices on this machine (vgpu run's and the Kubernetes pods' of the "
      "node daemon): memory used and limit, compute share, processes, utilization. In the live "
      "view, q quits and r refreshes at once (Ctrl-C quits too); the terminal is restored on "
      "exit.",
      "vgpu top");
  app.add_flag("--once", once, "print one view and exit");
  app.add_flag("--json", json, "JSON output (with --once for scripts; docs/intercept.md)");
  app.add_option("--interval", interval, "seconds between refreshes (default 1)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--state-dir", state_dir,
                 "registry of vgpu run's slices (default $VGPU_STATE_DIR, "
                 "$XDG_RUNTIME_DIR/vgpu, /run/vgpu or /tmp/vgpu-UID)");
  CLI::Option* slice_dir_flag = app.add_option(
      "--slice-dir", slice_dir,
      "the node daemon's slice directory (vgpu node --slice-dir); default $VGPU_NODE_SLICE_DIR, "
      "else /var/lib/vgpu/slices when it exists; 'none' to leave pods out");
  app.add_flag("--sim", sim, "read the simulated GPU's NVML (build/lib/simgpu)");
  std::string sim_config;
  app.add_option("--sim-config", sim_config, "Simulated devices (see docs/simgpu.md); needs --sim");
  AllowEmptyValues(app, {"--slice-dir"});
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (Status s = UseSimConfig(sim, sim_config); !s.ok()) return ReportStatus("top", s);
  const std::string node_slice_dir = NodeSliceDir(slice_dir_flag->count() ? &slice_dir : nullptr);
  std::string nvml = "libnvidia-ml.so.1";
  if (sim) {
    Result<std::string> sim_dir = SimulatedGpuDir("--sim");
    if (!sim_dir) return ReportStatus("top", sim_dir.error());
    nvml = *sim_dir + "/libnvidia-ml.so.1";
  }
  signal(SIGINT, Stop);
  signal(SIGTERM, Stop);
  signal(SIGHUP, Stop);
  signal(SIGQUIT, Stop);
  bool tty = isatty(1) == 1;
  TopGpus gpu_source(nvml);
  // The live view: keys, and the terminal restored at the end (top_keys.h).
  std::optional<TopKeys> keys;
  if (!once && !json) keys.emplace();
  while (!g_stop) {
    const std::string note = gpu_source.note().empty() ? "" : gpu_source.note() + NoDriverHint(sim);
    std::vector<GpuInfo> gpus = gpu_source.Read();
    std::vector<TopSlice> slices = CollectSlices(state_dir, node_slice_dir);
    // The arbiters of vgpu run's registry, then every other directory a slice names.
    std::vector<std::string> dirs = {state_dir + "/arbiter"};
    for (const TopSlice& s : slices) {
      if (!s.arbiter_dir.empty() &&
          std::find(dirs.begin(), dirs.end(), s.arbiter_dir) == dirs.end()) {
        dirs.push_back(s.arbiter_dir);
      }
    }
    std::vector<ArbiterView> arbiters;
    for (const std::string& dir : dirs) {
      for (ArbiterView& a : ReadArbiters(dir)) arbiters.push_back(std::move(a));
    }
    std::string view = json ? TopJson(gpus, note, slices, arbiters)
                            : Text(gpus, note, slices, state_dir, node_slice_dir, arbiters);
    if (!once && tty && !json) std::fputs("\033[H\033[2J", stdout);
    if (keys) view += std::string("\n") + TopKeyHelp(keys->reads_keys());
    std::fputs(view.c_str(), stdout);
    std::fflush(stdout);
    if (once) break;
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval);
    while (!g_stop && std::chrono::steady_clock::now() < until) {
      int key = keys ? keys->WaitForKey(50) : 0;
      if (!keys) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      if (key == 'q' || key == 'Q') g_stop = 1;
      if (key == 'r' || key == 'R') break;
    }
  }
  return kExitOk;
}

}  // namespace vgpu::cli
