// vgpu bench share: runs N tenants of busy kernels, each a separate process in its own slice with
// libvgpu.so (the same setup as vgpu run), on the simulated GPU (--sim) or a real one, and reports
// per tenant its target and achieved share of the GPU and its launch-to-start waits.
//
//   vgpu bench share [--sim] [--seconds S] [--kernel DUR] [--time-slice DUR] [--window S]
//                    [--baseline] [--json] --tenant NAME[:key=value,...] ...
//
// On the simulated GPU each run gets a private simulated GPU and registry (a temporary state
// directory) unless --state-dir is given; on a real GPU the tenants join the machine's arbiter like
// any slice. `vgpu bench tenant` is the tenant program (internal). The flags are read here; the
// run and its report are bench/share.h's.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <vector>

#include "bench/share.h"
#include "bench/share_tenant.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/units.h"
#include "shm/arbiter.h"
#include "slice/spec.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

struct Options {
  bool sim = false;
  bool json = false;
  bool baseline = false;
  double seconds = 10;
  double window = 10;
  double baseline_seconds = 3;
  std::string kernel = "1ms";
  std::string time_slice;
  std::string module;
  uint64_t cycles_per_us = 0;
  std::string state_dir;
  std::string records_dir;
  std::vector<std::string> tenant_texts;
};

int RunBenchShare(int argc, char** argv) {
  Options o;
  CLI::App app(
      "Runs tenants of busy kernels, each a process in its own slice, and reports each tenant's "
      "target and achieved share of the GPU and its launch-to-start waits.\n"
      "Example: vgpu bench share --sim --seconds 10 --tenant a:max=30 --tenant b:max=70 --json\n"
      "Tenant keys: " +
          std::string(bench::kShareTenantKeys) + ".",
      "vgpu bench share");
  app.add_flag("--sim", o.sim, "use the simulated GPU (a private one per run)");
  app.add_option("--seconds", o.seconds, "length of the run (default 10)")
      ->check(CLI::Range(0.5, 3600.0));
  app.add_option("--window", o.window, "window for the worst deviation, seconds (default 10)")
      ->check(CLI::Range(0.1, 3600.0));
  app.add_option("--kernel", o.kernel, "duration of each kernel (default 1ms)");
  app.add_option("--time-slice", o.time_slice, "time slice of every tenant (default 5ms)");
  app.add_flag("--baseline", o.baseline,
               "first run each tenant alone, to compare its throughput and waits");
  app.add_option("--baseline-seconds", o.baseline_seconds, "length of each alone run (default 3)")
      ->check(CLI::Range(0.5, 3600.0));
  app.add_option("--module", o.module, "a compiled module with a sim_sleep_ns kernel");
  app.add_option("--cycles-per-us", o.cycles_per_us, "calibration for --module's clock64 kernel");
  app.add_option("--state-dir", o.state_dir, "registry and arbiters (default: private with --sim)");
  app.add_option("--records", o.records_dir,
                 "write each tenant's kernels (call, start, end in ns) to DIR/NAME.kernels");
  app.add_option("--tenant", o.tenant_texts, "NAME[:key=value,...], 1 to 16 times")->required();
  app.add_flag("--json", o.json, "JSON output");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  Result<int64_t> kernel = ParseDuration(o.kernel, "--kernel");
  if (!kernel.has_value()) return ReportStatus("bench share", kernel.error());
  if (*kernel <= 0) {
    return ReportStatus("bench share", Status::InvalidArgument("--kernel: must be above 0"));
  }
  if (o.tenant_texts.size() > 16) {
    return ReportStatus("bench share", Status::InvalidArgument("--tenant: at most 16 tenants"));
  }
  bench::ShareRun run;
  run.sim = o.sim;
  run.seconds = o.seconds;
  run.window_s = o.window;
  run.kernel_ns = static_cast<uint64_t>(*kernel);
  run.time_slice_ns = shm::kDefaultTimeSliceNs;
  for (const std::string& text : o.tenant_texts) {
    Result<bench::ShareTenant> t = bench::ParseShareTenant(text);
    if (!t.has_value()) return ReportStatus("bench share", t.error());
    if (!o.time_slice.empty() && t->flags.time_slice.empty()) {
      t->flags.time_slice = o.time_slice;
      Result<slice::SliceSpec> spec = slice::ParseSliceSpec(t->flags, "--time-slice ");
      if (!spec.has_value()) return ReportStatus("bench share", spec.error());
      t->spec = *spec;
    }
    if (t->kernel_ns == 0) t->kernel_ns = run.kernel_ns;
    if (t->start_ns >= static_cast<uint64_t>(o.seconds * 1e9)) {
      return ReportStatus("bench share", Status::InvalidArgument("--tenant " + t->name +
                                                                 ": start is after the end"));
    }
    if (t->stop_ns != 0 &&
        (t->stop_ns <= t->start_ns || t->stop_ns > static_cast<uint64_t>(o.seconds * 1e9))) {
      return ReportStatus("bench share", Status::InvalidArgument(
                                             "--tenant " + t->name +
                                             ": stop must lie after its start, within --seconds"));
    }
    // Every tenant takes part in the arbitration, even with no limit of its own.
    t->spec.mode_given = true;
    run.tenants.push_back(*t);
  }
  if (run.tenants.front().spec.time_slice_ns != 0) {
    run.time_slice_ns = run.tenants.front().spec.time_slice_ns;
  }
  // The records directory is made (and checked writable) before the run, not after it.
  if (!o.records_dir.empty()) {
    std::error_code dir_ec;
    fs::create_directories(o.records_dir, dir_ec);
    if (dir_ec || access(o.records_dir.c_str(), W_OK | X_OK) != 0) {
      std::string why = dir_ec ? dir_ec.message() : std::strerror(errno);
      return ReportStatus("bench share", Status::InvalidArgument("--records: \"" + o.records_dir +
                                                                 "\": cannot write there: " + why));
    }
  }
  Result<Libraries> libs = FindLibraries(o.sim, "vgpu bench share");
  if (!libs.has_value()) {
    std::fprintf(stderr, "vgpu bench share: %s\n", libs.error().message().c_str());
    return kExitFailure;
  }
  run.baseline = o.baseline;
  run.baseline_seconds = o.baseline_seconds;
  run.module = o.module;
  run.cycles_per_us = o.cycles_per_us;
  run.state_dir = o.state_dir;
  run.libvgpu = libs->libvgpu;
  run.simgpu_dir = libs->simgpu_dir;
  Result<bench::ShareReport> report = bench::RunShare(run);
  if (!report.has_value()) return ReportStatus("bench share", report.error());
  int code = kExitOk;
  if (!o.records_dir.empty()) {
    for (size_t i = 0; i < report->tenants.size(); ++i) {
      std::string path = o.records_dir + "/" + report->tenants[i].name + ".kernels";
      if (!bench::WriteKernelRecords(path, report->results[i].records)) {
        std::fprintf(stderr, "vgpu bench share: cannot write %s\n", path.c_str());
        code = kExitFailure;
      }
    }
  }
  std::fputs(
      o.json ? bench::ShareReportJson(*report).c_str() : bench::ShareReportText(*report).c_str(),
      stdout);
  return code;
}

int RunTenant(int argc, char** argv) {
  bench::ShareTenantOptions t;
  CLI::App app("The tenant program of vgpu bench share (internal).", "vgpu bench tenant");
  app.add_option("--kernel-ns", t.kernel_ns);
  app.add_option("--gap-ns", t.gap_ns);
  app.add_option("--offset-ns", t.offset_ns);
  app.add_option("--stop-ns", t.stop_ns);
  app.add_flag("--start-now", t.start_now, "start at once (no protocol with a parent)");
  app.add_flag("--calibrate", t.calibrate,
               "print the cycles per microsecond of --module's clock64 kernel and exit");
  app.add_option("--depth", t.depth);
  app.add_option("--sync", t.sync);
  app.add_option("--launch", t.launch);
  app.add_option("--module", t.module);
  app.add_option("--cycles-per-us", t.cycles_per_us);
  app.add_option("--out", t.out);
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  if (!t.calibrate && (t.out.empty() || t.stop_ns == 0)) {
    return ReportStatus("bench tenant", Status::InvalidArgument("--out and --stop-ns are needed"));
  }
  return bench::RunShareTenant(t);
}

}  // namespace

int RunBench(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "share") == 0) return RunBenchShare(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "tenant") == 0) return RunTenant(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "copy") == 0) return RunBenchCopy(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "oversub") == 0) return RunBenchOversub(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "oversub-tenant") == 0) {
    return RunBenchOversubTenant(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "copy-tenant") == 0) {
    return RunBenchCopyTenant(argc - 1, argv + 1);
  }
  if (argc >= 2 && std::strcmp(argv[1], "mig") == 0) return RunBenchMig(argc - 1, argv + 1);
  if (argc >= 2 && std::strcmp(argv[1], "topo") == 0) return RunBenchTopo(argc - 1, argv + 1);
  bool help = argc >= 2 && (std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0);
  std::fprintf(help ? stdout : stderr,
               "Usage: vgpu bench share|copy|oversub|mig|topo [options]\n"
               "  share   run tenants of busy kernels and report their GPU shares and waits\n"
               "          (vgpu bench share --help)\n"
               "  copy    run tenants of host-device copies and report their target and\n"
               "          achieved rates (vgpu bench copy --help)\n"
               "  oversub slowdown of managed memory against working set on the simulated\n"
               "          GPU's UVM model (vgpu bench oversub --help)\n"
               "  mig     MIG placement quality: acceptance of ours, first-fit and HAMi's rule\n"
               "          (vgpu bench mig --help)\n"
               "  topo    GPU set choice on topology presets against besteffort, HAMi and\n"
               "          lowest-index (vgpu bench topo --help)\n");
  if (help) return kExitOk;
  if (argc < 2) {
    std::fprintf(stderr, "vgpu bench: no benchmark given\n");
  } else {
    std::fprintf(stderr, "vgpu bench: unknown benchmark \"%s\"\n", argv[1]);
  }
  return kExitBadInput;
}

}  // namespace vgpu::cli
