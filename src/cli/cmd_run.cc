// vgpu run: runs a command in a GPU slice on this machine.
//
//   vgpu run [--sim] [--memory SIZE] [--cores PCT] [--priority LEVEL] [--device LIST]
//            [--name NAME] -- CMD ARGS...
//
// Creates a private slice directory in the registry (<state>/slices/<name>, see
// shm/slice_registry.h) holding a read-only limits file and the slice's accounting region,
// preloads libvgpu.so (found next to the executable: <exe>/../lib/libvgpu.so), runs CMD, and
// removes the slice when CMD ends. With --sim the simulated GPU's libraries
// (<exe>/../lib/simgpu) come first on the library path. The exit status is CMD's (128 + signal
// when it was killed; 127 when it cannot be run). SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed
// on to CMD.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/units.h"
#include "shm/region_file.h"
#include "shm/slice_registry.h"

extern char** environ;

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  bool sim = false;
  std::string memory;
  std::string cores;
  std::string priority;
  std::string devices;
  std::string name;
  std::vector<std::string> command;
};

struct SliceSpec {
  uint64_t memory = shm::kNoLimit;
  int cores = 0;  // 0: no compute limit
  int priority = 1;
  std::vector<std::string> devices;
};

Result<SliceSpec> Validate(const RunOptions& o) {
  SliceSpec s;
  if (!o.memory.empty()) {
    Result<uint64_t> m = ParseByteSize(o.memory, "--memory");
    if (!m.has_value()) return m.error();
    if (*m == 0) return Status::InvalidArgument("--memory: \"" + o.memory + "\": must be above 0");
    s.memory = *m;
  }
  if (!o.cores.empty()) {
    Result<int> c = ParsePercent(o.cores, "--cores");
    if (!c.has_value()) return c.error();
    if (*c == 0) return Status::InvalidArgument("--cores: \"" + o.cores + "\": must be 1-100");
    s.cores = *c == 100 ? 0 : *c;
  }
  if (!o.priority.empty()) {
    if (o.priority == "high" || o.priority == "0") {
      s.priority = 0;
    } else if (o.priority == "low" || o.priority == "1") {
      s.priority = 1;
    } else {
      return Status::InvalidArgument("--priority: \"" + o.priority + "\": use high (0) or low (1)");
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
        return Status::InvalidArgument("--device: \"" + d +
                                       "\": use device indices or GPU- UUIDs, e.g. 0,1");
      }
      s.devices.push_back(d);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    if (s.devices.size() > static_cast<size_t>(shm::kMaxDevices)) {
      return Status::InvalidArgument("--device: at most " + std::to_string(shm::kMaxDevices) +
                                     " devices");
    }
  }
  if (o.command.empty()) {
    return Status::InvalidArgument("no command given (usage: vgpu run [options] -- CMD ARGS...)");
  }
  return s;
}

std::string JoinCommand(const std::vector<std::string>& command) {
  std::string s;
  for (const std::string& a : command) {
    if (!s.empty()) s += ' ';
    s += a;
  }
  return s;
}

// Creates <state>/slices/<name>-XXXXXX (mode 0700) and returns its path.
Result<std::string> MakeSliceDir(const std::string& name) {
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
  return std::string(buf.data());
}

Status WriteLimits(const std::string& dir, const SliceSpec& s, bool sim,
                   const std::string& command) {
  std::ofstream out(dir + "/limits");
  std::string comment = command.substr(0, 200);
  for (char& c : comment) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  out << "# limits of this slice, written by vgpu run for: " << comment << "\n";
  if (s.memory != shm::kNoLimit) out << "memory=" << s.memory << "\n";
  if (s.cores != 0) out << "cores=" << s.cores << "\n";
  out << "priority=" << s.priority << "\n";
  out << "region=" << dir << "/region\n";
  // The simulated GPU's contexts take no device memory of their own.
  if (sim) out << "context_overhead=0\n";
  out.close();
  if (!out) return Status::IoError("cannot write " + dir + "/limits");
  chmod((dir + "/limits").c_str(), 0444);
  return Status::Ok();
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

std::vector<std::string> ChildEnvironment(const std::string& dir, const SliceSpec& s, bool sim,
                                          const std::string& libvgpu,
                                          const std::string& simgpu_dir) {
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
                     base.rfind("libubsan", 0) == 0 || base.rfind("libhwasan", 0) == 0;
    (sanitizer ? first : rest) += entry + " ";
  }
  std::vector<std::pair<std::string, std::string>> set = {
      {"LD_PRELOAD", first + libvgpu + (rest.empty() ? "" : " " + rest)},
      {"VGPU_LIMITS_FILE", dir + "/limits"},
      {"CUDA_DEVICE_MEMORY_SHARED_CACHE", dir + "/region"},
  };
  if (!s.devices.empty()) {
    std::string list;
    for (const std::string& d : s.devices) list += (list.empty() ? "" : ",") + d;
    set.push_back({"CUDA_VISIBLE_DEVICES", list});
  }
  if (sim) {
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

volatile sig_atomic_t g_child = 0;

void ForwardSignal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

// Runs the command and returns its exit status (128 + signal if killed, 127 if it could not be
// started).
int RunChild(const std::vector<std::string>& command, std::vector<std::string> env) {
  std::vector<char*> argv;
  std::vector<std::string> args = command;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // Report exec failures through a close-on-exec pipe.
  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return kExitFailure;
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) return kExitFailure;
  if (child == 0) {
    close(report[0]);
    execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t ignored = write(report[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  close(report[1]);
  g_child = child;
  struct sigaction sa = {};
  sa.sa_handler = ForwardSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  int err = 0;
  ssize_t n;
  do {
    n = read(report[0], &err, sizeof err);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  if (n == sizeof err) {
    std::fprintf(stderr, "vgpu run: cannot run %s: %s\n", command[0].c_str(), std::strerror(err));
    return 127;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : kExitFailure;
}

}  // namespace

int RunRun(int argc, char** argv) {
  RunOptions o;
  CLI::App app(
      "Runs a command in a GPU slice: a memory limit (and compute share) enforced by libvgpu.so "
      "for the command and every process it starts.\n"
      "Example: vgpu run --memory 8GiB --cores 30 -- python train.py",
      "vgpu run");
  app.add_flag("--sim", o.sim, "run on the simulated GPU (build/lib/simgpu)");
  app.add_option("--memory", o.memory, "device memory per GPU (4GiB, 4096m, 16GB, ...)");
  app.add_option("--cores", o.cores, "share of each GPU's compute, percent (1-100)");
  app.add_option("--priority", o.priority, "high (0) or low (1, the default)");
  app.add_option("--device", o.devices, "GPUs to use: indices or UUIDs, e.g. 0,1");
  app.add_option("--name", o.name, "name of the slice in vgpu top (default: the command)");
  app.add_option("command", o.command, "the command and its arguments (after --)");
  // Everything after "--" is the command, options included.
  std::vector<char*> own(argv, argv + argc);
  std::vector<std::string> tail;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--") == 0) {
      own.assign(argv, argv + i);
      tail.assign(argv + i + 1, argv + argc);
      break;
    }
  }
  if (auto code = ParseArgs(app, static_cast<int>(own.size()), own.data())) return *code;
  o.command.insert(o.command.end(), tail.begin(), tail.end());
  Result<SliceSpec> spec = Validate(o);
  if (!spec.has_value()) return ReportStatus("run", spec.error());

  std::string lib_dir = LibraryDir();
  std::string libvgpu = lib_dir + "/libvgpu.so";
  std::string simgpu_dir = lib_dir + "/simgpu";
  if (access(libvgpu.c_str(), R_OK) != 0) {
    std::fprintf(stderr, "vgpu run: %s not found (build it: cmake --build build)\n",
                 libvgpu.c_str());
    return kExitFailure;
  }
  if (o.sim && access((simgpu_dir + "/libcuda.so.1").c_str(), R_OK) != 0) {
    std::fprintf(stderr,
                 "vgpu run: --sim: the simulated GPU is not built (%s/libcuda.so.1 missing; it "
                 "needs the CUDA toolkit's headers)\n",
                 simgpu_dir.c_str());
    return kExitFailure;
  }
  std::string name = o.name;
  if (name.empty()) name = fs::path(o.command[0]).filename().string();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  }
  Result<std::string> dir = MakeSliceDir(name);
  if (!dir.has_value()) return ReportStatus("run", dir.error());
  std::string command_text = JoinCommand(o.command);
  Status st = WriteLimits(*dir, *spec, o.sim, command_text);
  if (st.ok()) st = CreateRegion(*dir, *spec);
  if (st.ok()) st = shm::WriteSliceMeta(*dir, {getpid(), command_text});
  int code = st.ok()
                 ? RunChild(o.command, ChildEnvironment(*dir, *spec, o.sim, libvgpu, simgpu_dir))
                 : ReportStatus("run", st);
  std::error_code ec;
  fs::remove_all(*dir, ec);
  return code;
}

}  // namespace vgpu::cli
