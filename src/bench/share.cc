// `vgpu bench share`'s run: the tenants as processes, each in its own slice, and their results.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench/child.h"
#include "bench/share.h"
#include "bench/share_sampler.h"
#include "slice/slice_dir.h"

namespace vgpu::bench {
namespace {

namespace fs = std::filesystem;

Result<Child> Spawn(const ShareTenant& t, const slice::SliceDir& dir, const ShareRun& o,
                    uint64_t kernel_ns, uint64_t stop_ns, uint64_t offset_ns,
                    const std::string& work, size_t index) {
  Child c;
  c.out_file = work + "/tenant" + std::to_string(index) + ".kernels";
  c.err_file = work + "/tenant" + std::to_string(index) + ".stderr";
  int depth = t.depth > 0
                  ? t.depth
                  : static_cast<int>(std::clamp<uint64_t>(10000000 / kernel_ns + 1, 2, 256));
  std::vector<std::string> args = {"/proc/self/exe",
                                   "bench",
                                   "tenant",
                                   "--kernel-ns",
                                   std::to_string(kernel_ns),
                                   "--gap-ns",
                                   std::to_string(t.gap_ns),
                                   "--offset-ns",
                                   std::to_string(offset_ns),
                                   "--stop-ns",
                                   std::to_string(stop_ns),
                                   "--depth",
                                   std::to_string(depth),
                                   "--sync",
                                   std::to_string(t.sync),
                                   "--launch",
                                   t.launch,
                                   "--out",
                                   c.out_file};
  if (!o.module.empty()) {
    args.push_back("--module");
    args.push_back(o.module);
  }
  if (o.cycles_per_us > 0) {
    args.push_back("--cycles-per-us");
    args.push_back(std::to_string(o.cycles_per_us));
  }
  std::string exe = fs::read_symlink("/proc/self/exe").string();
  args[0] = exe;
  std::vector<std::string> env = dir.ChildEnvironment(o.libvgpu, o.simgpu_dir);
  env.push_back("LIBCUDA_LOG_LEVEL=1");
  env.push_back("VGPU_SIMGPU_LOG_LEVEL=1");
  return SpawnChild(std::move(args), std::move(env), c.out_file, c.err_file);
}

std::vector<KernelRecord> ReadRecords(const std::string& path) {
  std::vector<KernelRecord> out;
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return out;
  KernelRecord r;
  while (std::fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64, &r.call_ns, &r.start_ns, &r.end_ns) ==
         3) {
    out.push_back(r);
  }
  std::fclose(f);
  return out;
}

struct RunOutput {
  uint64_t t0 = 0;
  std::vector<std::vector<KernelRecord>> records;
  std::vector<std::optional<double>> timeline;  // share of [t0 + start, t0 + stop) per tenant
};

// Runs `tenants` together for `seconds`; each in its own slice.
Result<RunOutput> RunTenants(const std::vector<ShareTenant>& tenants, const ShareRun& o,
                             uint64_t kernel_ns, double seconds, const std::string& work) {
  uint64_t stop_ns = static_cast<uint64_t>(seconds * 1e9);
  std::vector<slice::SliceDir> dirs;
  std::vector<Child> children;
  auto kill_all = [&]() {
    for (Child& c : children) {
      if (c.pid > 0) kill(c.pid, SIGKILL);
    }
    for (Child& c : children) {
      if (c.pid > 0) waitpid(c.pid, nullptr, 0);
      c.pid = -1;
    }
  };
  for (size_t i = 0; i < tenants.size(); ++i) {
    const ShareTenant& t = tenants[i];
    Result<slice::SliceDir> dir = slice::SliceDir::Create(
        slice::SliceName("bench-" + t.name), t.spec, o.sim, "vgpu bench share tenant " + t.name);
    if (!dir.has_value()) {
      kill_all();
      return dir.error();
    }
    dirs.push_back(std::move(*dir));
    Result<Child> c = Spawn(t, dirs.back(), o, t.kernel_ns ? t.kernel_ns : kernel_ns,
                            t.stop_ns ? t.stop_ns : stop_ns, t.start_ns, work, children.size());
    if (!c.has_value()) {
      kill_all();
      return c.error();
    }
    children.push_back(*c);
  }
  // Wait until every tenant has initialised CUDA.
  uint64_t deadline = MonotonicNs() + 120ULL * 1000000000ULL;
  for (Child& c : children) {
    while (!Saw(c, "ready")) {
      int status;
      if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
        c.pid = -1;
        std::string err = ReadAll(c.err_file);
        kill_all();
        return Status::Internal("a tenant failed to start: " + err);
      }
      if (MonotonicNs() > deadline) {
        kill_all();
        return Status::Internal("tenants did not start within 120 s");
      }
      usleep(2000);
    }
  }
  RunOutput out;
  out.t0 = MonotonicNs() + 20ULL * 1000000;
  std::string start = std::to_string(out.t0) + "\n";
  for (Child& c : children) {
    if (write(c.in, start.data(), start.size()) != static_cast<ssize_t>(start.size())) {
      kill_all();
      return Status::IoError("cannot start a tenant");
    }
  }
  std::unique_ptr<ShareSampler> sampler;
  if (o.sim) {
    std::vector<pid_t> pids;
    for (const Child& c : children) pids.push_back(c.pid);
    sampler = ShareSampler::Open(pids);
  }
  deadline = out.t0 + stop_ns + 60ULL * 1000000000ULL;
  for (;;) {
    usleep(100 * 1000);
    if (sampler) sampler->Sample(MonotonicNs());
    bool all_done = true;
    for (Child& c : children) {
      if (c.pid > 0 && !Saw(c, "done")) {
        int status;
        if (waitpid(c.pid, &status, WNOHANG) == c.pid) {
          c.pid = -1;
          std::string err = ReadAll(c.err_file);
          kill_all();
          return Status::Internal("a tenant failed: " + err);
        }
        all_done = false;
      }
    }
    if (all_done) break;
    if (MonotonicNs() > deadline) {
      kill_all();
      return Status::Internal("tenants did not finish in time");
    }
  }
  if (sampler) sampler->Sample(MonotonicNs());
  for (Child& c : children) close(c.in);
  for (Child& c : children) {
    int status = 0;
    waitpid(c.pid, &status, 0);
    close(c.out);
    out.records.push_back(ReadRecords(c.out_file));
  }
  for (size_t i = 0; i < tenants.size(); ++i) {
    if (sampler) {
      uint64_t until = tenants[i].stop_ns ? tenants[i].stop_ns : stop_ns;
      out.timeline.push_back(sampler->Share(i, out.t0 + tenants[i].start_ns, out.t0 + until));
    } else {
      out.timeline.push_back(std::nullopt);
    }
  }
  return out;
}

// From the end of tenant `i`'s last kernel to the start of the next kernel of another tenant that
// ends after it (0 when one was already running; nothing when there is none).
std::optional<uint64_t> IdleAfter(const std::vector<std::vector<KernelRecord>>& records, size_t i) {
  uint64_t last = 0;
  for (const KernelRecord& r : records[i]) last = std::max(last, r.end_ns);
  std::optional<uint64_t> next;
  for (size_t j = 0; j < records.size(); ++j) {
    if (j == i) continue;
    for (const KernelRecord& r : records[j]) {
      if (r.end_ns > last && (!next || r.start_ns < *next)) next = r.start_ns;
    }
  }
  if (!next) return std::nullopt;
  return *next > last ? *next - last : 0;
}

std::vector<uint64_t> Waits(const std::vector<KernelRecord>& records) {
  std::vector<uint64_t> w;
  for (const KernelRecord& r : records)
    w.push_back(r.start_ns > r.call_ns ? r.start_ns - r.call_ns : 0);
  return w;
}

}  // namespace

Result<ShareReport> RunShare(const ShareRun& o) {
  ShareReport report;
  report.sim = o.sim;
  report.seconds = o.seconds;
  report.kernel_ns = o.kernel_ns;
  report.time_slice_ns = o.time_slice_ns;
  report.tenants = o.tenants;
  char tmpl[] = "/tmp/vgpu-bench-XXXXXX";
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
  if (!o.state_dir.empty()) {
    setenv("VGPU_STATE_DIR", o.state_dir.c_str(), 1);
  } else if (o.sim) {
    setenv("VGPU_STATE_DIR", (work + "/state").c_str(), 1);
  }
  if (o.sim) setenv("VGPU_SIMGPU_STATE", (work + "/simgpu.state").c_str(), 1);

  std::vector<std::optional<double>> alone_tput(report.tenants.size());
  std::vector<std::optional<uint64_t>> alone_p99(report.tenants.size());
  if (o.baseline) {
    for (size_t i = 0; i < report.tenants.size(); ++i) {
      ShareTenant solo = report.tenants[i];
      solo.start_ns = 0;
      solo.stop_ns = 0;
      Result<RunOutput> r = RunTenants({solo}, o, report.kernel_ns, o.baseline_seconds, work);
      if (!r.has_value()) return r.error();
      alone_tput[i] = static_cast<double>(r->records[0].size()) / o.baseline_seconds;
      alone_p99[i] = Quantile(Waits(r->records[0]), 0.99);
    }
  }
  Result<RunOutput> run = RunTenants(report.tenants, o, report.kernel_ns, o.seconds, work);
  if (!run.has_value()) return run.error();
  std::vector<TenantPolicy> policies;
  uint64_t last_start = 0;
  for (const ShareTenant& t : report.tenants) {
    TenantPolicy p;
    p.max = t.spec.cores == 0 ? 100 : t.spec.cores;
    p.guarantee = t.spec.guarantee < 0 ? 0 : t.spec.guarantee;
    p.weight = t.spec.weight > 0 ? t.spec.weight : 1;
    p.level = t.spec.priority;
    p.elastic = t.spec.elastic;
    p.saturating = t.gap_ns == 0 || t.sync > 0;
    // A launch-then-sync tenant with host time between its bursts can use only so much.
    if (t.sync > 0 && t.gap_ns > 0) {
      std::optional<double> demand = SyncDemand(run->records[policies.size()], t.sync);
      if (demand) p.demand = *demand;
    }
    policies.push_back(p);
    last_start = std::max(last_start, t.start_ns);
  }
  std::vector<std::optional<double>> targets = ExpectedShares(policies);
  // A latency tenant (with gaps) takes what it needs: the share of tenants it can hold (same
  // or less important level) cannot be predicted.
  for (const TenantPolicy& p : policies) {
    if (p.saturating) continue;
    for (size_t i = 0; i < policies.size(); ++i) {
      if (policies[i].level >= p.level) targets[i].reset();
    }
  }
  uint64_t t0 = run->t0, end = run->t0 + static_cast<uint64_t>(o.seconds * 1e9);
  const uint64_t run_end = end;
  // The shared phase: from the last start to the first stop.
  for (const ShareTenant& t : report.tenants) {
    if (t.stop_ns != 0) end = std::min(end, t0 + t.stop_ns);
  }
  uint64_t phase = t0 + last_start;
  uint64_t window = static_cast<uint64_t>(o.window_s * 1e9);
  if (window > end - phase) window = end - phase;
  report.window_s = static_cast<double>(window) / 1e9;
  for (size_t i = 0; i < report.tenants.size(); ++i) {
    const std::vector<KernelRecord>& rec = run->records[i];
    ShareTenantResult x;
    x.records = rec;
    x.target = targets[i];
    if (policies[i].demand < 100) x.demand = policies[i].demand;
    x.share = BusyPercent(rec, phase, end);
    if (run->timeline[i]) {
      x.share_timeline = run->timeline[i];
      // The timeline covers the tenant's whole run; report it for the shared phase only when
      // the tenant started with the others.
      if (report.tenants[i].start_ns != last_start) x.share_timeline.reset();
    }
    x.per_second = WindowPercents(rec, t0, run_end, 1000000000ULL, 1000000000ULL);
    x.windows = WindowPercents(rec, phase, end, window, std::min<uint64_t>(window, 1000000000ULL));
    if (x.target) {
      for (double w : x.windows)
        x.worst_window_pp = std::max(x.worst_window_pp, std::fabs(w - *x.target));
      std::vector<double> shared(
          x.per_second.begin() + static_cast<long>(last_start / 1000000000ULL), x.per_second.end());
      x.converge_s = ConvergedAfter(shared, *x.target, 3.0);
    }
    std::vector<uint64_t> waits = Waits(rec);
    x.wait_p50_ns = Quantile(waits, 0.5);
    x.wait_p99_ns = Quantile(waits, 0.99);
    x.wait_max_ns = Quantile(waits, 1.0);
    const ShareTenant& bt = report.tenants[i];
    double active = (bt.stop_ns ? static_cast<double>(bt.stop_ns) / 1e9 : o.seconds) -
                    static_cast<double>(bt.start_ns) / 1e9;
    if (bt.stop_ns != 0 && !rec.empty()) x.idle_after_stop_ns = IdleAfter(run->records, i);
    x.throughput = active > 0 ? static_cast<double>(rec.size()) / active : 0;
    x.alone_throughput = alone_tput[i];
    x.alone_wait_p99_ns = alone_p99[i];
    report.results.push_back(std::move(x));
  }
  return report;
}

bool WriteKernelRecords(const std::string& path, const std::vector<KernelRecord>& records) {
  std::ofstream f(path);
  for (const KernelRecord& r : records) {
    f << r.call_ns << " " << r.start_ns << " " << r.end_ns << "\n";
  }
  f.close();
  return static_cast<bool>(f);
}

}  // namespace vgpu::bench
