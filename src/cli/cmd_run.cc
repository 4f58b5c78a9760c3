// vgpu run: runs a command in a GPU slice on this machine.
//
//   vgpu run [--sim] [--memory SIZE] [--cores PCT] [--guarantee PCT] [--elastic]
//            [--weight N] [--priority LEVEL] [--time-slice DURATION] [--device LIST]
//            [--name NAME] -- CMD ARGS...
//
// Creates a private slice directory in the registry (<state>/slices/<name>, see
// shm/slice_registry.h and slice_setup.h) holding a read-only limits file and the slice's
// accounting region,
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
#include "cli/device_check.h"
#include "cli/slice_setup.h"

namespace vgpu::cli {
namespace {

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
  SliceFlags flags;
  bool sim = false;
  std::string name_flag;
  std::vector<std::string> command;
  CLI::App app(
      "Runs a command in a GPU slice: a memory limit and a compute share enforced by libvgpu.so "
      "for the command and every process it starts.\n"
      "Example: vgpu run --memory 8GiB --cores 30 -- python train.py\n"
      "Compute: --cores is the maximum share (never exceeded, even alone); --guarantee makes the "
      "slice elastic (its guarantee is reserved, idle GPU time is used up to --cores).",
      "vgpu run");
  app.add_flag("--sim", sim,
               "run on the simulated GPU (build/lib/simgpu; installed: the vgpu-simgpu package)");
  app.add_option("--memory", flags.memory,
                 "device memory per GPU: 8GiB = 8Gi = 8G = 8g = 8 GiB and 4096m = 4 GiB (binary, "
                 "as HAMi-core); 8GB = 8x10^9 bytes (SI)");
  app.add_option("--cores", flags.cores, "maximum share of each GPU's time, percent (1-100)");
  app.add_option("--guarantee", flags.guarantee,
                 "guaranteed share, percent (0-100, at most --cores); implies --elastic");
  app.add_flag("--elastic", flags.elastic,
               "use idle GPU time up to --cores (default: capped at --cores)");
  app.add_option("--weight", flags.weight, "share of spare GPU time among equals (1-10000)");
  app.add_option("--priority", flags.priority,
                 "realtime, high, normal (default), low or idle (HAMi: 0 high, 1 normal)");
  app.add_option("--time-slice", flags.time_slice,
                 "length of this slice's turns on the GPU (default 5ms; 500us-1s)");
  app.add_option("--device", flags.devices, "GPUs to use: indices or UUIDs, e.g. 0,1");
  app.add_option("--name", name_flag, "name of the slice in vgpu top (default: the command)");
  app.add_option("command", command, "the command and its arguments (after --)");
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
  command.insert(command.end(), tail.begin(), tail.end());
  Result<SliceSpec> spec = ParseSliceSpec(flags);
  if (!spec.has_value()) return ReportStatus("run", spec.error());
  if (command.empty()) {
    return ReportStatus("run", Status::InvalidArgument(
                                   "no command given (usage: vgpu run [options] -- CMD ARGS...)"));
  }
  Result<Libraries> libs = FindLibraries(sim, "vgpu run");
  if (!libs.has_value()) {
    std::fprintf(stderr, "vgpu run: %s\n", libs.error().message().c_str());
    return kExitFailure;
  }
  std::string device_warning;
  Status devices = CheckDevicesOnThisMachine(
      spec->devices, sim ? libs->simgpu_dir + "/libnvidia-ml.so.1" : "libnvidia-ml.so.1",
      &device_warning);
  if (!devices.ok()) return ReportStatus("run", devices);
  if (!device_warning.empty()) std::fprintf(stderr, "vgpu run: %s\n", device_warning.c_str());
  std::string name = SliceName(name_flag.empty() ? command[0] : name_flag);
  std::string command_text;
  for (const std::string& a : command) command_text += (command_text.empty() ? "" : " ") + a;
  Result<SliceDir> dir = SliceDir::Create(name, *spec, sim, command_text);
  if (!dir.has_value()) return ReportStatus("run", dir.error());
  return RunChild(command, dir->ChildEnvironment(libs->libvgpu, libs->simgpu_dir));
}

}  // namespace vgpu::cli
