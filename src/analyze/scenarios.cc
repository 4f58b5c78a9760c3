#include "analyze/scenarios.h"

#include <cstdio>

#include "common/rng.h"

namespace vgpu::analyze {
namespace {

constexpr int kSamples = 60;  // 30 minutes
constexpr double kGiB = 1073741824.0;

class Writer {
 public:
  explicit Writer(uint64_t seed) : rng_(seed) {}
  void Row(double t, const char* target, const char* signal, double v) {
    char b[160];
    std::snprintf(b, sizeof b, "%.0f,%s,%s,%.6g\n", t, target, signal, v);
    csv_ += b;
  }
  // v +- spread, uniformly.
  double Noisy(double v, double spread) { return v + spread * (2 * rng_.UniformDouble() - 1); }
  std::string Take() { return std::move(csv_); }

 private:
  Rng rng_;
  std::string csv_ = "timestamp,target,signal,value\n";
};

// A guaranteed inference tenant and a best-effort batch tenant on gpu0; `hog` from the onset.
void Tenants(Writer& w, double t, bool hog) {
  const bool on = hog && t >= kOnsetS;
  w.Row(t, "gpu0/web", "best_effort", 0);
  w.Row(t, "gpu0/web", "util", w.Noisy(45, 10));
  w.Row(t, "gpu0/web", "launches_per_s", w.Noisy(900, 100));
  w.Row(t, "gpu0/web", "copy_bytes_per_s", w.Noisy(2e8, 5e7));
  w.Row(t, "gpu0/web", "gate_wait_ratio", on ? w.Noisy(0.35, 0.05) : w.Noisy(0.04, 0.02));
  w.Row(t, "gpu0/web", "memory_used_bytes", w.Noisy(12 * kGiB, 2 << 20));
  w.Row(t, "gpu0/web", "oom_refusals_per_s", 0);
  w.Row(t, "gpu0/batch", "best_effort", 1);
  w.Row(t, "gpu0/batch", "util", w.Noisy(30, 10));
  w.Row(t, "gpu0/batch", "launches_per_s", w.Noisy(200, 50));
  w.Row(t, "gpu0/batch", "copy_bytes_per_s", on ? w.Noisy(2e10, 1e9) : w.Noisy(1e9, 2e8));
  w.Row(t, "gpu0/batch", "gate_wait_ratio", w.Noisy(0.1, 0.03));
  w.Row(t, "gpu0/batch", "memory_used_bytes", w.Noisy(20 * kGiB, 2 << 20));
  w.Row(t, "gpu0/batch", "oom_refusals_per_s", 0);
  w.Row(t, "gpu0", "xid_errors", 0);
  w.Row(t, "gpu0", "gpu_util", w.Noisy(70, 10));
  w.Row(t, "gpu0", "dram_bw_util", w.Noisy(40, 10));
  w.Row(t, "gpu0", "slices", 2);
}

}  // namespace

std::vector<std::string> ScenarioNames() {
  return {"copy_hog", "leak", "xid_burst", "idle", "quiet"};
}

Result<Scenario> MakeScenario(const std::string& name) {
  Scenario s{name, "", ""};
  Writer w(name.size() * 7919 + static_cast<unsigned char>(name[0]));
  for (int i = 0; i < kSamples; ++i) {
    const double t = kScenarioIntervalS * i;
    const bool on = t >= kOnsetS;
    if (name == "copy_hog" || name == "quiet") {
      Tenants(w, t, name == "copy_hog");
    } else if (name == "leak") {
      double grown = on ? (t - kOnsetS) / 3600.0 * kGiB : 0;
      w.Row(t, "gpu0/trainer", "best_effort", 0);
      w.Row(t, "gpu0/trainer", "util", w.Noisy(80, 10));
      w.Row(t, "gpu0/trainer", "launches_per_s", w.Noisy(500, 50));
      w.Row(t, "gpu0/trainer", "memory_used_bytes", w.Noisy(30 * kGiB + grown, 2 << 20));
      w.Row(t, "gpu0/trainer", "memory_limit_bytes", 60 * kGiB);
      w.Row(t, "gpu0/trainer", "oom_refusals_per_s", 0);
      w.Row(t, "gpu0", "xid_errors", 0);
    } else if (name == "xid_burst") {
      w.Row(t, "gpu0/web", "util", w.Noisy(45, 10));
      w.Row(t, "gpu0/web", "launches_per_s", w.Noisy(900, 100));
      w.Row(t, "gpu0", "xid_errors", on ? 3 : 0);
      w.Row(t, "gpu0", "gpu_util", w.Noisy(50, 10));
    } else if (name == "idle") {
      w.Row(t, "gpu0/notebook", "best_effort", 1);
      w.Row(t, "gpu0/notebook", "util", on ? 0 : w.Noisy(25, 10));
      w.Row(t, "gpu0/notebook", "launches_per_s", on ? 0 : w.Noisy(150, 50));
      w.Row(t, "gpu0/notebook", "memory_used_bytes", 8 * kGiB);
      w.Row(t, "gpu0", "xid_errors", 0);
    } else {
      return Status::InvalidArgument("unknown scenario '" + name +
                                     "' (known: copy_hog, leak, xid_burst, idle, quiet)");
    }
  }
  if (name == "copy_hog") s.intended_rule = "copy-hog";
  if (name == "leak") s.intended_rule = "memory-leak";
  if (name == "xid_burst") s.intended_rule = "xid-burst";
  if (name == "idle") s.intended_rule = "idle-slice";
  s.csv = w.Take();
  return s;
}

}  // namespace vgpu::analyze
