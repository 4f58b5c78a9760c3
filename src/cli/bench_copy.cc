// vgpu bench copy: runs N tenants that copy between host and device, each a separate process in
// its own slice with its own copy caps, and reports per tenant the target and achieved rates.
//
//   vgpu bench copy [--sim] [--seconds S] [--window S] [--link H2D[,D2H]] [--json]
//                   --tenant NAME[:h2d=RATE,d2h=RATE,dir=h2d|d2h|both,borrow=on,...] ...
//
// With --sim the tenants share one simulated GPU of their own (a private state file) whose host
// link has --link bandwidth (default 55GB/s each way), so the rates are those of the simulated
// timeline. Rates are measured from the completion times of the copies, over the phase in which
// every tenant runs, and in windows of --window seconds within it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "cli/bench_child.h"
#include "cli/bench_copy.h"
#include "cli/cli_util.h"
#include "common/units.h"
#include "slice/slice_dir.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kSec = 1'000'000'000ULL;

void SetEnv(std::vector<std::string>* env, const std::string& key, const std::string& value) {
  std::string prefix = key + "=";
  env->erase(std::remove_if(env->begin(), env->end(),
                            [&](const std::string& e) { return e.rfind(prefix, 0) == 0; }),
             env->end());
  env->push_back(prefix + value);
}

std::vector<CopyRecord> ReadCopyRecords(const std::string& path) {
  std::vector<CopyRecord> out;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return out;
  CopyRecord r;
  while (std::fscanf(f, "%d %" SCNu64 " %" SCNu64, &r.dir, &r.end_ns, &r.bytes) == 3) {
    out.push_back(r);
  }
  std::fclose(f);
  return out;
}

void KillAll(std::vector<Child>* children) {
  for (Child& c : *children) {
    if (c.pid > 0) kill(c.pid, SIGKILL);
  }
  for (Child& c : *children) {
    if (c.pid > 0) waitpid(c.pid, nullptr, 0);
    c.pid = -1;
  }
}

// Waits until every child printed `word`; an error names the tenant that failed.
Status WaitAll(std::vector<Child>* children, const std::vector<CopyTenant>& tenants,
               const char* word, uint64_t deadline) {
  for (size_t i = 0; i < children->size(); ++i) {
    Child& c = (*children)[i];
    while (!Saw(c, word)) {
      int status;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.pid = -1;
        return Status::Internal("tenant " + tenants[i].name + " failed: " + ReadAll(c.err_file));
      }
      if (MonotonicNs() > deadline) {
        return Status::Internal("tenant " + tenants[i].name + " did not get to \"" + word +
                                "\" in time");
      }
      usleep(2000);
    }
  }
  return Status::Ok();
}

struct CopyOptions {
  bool sim = false;
  bool json = false;
  double seconds = 5;
  double window = 1;
  std::string link;
  std::vector<std::string> tenant_texts;
};

int RunCopyScenario(const CopyOptions& o, CopyReport* report, const std::string& work) {
  Result<Libraries> libs = FindLibraries(o.sim, "vgpu bench copy");
  if (!libs.has_value()) return ReportStatus("bench copy", libs.error());
  std::vector<std::string> extra_env = {"LIBCUDA_LOG_LEVEL=1", "VGPU_SIMGPU_LOG_LEVEL=1"};
  if (o.sim) {
    std::ofstream conf(work + "/simgpu.conf");
    conf << "model=h100 h2d_bandwidth=" << report->link[0] << " d2h_bandwidth=" << report->link[1]
         << "\n";
    if (!conf) return ReportStatus("bench copy", Status::IoError("cannot write " + work));
    extra_env.push_back("VGPU_SIMGPU_CONFIG=" + work + "/simgpu.conf");
    extra_env.push_back("VGPU_SIMGPU_STATE=" + work + "/simgpu.state");
  }
  const uint64_t run_ns = static_cast<uint64_t>(o.seconds * 1e9);
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<slice::SliceDir> dirs;
  std::vector<Child> children;
  auto fail = [&](const Status& st) {
    KillAll(&children);
    return ReportStatus("bench copy", st);
  };
  for (size_t i = 0; i < report->tenants.size(); ++i) {
    const CopyTenant& t = report->tenants[i];
    slice::SliceSpec spec;
    spec.copy_h2d = t.cap[0];
    spec.copy_d2h = t.cap[1];
    spec.copy_borrow = t.borrow;
    spec.arbiter_dir = work + "/arbiter";  // this run's own host-link file
    Result<slice::SliceDir> dir = slice::SliceDir::Create(
        slice::SliceName("bench-copy-" + t.name), spec, o.sim, "vgpu bench copy tenant " + t.name);
    if (!dir.has_value()) return fail(dir.error());
    dirs.push_back(std::move(*dir));
    std::vector<std::string> env = dirs.back().ChildEnvironment(libs->libvgpu, libs->simgpu_dir);
    for (const std::string& e : extra_env) {
      size_t eq = e.find('=');
      SetEnv(&env, e.substr(0, eq), e.substr(eq + 1));
    }
    std::string out = work + "/tenant" + std::to_string(i) + ".copies";
    std::vector<std::string> args = {exe,
                                     "bench",
                                     "copy-tenant",
                                     "--dir",
                                     t.copies[0] && t.copies[1] ? "both"
                                     : t.copies[1]              ? "d2h"
                                                                : "h2d",
                                     "--size",
                                     std::to_string(t.size),
                                     "--offset-ns",
                                     std::to_string(t.start_ns),
                                     "--stop-ns",
                                     std::to_string(t.stop_ns ? t.stop_ns : run_ns),
                                     "--out",
                                     out};
    Result<Child> c = SpawnChild(std::move(args), std::move(env), out,
                                 work + "/tenant" + std::to_string(i) + ".stderr");
    if (!c.has_value()) return fail(c.error());
    children.push_back(*c);
  }
  if (Status st = WaitAll(&children, report->tenants, "ready", MonotonicNs() + 120 * kSec);
      !st.ok()) {
    return fail(st);
  }
  uint64_t t0 = MonotonicNs() + 20'000'000;
  std::string start = std::to_string(t0) + "\n";
  for (Child& c : children) {
    if (write(c.in, start.data(), start.size()) != static_cast<ssize_t>(start.size())) {
      return fail(Status::IoError("cannot start a tenant"));
    }
    close(c.in);
  }
  if (Status st = WaitAll(&children, report->tenants, "done", t0 + run_ns + 60 * kSec); !st.ok()) {
    return fail(st);
  }
  uint64_t from = t0, to = t0 + run_ns;
  for (const CopyTenant& t : report->tenants) {
    from = std::max(from, t0 + t.start_ns);
    if (t.stop_ns != 0) to = std::min(to, t0 + t.stop_ns);
  }
  for (size_t i = 0; i < children.size(); ++i) {
    waitpid(children[i].pid, nullptr, 0);
    children[i].pid = -1;
    close(children[i].out);
    report->results.push_back(AnalyzeCopies(report->tenants[i],
                                            ReadCopyRecords(children[i].out_file), from, to,
                                            static_cast<uint64_t>(o.window * 1e9)));
  }
  std::fputs(o.json ? CopyReportJson(*report).c_str() : CopyReportText(*report).c_str(), stdout);
  return kExitOk;
}

}  // namespace

int RunCopyBench(int argc, char** argv) {
  CopyOptions o;
  CLI::App app(
      "Runs tenants that copy between host and device, each a process in its own slice with its "
      "own copy caps, and prints per tenant and direction the target and achieved rates (over "
      "the phase in which all run, and per window).\n"
      "Example: vgpu bench copy --sim --tenant a:h2d=10GB/s --tenant b:h2d=20GB/s,d2h=5GB/s\n"
      "Tenant keys: " +
          std::string(kCopyTenantKeys),
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
  CopyReport report;
  report.sim = o.sim;
  report.seconds = o.seconds;
  report.window_s = o.window;
  if (!o.link.empty() && !o.sim) return bad("--link: only with --sim");
  if (o.sim) {
    report.link[0] = report.link[1] = 55'000'000'000ULL;
    if (!o.link.empty()) {
      size_t comma = o.link.find(',');
      std::string h = o.link.substr(0, comma);
      std::string d = comma == std::string::npos ? h : o.link.substr(comma + 1);
      for (int i = 0; i < 2; ++i) {
        Result<uint64_t> r = slice::ParseCopyCap(i == 0 ? h : d, "--link");
        if (!r.has_value()) return ReportStatus("bench copy", r.error());
        if (*r == 0) return bad("--link: \"" + o.link + "\": give a bandwidth, e.g. 10GB/s");
        report.link[i] = *r;
      }
    }
  }
  std::set<std::string> names;
  for (const std::string& text : o.tenant_texts) {
    Result<CopyTenant> t = ParseCopyTenant(text);
    if (!t.has_value()) return ReportStatus("bench copy", t.error());
    if (!names.insert(t->name).second) return bad("--tenant " + t->name + ": given twice");
    if (t->start_ns >= static_cast<uint64_t>(o.seconds * 1e9) ||
        t->stop_ns > static_cast<uint64_t>(o.seconds * 1e9)) {
      return bad("--tenant " + t->name + ": start and stop must lie within --seconds");
    }
    report.tenants.push_back(*t);
  }
  char tmpl[] = "/tmp/vgpu-bench-copy-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    return ReportStatus("bench copy", Status::IoError("cannot create a work directory"));
  }
  std::string work = tmpl;
  int code = RunCopyScenario(o, &report, work);
  std::error_code ec;
  fs::remove_all(work, ec);
  return code;
}

}  // namespace vgpu::cli
