// vgpu top: a live view of the GPUs and of the slices on this machine, like nvidia-smi for
// slices. GPUs come from NVML (libnvidia-ml.so.1, or the simulated one with --sim); slices from
// the registry of active slices (shm/slice_registry.h) and their accounting regions.
//
//   vgpu top [--once] [--json] [--interval SECONDS] [--state-dir DIR] [--sim]
//
// Compute sharing: each slice's configured shares (max, guarantee, mode, weight, priority, time
// slice) and achieved share over the last second, from the per-GPU arbiters in <state>/arbiter
// (shm/arbiter.h), and per GPU the slice holding the current turn.
//
// A slice whose region cannot be read (another version, corrupted) is listed with the reason;
// a slice whose `vgpu run` is gone is marked stale. Nothing is ever modified.
#include <dlfcn.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/top_compute.h"
#include "common/nvml_api.h"
#include "common/units.h"
#include "shm/proc_identity.h"
#include "shm/slice_registry.h"

namespace vgpu::cli {
namespace {

struct GpuInfo {
  unsigned index = 0;
  std::string name;
  std::string uuid;
  uint64_t memory_total = 0;
  uint64_t memory_used = 0;
  int utilization = -1;  // percent, -1 unknown
};

// NVML, opened once for the life of the command (so that a live view initialises it once).
class Nvml {
 public:
  explicit Nvml(const std::string& path) : path_(path) {
    lib_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib_ == nullptr) {
      note_ = "NVML not available (" + path + ")";
      return;
    }
    auto init = reinterpret_cast<nvmlInit_v2_fn>(Sym("nvmlInit_v2"));
    count_ = reinterpret_cast<nvmlDeviceGetCount_v2_fn>(Sym("nvmlDeviceGetCount_v2"));
    handle_ =
        reinterpret_cast<nvmlDeviceGetHandleByIndex_v2_fn>(Sym("nvmlDeviceGetHandleByIndex_v2"));
    name_ = reinterpret_cast<nvmlDeviceGetName_fn>(Sym("nvmlDeviceGetName"));
    uuid_ = reinterpret_cast<nvmlDeviceGetUUID_fn>(Sym("nvmlDeviceGetUUID"));
    memory_ = reinterpret_cast<nvmlDeviceGetMemoryInfo_fn>(Sym("nvmlDeviceGetMemoryInfo"));
    util_ =
        reinterpret_cast<nvmlDeviceGetUtilizationRates_fn>(Sym("nvmlDeviceGetUtilizationRates"));
    shutdown_ = reinterpret_cast<nvmlShutdown_fn>(Sym("nvmlShutdown"));
    if (init == nullptr || count_ == nullptr || handle_ == nullptr || init() != NVML_SUCCESS) {
      note_ = "NVML did not initialise (" + path + ")";
      count_ = nullptr;
    }
  }
  ~Nvml() {
    if (count_ != nullptr && shutdown_ != nullptr) shutdown_();
    if (lib_ != nullptr) dlclose(lib_);
  }
  Nvml(const Nvml&) = delete;
  Nvml& operator=(const Nvml&) = delete;

  const std::string& note() const { return note_; }

  std::vector<GpuInfo> Read() const {
    std::vector<GpuInfo> gpus;
    unsigned count = 0;
    if (count_ == nullptr || count_(&count) != NVML_SUCCESS) return gpus;
    for (unsigned i = 0; i < count; ++i) {
      nvmlDevice_t dev;
      if (handle_(i, &dev) != NVML_SUCCESS) continue;
      GpuInfo g;
      g.index = i;
      char buf[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
      if (name_ != nullptr && name_(dev, buf, sizeof buf) == NVML_SUCCESS) g.name = buf;
      if (uuid_ != nullptr && uuid_(dev, buf, sizeof buf) == NVML_SUCCESS) g.uuid = buf;
      nvmlMemory_t m{};
      if (memory_ != nullptr && memory_(dev, &m) == NVML_SUCCESS) {
        g.memory_total = m.total;
        g.memory_used = m.used;
      }
      nvmlUtilization_t u{};
      if (util_ != nullptr && util_(dev, &u) == NVML_SUCCESS) g.utilization = u.gpu;
      gpus.push_back(g);
    }
    return gpus;
  }

 private:
  void* Sym(const char* name) { return dlsym(lib_, name); }

  std::string path_;
  std::string note_;
  void* lib_ = nullptr;
  nvmlDeviceGetCount_v2_fn count_ = nullptr;
  nvmlDeviceGetHandleByIndex_v2_fn handle_ = nullptr;
  nvmlDeviceGetName_fn name_ = nullptr;
  nvmlDeviceGetUUID_fn uuid_ = nullptr;
  nvmlDeviceGetMemoryInfo_fn memory_ = nullptr;
  nvmlDeviceGetUtilizationRates_fn util_ = nullptr;
  nvmlShutdown_fn shutdown_ = nullptr;
};

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

std::vector<ProcessView> Processes(const shm::Region& r) {
  std::vector<ProcessView> out;
  uint64_t my_ns = shm::CurrentProcIdentity().pid_ns;
  for (const shm::ProcSlot& slot : r.slots) {
    if (slot.pid == 0) continue;
    ProcessView p;
    p.pid = slot.pid;
    p.alive = shm::CheckLiveness(slot, my_ns) != shm::Liveness::kDead;
    for (int d = 0; d < shm::kMaxDevices; ++d) p.used[d] = slot.used[d];
    if (p.alive) p.command = ProcessCommand(p.pid);
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

std::string SliceState(const shm::SliceEntry& s) {
  if (!s.error.empty()) return "unreadable";
  return s.creator_alive || s.creator_pid == 0 ? "active" : "stale";
}

std::string JsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string ComputeJson(const ComputeSliceView* c) {
  if (c == nullptr) return "null";
  return "{\"max\":" + std::to_string(c->config.max_pct) +
         ",\"guarantee\":" + std::to_string(c->config.guarantee_pct) + ",\"mode\":\"" +
         (c->config.mode == shm::kModeElastic ? "elastic" : "capped") +
         "\",\"weight\":" + std::to_string(c->config.weight) + ",\"priority\":\"" +
         shm::PriorityName(c->config.level) +
         "\",\"time_slice_ms\":" + Num(static_cast<double>(c->config.time_slice_ns) / 1e6) +
         ",\"achieved_pct\":" + Num(c->achieved_pct) +
         ",\"used_ns\":" + std::to_string(c->used_ns) +
         ",\"kernels\":" + std::to_string(c->kernels) +
         ",\"held_ns\":" + std::to_string(c->held_ns) + ",\"turns\":" + std::to_string(c->turns) +
         ",\"preempted\":" + std::to_string(c->preempted) +
         ",\"waiting\":" + std::to_string(c->waiters) + "}";
}

// The compute record of device `d` of a slice: by the UUID its processes recorded, else any.
const ComputeSliceView* SliceCompute(const std::vector<ArbiterView>& arbiters,
                                     const shm::SliceEntry& s, int d) {
  std::string region = s.dir + "/region";
  std::string uuid(s.region.header.uuid[d], strnlen(s.region.header.uuid[d], shm::kUuidLength));
  const ComputeSliceView* c = FindComputeSlice(arbiters, region, uuid);
  if (c == nullptr && d == 0 && s.region.header.config.device_count <= 1) {
    c = FindComputeSlice(arbiters, region, "");
  }
  return c;
}

std::string Json(const std::vector<GpuInfo>& gpus, const std::string& note,
                 const std::vector<shm::SliceEntry>& slices,
                 const std::vector<ArbiterView>& arbiters) {
  std::string j = "{\"gpus\":[";
  for (size_t i = 0; i < gpus.size(); ++i) {
    const GpuInfo& g = gpus[i];
    j += (i ? "," : "");
    j += "{\"index\":" + std::to_string(g.index) + ",\"name\":" + JsonString(g.name) +
         ",\"uuid\":" + JsonString(g.uuid) + ",\"memory_total\":" + std::to_string(g.memory_total) +
         ",\"memory_used\":" + std::to_string(g.memory_used) +
         ",\"utilization_gpu\":" + (g.utilization < 0 ? "null" : std::to_string(g.utilization)) +
         "}";
  }
  j += "],\"nvml_note\":" + (note.empty() ? std::string("null") : JsonString(note));
  j += ",\"slices\":[";
  for (size_t i = 0; i < slices.size(); ++i) {
    const shm::SliceEntry& s = slices[i];
    j += (i ? "," : "");
    j += "{\"name\":" + JsonString(s.name) + ",\"path\":" + JsonString(s.dir) +
         ",\"command\":" + JsonString(s.command) +
         ",\"creator_pid\":" + std::to_string(s.creator_pid) +
         ",\"state\":" + JsonString(SliceState(s));
    if (!s.error.empty()) {
      j += ",\"error\":" + JsonString(s.error) + "}";
      continue;
    }
    const shm::RegionHeader& h = s.region.header;
    j += ",\"priority\":" + JsonString(shm::PriorityName(h.config.priority)) + ",\"devices\":[";
    bool first = true;
    for (int d : SliceDevices(s.region)) {
      j += first ? "" : ",";
      first = false;
      uint64_t limit = h.config.memory_limit[d];
      j += "{\"index\":" + std::to_string(d) + ",\"uuid\":" + JsonString(h.uuid[d]) +
           ",\"memory_limit\":" + (limit == shm::kNoLimit ? "null" : std::to_string(limit)) +
           ",\"memory_used\":" + std::to_string(h.device_used[d]) + ",\"cores\":" +
           (h.config.sm_limit[d] == 0 ? "null" : std::to_string(h.config.sm_limit[d])) +
           ",\"compute\":" + ComputeJson(SliceCompute(arbiters, s, d)) + "}";
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
      j += "],\"command\":" + JsonString(procs[p].command) + "}";
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
                 const std::vector<shm::SliceEntry>& slices, const std::string& state_dir,
                 const std::vector<ArbiterView>& arbiters) {
  std::string t;
  char line[512];
  if (gpus.empty()) t += "GPUs: " + (note.empty() ? std::string("none found") : note) + "\n";
  for (const GpuInfo& g : gpus) {
    std::snprintf(line, sizeof line, "GPU %u  %-32s %s\n       memory %s / %s   utilization %s\n",
                  g.index, g.name.c_str(), g.uuid.c_str(), FormatBytes(g.memory_used).c_str(),
                  FormatBytes(g.memory_total).c_str(),
                  g.utilization < 0 ? "n/a" : (std::to_string(g.utilization) + "%").c_str());
    t += line;
    for (const ArbiterView& a : arbiters) {
      if (a.uuid != g.uuid || !a.error.empty()) continue;
      std::snprintf(line, sizeof line,
                    "       compute: %zu slice(s), turn held by %s, %llu turns, %llu preemptions\n",
                    a.slices.size(), a.owner.empty() ? "none" : a.owner.c_str(),
                    static_cast<unsigned long long>(a.turns),
                    static_cast<unsigned long long>(a.preemptions));
      t += line;
    }
  }
  t += "\n";
  if (slices.empty()) {
    t += "No slices in " + state_dir + "/slices (start one with vgpu run).\n";
    return t;
  }
  for (const shm::SliceEntry& s : slices) {
    std::snprintf(line, sizeof line, "SLICE %s  [%s]  %s\n", s.name.c_str(), SliceState(s).c_str(),
                  ShortCommand(s.command, 70).c_str());
    t += line;
    if (!s.error.empty()) {
      t += "  region: " + s.error + "\n";
      continue;
    }
    const shm::RegionHeader& h = s.region.header;
    for (int d : SliceDevices(s.region)) {
      uint64_t limit = h.config.memory_limit[d];
      std::string limit_text = limit == shm::kNoLimit ? "no limit" : FormatBytes(limit);
      std::string pct = limit == shm::kNoLimit || limit == 0
                            ? ""
                            : " (" + std::to_string(h.device_used[d] * 100 / limit) + "%)";
      std::string cores =
          h.config.sm_limit[d] == 0 ? "all" : std::to_string(h.config.sm_limit[d]) + "%";
      std::snprintf(line, sizeof line, "  device %d  memory %s / %s%s  cores %s  priority %s\n", d,
                    FormatBytes(h.device_used[d]).c_str(), limit_text.c_str(), pct.c_str(),
                    cores.c_str(), shm::PriorityName(h.config.priority));
      t += line;
      if (const ComputeSliceView* c = SliceCompute(arbiters, s, d)) {
        std::snprintf(line, sizeof line,
                      "            compute %s  achieved %.1f%%  waited %.2f s in total\n",
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
      std::snprintf(line, sizeof line, "  pid %-8d %-10s %s%s\n", p.pid, FormatBytes(total).c_str(),
                    p.alive ? "" : "(exited) ", ShortCommand(p.command, 60).c_str());
      t += line;
    }
  }
  return t;
}

volatile sig_atomic_t g_stop = 0;
void Stop(int) { g_stop = 1; }

}  // namespace

int RunTop(int argc, char** argv) {
  bool once = false, json = false, sim = false;
  double interval = 1.0;
  std::string state_dir = shm::DefaultStateDir();
  CLI::App app(
      "Shows the GPUs and the slices on this machine: memory used and limit, compute "
      "share, processes, utilization.",
      "vgpu top");
  app.add_flag("--once", once, "print one view and exit");
  app.add_flag("--json", json, "JSON output (with --once for scripts)");
  app.add_option("--interval", interval, "seconds between refreshes (default 1)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--state-dir", state_dir,
                 "registry of slices (default $VGPU_STATE_DIR, "
                 "$XDG_RUNTIME_DIR/vgpu, /run/vgpu or /tmp/vgpu-UID)");
  app.add_flag("--sim", sim, "read the simulated GPU's NVML (build/lib/simgpu)");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  std::string nvml = sim ? LibraryDir() + "/simgpu/libnvidia-ml.so.1" : "libnvidia-ml.so.1";
  signal(SIGINT, Stop);
  signal(SIGTERM, Stop);
  bool tty = isatty(1) == 1;
  Nvml nvml_lib(nvml);
  while (!g_stop) {
    const std::string& note = nvml_lib.note();
    std::vector<GpuInfo> gpus = nvml_lib.Read();
    std::vector<shm::SliceEntry> slices = shm::ReadSlices(state_dir);
    std::vector<ArbiterView> arbiters = ReadArbiters(state_dir + "/arbiter");
    std::string view =
        json ? Json(gpus, note, slices, arbiters) : Text(gpus, note, slices, state_dir, arbiters);
    if (!once && tty && !json) std::fputs("\033[H\033[2J", stdout);
    std::fputs(view.c_str(), stdout);
    std::fflush(stdout);
    if (once) break;
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(interval);
    while (!g_stop && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  return kExitOk;
}

}  // namespace vgpu::cli
