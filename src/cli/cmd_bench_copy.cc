// vgpu bench copy: runs N tenants that copy between host and device, each a separate process in
// its own slice with its own copy caps, and reports per tenant the target and achieved rates.
//
//   vgpu bench copy [--sim] [--seconds S] [--window S] [--link H2D[,D2H]] [--json]
//                   --tenant NAME[:h2d=RATE,d2h=RATE,dir=h2d|d2h|both,borrow=on,...] ...
//
// With --sim the tenants share one simulated GPU of their own (a private state file) whose host
// link has --link bandwidth (default 55GB/s each way), so the rates are those of the simulated
// timeline. Rates are measured from the completion times of the copies, over the phase in which
// every tenant runs, and in windows of --window seconds within it. `vgpu bench copy-tenant` is the
// tenant program (internal). The flags are read here; the run and its report are bench/copy.h's.
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "bench/copy.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "slice/spec.h"

namespace vgpu::cli {
namespace {

struct CopyOptions {
  bool sim = false;
  bool json = false;
  double seconds = 5;
  double window = 1;
  std::string link;
  std::vector<std::string> tenant_texts;
};

}  // namespace

int RunBenchCopy(int argc, char** argv) {
  CopyOptions o;
  CLI::App app(
      "Runs tenants that copy between host and device, each a process in its own slice with its "
      "own copy caps, and prints per tenant and direction the target and achieved rates (over "
      "the phase in which all run, and per window).\n"
      "Example: vgpu bench copy --sim --tenant a:h2d=10GB/s --tenant b:h2d=20GB/s,d2h=5GB/s\n"
      "Tenant keys: " +
          std::string(bench::kCopyTenantKeys),
      "vgpu bench copy");
  app.add_flag("--sim", o.sim, "run on the simulated GPU (a private one for this run)");
  app.add_option("--seconds", o.seconds, "length of the run (1-600, default 5)");
  app.add_option("--window", o.window, "window for the per-window rates, seconds (default 1)");
  app.add_option("--link", o.link,
                 "with --sim: the simulated host link, H2D[,D2H] (default 55GB/s each way)");
  app.add_option("--tenant", o.tenant_texts, "NAME[:key=value,...] (repeat; 1-16 tenants)");
  app.add_flag("--json", o.json, "print the report as JSON");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  auto bad = [](const std::string& m) {
    return ReportStatus("bench copy", Status::InvalidArgument(m));
  };
  if (!(o.seconds >= 1 && o.seconds <= 600)) return bad("--seconds: must be between 1 and 600");
  if (!(o.window >= 0.1 && o.window <= o.seconds)) {
    return bad("--window: must be between 0.1 and --seconds");
  }
  if (o.tenant_texts.empty() || o.tenant_texts.size() > 16) {
    return bad("--tenant: give 1 to 16 tenants");
  }
  bench::CopyRun run;
  run.sim = o.sim;
  run.seconds = o.seconds;
  run.window_s = o.window;
  if (!o.link.empty() && !o.sim) return bad("--link: only with --sim");
  if (o.sim) {
    run.link[0] = run.link[1] = 55'000'000'000ULL;
    if (!o.link.empty()) {
      size_t comma = o.link.find(',');
      std::string h = o.link.substr(0, comma);
      std::string d = comma == std::string::npos ? h : o.link.substr(comma + 1);
      for (int i = 0; i < 2; ++i) {
        Result<uint64_t> r = slice::ParseCopyCap(i == 0 ? h : d, "--link");
        if (!r.has_value()) return ReportStatus("bench copy", r.error());
        if (*r == 0) return bad("--link: \"" + o.link + "\": give a bandwidth, e.g. 10GB/s");
        run.link[i] = *r;
      }
    }
  }
  std::set<std::string> names;
  for (const std::string& text : o.tenant_texts) {
    Result<bench::CopyTenant> t = bench::ParseCopyTenant(text);
    if (!t.has_value()) return ReportStatus("bench copy", t.error());
    if (!names.insert(t->name).second) return bad("--tenant " + t->name + ": given twice");
    if (t->start_ns >= static_cast<uint64_t>(o.seconds * 1e9) ||
        t->stop_ns > static_cast<uint64_t>(o.seconds * 1e9)) {
      return bad("--tenant " + t->name + ": start and stop must lie within --seconds");
    }
    run.tenants.push_back(*t);
  }
  Result<Libraries> libs = FindLibraries(o.sim, "vgpu bench copy");
  if (!libs.has_value()) return ReportStatus("bench copy", libs.error());
  run.libvgpu = libs->libvgpu;
  run.simgpu_dir = libs->simgpu_dir;
  Result<bench::CopyReport> report = bench::RunCopy(run);
  if (!report.has_value()) return ReportStatus("bench copy", report.error());
  std::fputs(
      o.json ? bench::CopyReportJson(*report).c_str() : bench::CopyReportText(*report).c_str(),
      stdout);
  return kExitOk;
}

int RunBenchCopyTenant(int argc, char** argv) {
  bench::CopyTenantOptions o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dir") {
      o.dir = v;
    } else if (k == "--size") {
      o.size = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--offset-ns") {
      o.offset_ns = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--stop-ns") {
      o.stop_ns = std::strtoull(v.c_str(), nullptr, 10);
    } else if (k == "--out") {
      o.out = v;
    } else {
      std::fprintf(stderr, "vgpu bench copy-tenant: unknown option %s\n", k.c_str());
      return kExitBadInput;
    }
  }
  if (o.out.empty() || o.stop_ns == 0 || o.size == 0 ||
      (o.dir != "h2d" && o.dir != "d2h" && o.dir != "both")) {
    std::fprintf(stderr, "vgpu bench copy-tenant: --out, --stop-ns, --size, --dir are needed\n");
    return kExitBadInput;
  }
  return bench::RunCopyTenant(o);
}

}  // namespace vgpu::cli
