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

#include "bench/child.h"
#include "bench/copy.h"
#include "common/units.h"
#include "slice/slice_dir.h"

namespace vgpu::bench {
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

}  // namespace

Result<CopyReport> RunCopy(const CopyRun& o) {
  CopyReport report;
  report.sim = o.sim;
  report.seconds = o.seconds;
  report.window_s = o.window_s;
  report.link[0] = o.link[0];
  report.link[1] = o.link[1];
  report.tenants = o.tenants;
  char tmpl[] = "/tmp/vgpu-bench-copy-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return Status::IoError("cannot create a work directory");
  // The work directory goes on every return.
  struct Work {
    std::string dir;
    ~Work() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } work_dir{tmpl};
  const std::string& work = work_dir.dir;
  std::vector<std::string> extra_env = {"LIBCUDA_LOG_LEVEL=1", "VGPU_SIMGPU_LOG_LEVEL=1"};
  if (o.sim) {
    std::ofstream conf(work + "/simgpu.conf");
    conf << "model=h100 h2d_bandwidth=" << report.link[0] << " d2h_bandwidth=" << report.link[1]
         << "\n";
    if (!conf) return Status::IoError("cannot write " + work);
    extra_env.push_back("VGPU_SIMGPU_CONFIG=" + work + "/simgpu.conf");
    extra_env.push_back("VGPU_SIMGPU_STATE=" + work + "/simgpu.state");
  }
  const uint64_t run_ns = static_cast<uint64_t>(o.seconds * 1e9);
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  std::vector<slice::SliceDir> dirs;
  std::vector<Child> children;
  auto fail = [&](const Status& st) {
    KillAll(&children);
    return st;
  };
  for (size_t i = 0; i < report.tenants.size(); ++i) {
    const CopyTenant& t = report.tenants[i];
    slice::SliceSpec spec;
    spec.copy_h2d = t.cap[0];
    spec.copy_d2h = t.cap[1];
    spec.copy_borrow = t.borrow;
    spec.arbiter_dir = work + "/arbiter";  // this run's own host-link file
    Result<slice::SliceDir> dir = slice::SliceDir::Create(
        slice::SliceName("bench-copy-" + t.name), spec, o.sim, "vgpu bench copy tenant " + t.name);
    if (!dir.has_value()) return fail(dir.error());
    dirs.push_back(std::move(*dir));
    std::vector<std::string> env = dirs.back().ChildEnvironment(o.libvgpu, o.simgpu_dir);
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
  if (Status st = WaitAll(&children, report.tenants, "ready", MonotonicNs() + 120 * kSec);
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
  if (Status st = WaitAll(&children, report.tenants, "done", t0 + run_ns + 60 * kSec); !st.ok()) {
    return fail(st);
  }
  uint64_t from = t0, to = t0 + run_ns;
  for (const CopyTenant& t : report.tenants) {
    from = std::max(from, t0 + t.start_ns);
    if (t.stop_ns != 0) to = std::min(to, t0 + t.stop_ns);
  }
  for (size_t i = 0; i < children.size(); ++i) {
    waitpid(children[i].pid, nullptr, 0);
    children[i].pid = -1;
    close(children[i].out);
    report.results.push_back(AnalyzeCopies(report.tenants[i], ReadCopyRecords(children[i].out_file),
                                           from, to, static_cast<uint64_t>(o.window_s * 1e9)));
  }
  return report;
}

}  // namespace vgpu::bench
