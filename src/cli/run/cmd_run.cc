// vgpu run: runs a command in a GPU slice on this machine.
//
//   vgpu run [--sim [--sim-config FILE]] [--memory SIZE] [--cores PCT] [--guarantee PCT]
//   [--elastic]
//            [--weight N] [--priority LEVEL] [--time-slice DURATION] [--device LIST]
//            [--memory-mode strict|overcommit|spill] [--spill-headroom SIZE] [--spill-ratio X]
//            [--name NAME] [--kill-after DURATION] -- CMD ARGS...
//
// Creates a private slice directory in the registry (<state>/slices/<name>, see
// slice/registry.h and slice_setup.h) holding a read-only limits file and the slice's
// accounting region, preloads libvgpu.so (found next to the executable: <exe>/../lib/libvgpu.so),
// runs CMD in a process group of its own (run_supervisor.h), and removes the slice once no
// process of it is left. With --sim the simulated GPU's libraries (<exe>/../lib/simgpu) come
// first on the library path.
//
// Signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT are passed on to CMD's whole process group; what
// is left of the slice when CMD ends, or when --kill-after (default 10s) has passed since the
// first signal, is sent SIGTERM and then SIGKILL. The exit status is CMD's (128 + signal when a
// signal ended it; 127 when it cannot be run). A process that survives SIGKILL keeps the slice
// in place (`vgpu gc` removes it once the process is gone).
//
// Inside another slice the new slice is its child, bounded by it (nested_slice.h).
//
// --memory-mode spill (docs/oversubscription.md) is admitted only when the host can hold the
// spill and the GPU's promise stays within the ratio cap (run_spill.h); a refusal names the
// numbers and exits 1 before anything runs.
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/run/device_check.h"
#include "cli/run/nested_slice.h"
#include "cli/run/run_spill.h"
#include "cli/run/run_supervisor.h"
#include "common/units.h"
#include "slice/slice_dir.h"

namespace vgpu::cli {

int RunRun(int argc, char** argv) {
  slice::SliceFlags flags;
  bool sim = false;
  std::string name_flag;
  std::string kill_after = "10s";
  std::string spill_headroom = "4GiB";
  double spill_ratio = 1.5;
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
  std::string sim_config;
  app.add_option("--sim-config", sim_config, "Simulated devices (see docs/simgpu.md); needs --sim");
  app.add_option("--memory", flags.memory,
                 "device memory per GPU: 8GiB = 8Gi = 8G = 8g = 8 GiB and 4096m = 4 GiB (binary, "
                 "as HAMi-core); 8GB = 8x10^9 bytes (SI)");
  app.add_option("--cores", flags.cores,
                 std::string("maximum compute share: ") + slice::kCoresRange);
  app.add_option("--guarantee", flags.guarantee,
                 "guaranteed share, percent (0-100, at most --cores); implies --elastic");
  app.add_flag("--elastic", flags.elastic,
               "use idle GPU time up to --cores (default: capped at --cores)");
  app.add_option("--weight", flags.weight, "share of spare GPU time among equals (1-10000)");
  app.add_option("--priority", flags.priority,
                 "realtime, high, normal (default), low or idle (HAMi: 0 high, 1 normal)");
  app.add_option("--time-slice", flags.time_slice,
                 "length of this slice's turns on the GPU (default 5ms; 500us-1s)");
  app.add_option("--latency-slack", flags.latency_slack,
                 "how late this slice may be served when it comes back with work, so that "
                 "lower priorities can use its gaps (default 0; 0-1s; docs/compute.md)");
  app.add_option("--copy-bandwidth", flags.copy_bandwidth,
                 "caps on host-to-device and device-to-host copies, H2D[,D2H] in bytes per "
                 "second (10GB/s, 512MiB/s, unlimited; one value caps both; 1MB/s-10TB/s)");
  app.add_flag("--copy-borrow", flags.copy_borrow,
               "let copies use host-link bandwidth beyond the caps while no other capped slice "
               "copies (docs/copy-qos.md)");
  app.add_option("--memory-mode", flags.memory_mode,
                 "strict (default), overcommit or spill: with spill, memory within --memory that "
                 "the GPU cannot hold comes from managed memory on the host (priorities below "
                 "high; docs/oversubscription.md)");
  app.add_option("--spill-headroom", spill_headroom,
                 "host memory kept free when admitting a spill (default 4GiB)");
  app.add_option("--spill-ratio", spill_ratio,
                 "most memory the GPU may be promised, as a multiple of its own (default 1.5; "
                 "1-10)");
  app.add_option("--device", flags.devices, "GPUs to use: indices or UUIDs, e.g. 0,1");
  app.add_option("--name", name_flag, "name of the slice in vgpu top (default: the command)");
  app.add_option("--kill-after", kill_after,
                 "grace period after a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT are passed on to "
                 "the command's process group) or after the command ended, before what is left "
                 "of the slice gets SIGKILL (default 10s; 0s-1h)");
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
  if (Status s = UseSimConfig(sim, sim_config); !s.ok()) return ReportStatus("run", s);
  Result<slice::SliceSpec> spec = slice::ParseSliceSpec(flags);
  if (!spec.has_value()) return ReportStatus("run", spec.error());
  Result<int64_t> grace = ParseDuration(kill_after, "--kill-after");
  if (!grace.has_value()) return ReportStatus("run", grace.error());
  if (*grace > 3600LL * 1000 * 1000 * 1000) {
    return ReportStatus(
        "run", Status::InvalidArgument("--kill-after: \"" + kill_after + "\": must be at most 1h"));
  }
  Result<uint64_t> headroom = ParseByteSize(spill_headroom, "--spill-headroom");
  if (!headroom.has_value()) return ReportStatus("run", headroom.error());
  if (!(spill_ratio >= 1.0 && spill_ratio <= 10.0)) {
    return ReportStatus("run",
                        Status::InvalidArgument("--spill-ratio: \"" + std::to_string(spill_ratio) +
                                                "\": must be between 1 and 10"));
  }
  if (command.empty()) {
    return ReportStatus("run", Status::InvalidArgument(
                                   "no command given (usage: vgpu run [options] -- CMD ARGS...)"));
  }
  // Inside another slice: a child slice, bounded by it (nested_slice.h).
  Result<std::optional<OuterSlice>> outer = FindOuterSlice();
  if (!outer.has_value()) return ReportStatus("run", outer.error());
  if (outer->has_value()) {
    std::string note;
    spec = BoundByOuter(**outer, *spec, flags, &note);
    if (!spec.has_value()) return ReportStatus("run", spec.error());
    if (!note.empty()) std::fprintf(stderr, "vgpu run: %s\n", note.c_str());
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
  if (const std::string hint = NoDriverHint(sim); !hint.empty()) {
    std::fprintf(stderr, "vgpu run: warning: the command will find no GPU%s\n", hint.c_str());
  }
  if (spec->memory_mode == MemoryMode::kSpill) {
    slice::SpillPolicy policy;
    policy.max_ratio = spill_ratio;
    policy.headroom = *headroom;
    Status admitted = AdmitRunSpill(
        *spec, sim ? libs->simgpu_dir + "/libnvidia-ml.so.1" : "libnvidia-ml.so.1", policy);
    if (!admitted.ok()) return ReportStatus("run", admitted);
  }
  std::string name = slice::SliceName(name_flag.empty() ? command[0] : name_flag);
  std::string command_text;
  for (const std::string& a : command) command_text += (command_text.empty() ? "" : " ") + a;
  Result<slice::SliceDir> dir = slice::SliceDir::Create(name, *spec, sim, command_text);
  if (!dir.has_value()) return ReportStatus("run", dir.error());
  if (outer->has_value()) {
    if (Status st = LinkToOuter(dir->region_path(), **outer); !st.ok()) {
      return ReportStatus("run", st);
    }
  }
  SuperviseOptions options;
  options.command = command;
  options.env = dir->ChildEnvironment(libs->libvgpu, libs->simgpu_dir);
  options.kill_after_ns = *grace;
  options.region_path = dir->region_path();
  SuperviseResult result = RunSupervised(options);
  if (!result.survivors.empty()) {
    std::string pids;
    for (pid_t pid : result.survivors) pids += " " + std::to_string(pid);
    std::fprintf(stderr,
                 "vgpu run: process(es)%s of the slice survived SIGKILL; the slice %s is left in "
                 "place (vgpu gc removes it once they are gone)\n",
                 pids.c_str(), dir->path().c_str());
    dir->Keep();
  }
  return result.exit_status;
}

}  // namespace vgpu::cli
