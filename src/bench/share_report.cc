// Tenant specs and the report of `vgpu bench share` (text table and JSON).
#include <cinttypes>
#include <cstdio>
#include <string>

#include "bench/share.h"
#include "common/field_list.h"
#include "common/json_string.h"
#include "common/units.h"
#include "shm/arbiter.h"

namespace vgpu::bench {
namespace {

std::string Ms(uint64_t ns) { return FormatFixed(static_cast<double>(ns) / 1e6, 3); }

std::string OptNum(const std::optional<double>& v) { return v ? FormatFixed(*v, 2) : "null"; }

std::string Series(const std::vector<double>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + FormatFixed(v[i], 2);
  return s + "]";
}

std::string Policy(const ShareTenant& t) {
  const slice::SliceSpec& s = t.spec;
  std::string p = "max " + std::to_string(s.cores == 0 ? 100 : s.cores);
  if (s.elastic) {
    p += " guar " + std::to_string(s.guarantee < 0 ? 0 : s.guarantee) + " elastic";
  } else {
    p += " capped";
  }
  if (s.weight > 0) p += " w" + std::to_string(s.weight);
  p += std::string(" ") + shm::PriorityName(s.priority);
  return p;
}

}  // namespace

Result<ShareTenant> ParseShareTenant(const std::string& text) {
  ShareTenant t;
  size_t colon = text.find(':');
  t.name = text.substr(0, colon);
  if (t.name.empty()) {
    return Status::InvalidArgument("--tenant: \"" + text + "\": a tenant needs a name (a:max=30)");
  }
  std::string where = "--tenant " + t.name + ": ";
  std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  for (const FieldItem& kv : SplitFieldList(rest)) {
    const std::string& key = kv.field;
    const std::string& value = kv.value;
    const std::string item = kv.has_value ? key + "=" + value : key;
    auto duration = [&](uint64_t* out) -> Status {
      Result<int64_t> d = ParseDuration(value, where + key);
      if (!d.has_value()) return d.error();
      *out = static_cast<uint64_t>(*d);
      return Status::Ok();
    };
    Status st = Status::Ok();
    if (key == "max" || key == "cores") {
      t.flags.cores = value;
    } else if (key == "guarantee") {
      t.flags.guarantee = value;
    } else if (key == "weight") {
      t.flags.weight = value;
    } else if (key == "priority") {
      t.flags.priority = value;
    } else if (key == "elastic" && (value.empty() || value == "true" || value == "false")) {
      t.flags.elastic = value != "false";
    } else if (key == "elastic") {
      st = Status::InvalidArgument(where + "elastic: \"" + value +
                                   "\": use elastic, elastic=true or elastic=false");
    } else if (key == "mode") {
      if (value != "elastic" && value != "capped") {
        st = Status::InvalidArgument(where + "mode: \"" + value + "\": use elastic or capped");
      }
      t.flags.elastic = value == "elastic";
    } else if (key == "time_slice") {
      t.flags.time_slice = value;
    } else if (key == "latency_slack") {
      t.flags.latency_slack = value;
    } else if (key == "kernel") {
      st = duration(&t.kernel_ns);
      if (st.ok() && t.kernel_ns == 0) {
        st = Status::InvalidArgument(where + "kernel: must be above 0");
      }
    } else if (key == "gap") {
      st = duration(&t.gap_ns);
    } else if (key == "start") {
      st = duration(&t.start_ns);
    } else if (key == "stop") {
      st = duration(&t.stop_ns);
      if (st.ok() && t.stop_ns == 0) st = Status::InvalidArgument(where + "stop: must be above 0");
    } else if (key == "launch") {
      if (value != "kernel" && value != "ptsz" && value != "ex" && value != "coop" &&
          value != "graph") {
        st = Status::InvalidArgument(where + "launch: \"" + value +
                                     "\": use kernel, ptsz, ex, coop or graph");
      }
      t.launch = value;
    } else if (key == "depth") {
      Result<uint64_t> d = ParseUnsigned(value, where + "depth");
      if (!d.has_value()) return d.error();
      if (*d < 1 || *d > 1024) return Status::InvalidArgument(where + "depth: must be 1-1024");
      t.depth = static_cast<int>(*d);
    } else if (key == "sync") {
      Result<uint64_t> d = ParseUnsigned(value, where + "sync");
      if (!d.has_value()) return d.error();
      if (*d < 1 || *d > 1024) return Status::InvalidArgument(where + "sync: must be 1-1024");
      t.sync = static_cast<int>(*d);
    } else {
      st = Status::InvalidArgument(where + "\"" + item + "\": unknown key (" +
                                   std::string(kShareTenantKeys) + ")");
    }
    if (!st.ok()) return st;
  }
  if (t.sync > 0 && t.depth > 0) {
    return Status::InvalidArgument(where + "depth and sync: give one (a sync tenant has its " +
                                   "sync kernels in flight)");
  }
  Result<slice::SliceSpec> spec = slice::ParseSliceSpec(t.flags, where);
  if (!spec.has_value()) return spec.error();
  t.spec = *spec;
  return t;
}

std::string ShareReportText(const ShareReport& r) {
  std::string t;
  char line[512];
  std::snprintf(
      line, sizeof line,
      "vgpu bench share: %s GPU, %.1f s, time slice %s ms, kernels %s ms, windows %.0f s\n",
      r.sim ? "simulated" : "real", r.seconds, Ms(r.time_slice_ns).c_str(), Ms(r.kernel_ns).c_str(),
      r.window_s);
  t += line;
  std::snprintf(line, sizeof line, "%-10s %-34s %7s %8s %8s %7s %8s %9s %9s %10s %s\n", "tenant",
                "policy", "target", "achieved", "timeline", "worst", "converge", "wait p50",
                "wait p99", "kernels/s", "vs alone");
  t += line;
  for (size_t i = 0; i < r.tenants.size(); ++i) {
    const ShareTenant& b = r.tenants[i];
    const ShareTenantResult& x = r.results[i];
    std::string policy = Policy(b);
    if (b.gap_ns > 0) policy += " gap " + Ms(b.gap_ns) + "ms";
    if (b.launch != "kernel") policy += " " + b.launch;
    if (b.depth > 0) policy += " depth " + std::to_string(b.depth);
    if (b.sync > 0) policy += " sync " + std::to_string(b.sync);
    if (b.spec.latency_slack_ns > 0) {
      policy += " slack " + Ms(static_cast<uint64_t>(b.spec.latency_slack_ns)) + "ms";
    }
    if (b.start_ns > 0)
      policy += " @" + FormatFixed(static_cast<double>(b.start_ns) / 1e9, 1) + "s";
    if (b.stop_ns > 0)
      policy += " stop " + FormatFixed(static_cast<double>(b.stop_ns) / 1e9, 1) + "s";
    std::string alone = x.alone_throughput && *x.alone_throughput > 0
                            ? FormatFixed(100.0 * x.throughput / *x.alone_throughput, 1) + "%"
                            : "-";
    std::snprintf(line, sizeof line, "%-10s %-34s %7s %8s %8s %7s %8s %9s %9s %10s %s\n",
                  b.name.c_str(), policy.c_str(),
                  x.target ? FormatFixed(*x.target, 1).c_str() : "-",
                  FormatFixed(x.share, 2).c_str(),
                  x.share_timeline ? FormatFixed(*x.share_timeline, 2).c_str() : "-",
                  x.target ? ("±" + FormatFixed(x.worst_window_pp, 2)).c_str() : "-",
                  x.converge_s >= 0 ? (std::to_string(x.converge_s) + " s").c_str() : "-",
                  (Ms(x.wait_p50_ns) + "ms").c_str(), (Ms(x.wait_p99_ns) + "ms").c_str(),
                  FormatFixed(x.throughput, 1).c_str(), alone.c_str());
    t += line;
  }
  t += "target: expected share with all tenants running; achieved: share once all run (events); "
       "timeline: the simulated GPU's own count; worst: largest deviation of a window from the "
       "target; converge: seconds after the last tenant started until every 1 s window is "
       "within 3 points; wait: launch call to kernel start.\n";
  return t;
}

std::string ShareReportJson(const ShareReport& r) {
  std::string j = "{\"gpu\":" + JsonString(r.sim ? "simulated" : "real") +
                  ",\"seconds\":" + FormatFixed(r.seconds, 3) +
                  ",\"window_s\":" + FormatFixed(r.window_s, 3) +
                  ",\"kernel_ms\":" + Ms(r.kernel_ns) +
                  ",\"time_slice_ms\":" + Ms(r.time_slice_ns) + ",\"tenants\":[";
  for (size_t i = 0; i < r.tenants.size(); ++i) {
    const ShareTenant& b = r.tenants[i];
    const ShareTenantResult& x = r.results[i];
    const slice::SliceSpec& s = b.spec;
    j += i ? "," : "";
    j += "{\"name\":" + JsonString(b.name) +
         ",\"max\":" + std::to_string(s.cores == 0 ? 100 : s.cores) + ",\"guarantee\":" +
         std::to_string(s.elastic ? (s.guarantee < 0 ? 0 : s.guarantee)
                                  : (s.cores == 0 ? 0 : s.cores)) +
         ",\"weight\":" + std::to_string(s.weight > 0 ? s.weight : 1) +
         ",\"priority\":" + JsonString(shm::PriorityName(s.priority)) +
         ",\"mode\":" + JsonString(s.elastic ? "elastic" : "capped") +
         ",\"launch\":" + JsonString(b.launch) + ",\"kernel_ms\":" + Ms(b.kernel_ns) +
         ",\"gap_ms\":" + Ms(b.gap_ns) +
         ",\"start_s\":" + FormatFixed(static_cast<double>(b.start_ns) / 1e9, 3) + ",\"stop_s\":" +
         (b.stop_ns ? FormatFixed(static_cast<double>(b.stop_ns) / 1e9, 3) : "null") +
         ",\"idle_after_stop_ms\":" +
         (x.idle_after_stop_ns ? Ms(*x.idle_after_stop_ns) : std::string("null")) +
         ",\"depth\":" + std::to_string(b.depth) + ",\"sync\":" + std::to_string(b.sync) +
         ",\"latency_slack_ms\":" +
         Ms(s.latency_slack_ns > 0 ? static_cast<uint64_t>(s.latency_slack_ns) : 0) +
         ",\"target\":" + OptNum(x.target) + ",\"demand\":" + OptNum(x.demand) +
         ",\"share\":" + FormatFixed(x.share, 3) +
         ",\"share_timeline\":" + OptNum(x.share_timeline) +
         ",\"per_second\":" + Series(x.per_second) + ",\"windows\":" + Series(x.windows) +
         ",\"worst_window_pp\":" + (x.target ? FormatFixed(x.worst_window_pp, 3) : "null") +
         ",\"converge_s\":" + (x.converge_s >= 0 ? std::to_string(x.converge_s) : "null") +
         ",\"kernels\":" + std::to_string(x.records.size()) +
         ",\"throughput\":" + FormatFixed(x.throughput, 3) +
         ",\"wait_p50_ms\":" + Ms(x.wait_p50_ns) + ",\"wait_p99_ms\":" + Ms(x.wait_p99_ns) +
         ",\"wait_max_ms\":" + Ms(x.wait_max_ns) +
         ",\"alone_throughput\":" + OptNum(x.alone_throughput) +
         ",\"alone_wait_p99_ms\":" + (x.alone_wait_p99_ns ? Ms(*x.alone_wait_p99_ns) : "null") +
         ",\"throughput_ratio\":" +
         (x.alone_throughput && *x.alone_throughput > 0
              ? FormatFixed(x.throughput / *x.alone_throughput, 4)
              : "null") +
         "}";
  }
  return j + "]}\n";
}

}  // namespace vgpu::bench
