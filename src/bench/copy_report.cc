#include <algorithm>
#include <cmath>
#include <cstdio>

#include "bench/copy.h"
#include "common/field_list.h"
#include "common/units.h"
#include "slice/spec.h"

namespace vgpu::bench {
namespace {

const char* const kDirNames[2] = {"h2d", "d2h"};

std::string Rate(double bytes_per_s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f GB/s", bytes_per_s / 1e9);
  return buf;
}

std::string Number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

Result<CopyTenant> ParseCopyTenant(const std::string& text) {
  CopyTenant t;
  size_t colon = text.find(':');
  t.name = text.substr(0, colon);
  if (t.name.empty() || t.name.find_first_of(" /,=") != std::string::npos) {
    return Status::InvalidArgument("--tenant: \"" + text +
                                   "\": a tenant needs a name without spaces, '/', ',' or '=' "
                                   "(a:h2d=10GB/s)");
  }
  const std::string where = "--tenant " + t.name + ": ";
  std::string rest = colon == std::string::npos ? "" : text.substr(colon + 1);
  std::string dir;
  for (const FieldItem& kv : SplitFieldList(rest)) {
    const std::string& key = kv.field;
    const std::string& value = kv.value;
    if (key == "h2d" || key == "d2h") {
      Result<uint64_t> cap = slice::ParseCopyCap(value, where + key);
      if (!cap.has_value()) return cap.error();
      t.cap[key == "h2d" ? 0 : 1] = *cap;
    } else if (key == "dir") {
      if (value != "h2d" && value != "d2h" && value != "both") {
        return Status::InvalidArgument(where + "dir: \"" + value + "\": use h2d, d2h or both");
      }
      dir = value;
    } else if (key == "borrow") {
      if (value != "on" && value != "off") {
        return Status::InvalidArgument(where + "borrow: \"" + value + "\": use on or off");
      }
      t.borrow = value == "on";
    } else if (key == "size") {
      Result<uint64_t> s = ParseByteSize(value, where + "size");
      if (!s.has_value()) return s.error();
      if (*s < 4096 || *s > (1ULL << 30)) {
        return Status::InvalidArgument(where + "size: \"" + value +
                                       "\": must be between 4KiB and 1GiB");
      }
      t.size = *s;
    } else if (key == "start" || key == "stop") {
      Result<int64_t> d = ParseDuration(value, where + key);
      if (!d.has_value()) return d.error();
      (key == "start" ? t.start_ns : t.stop_ns) = static_cast<uint64_t>(*d);
    } else {
      return Status::InvalidArgument(where + "unknown key \"" + key +
                                     "\" (known: " + kCopyTenantKeys + ")");
    }
  }
  if (dir == "both" || dir == "h2d") t.copies[0] = true;
  if (dir == "both" || dir == "d2h") t.copies[1] = true;
  if (dir.empty()) {
    t.copies[0] = t.cap[0] != 0 || t.cap[1] == 0;
    t.copies[1] = t.cap[1] != 0;
  }
  if (t.stop_ns != 0 && t.stop_ns <= t.start_ns) {
    return Status::InvalidArgument(where + "stop must come after start");
  }
  return t;
}

CopyTenantResult AnalyzeCopies(const CopyTenant& t, const std::vector<CopyRecord>& records,
                               uint64_t from_ns, uint64_t to_ns, uint64_t window_ns) {
  CopyTenantResult r;
  for (int d = 0; d < 2; ++d) {
    CopyDirResult& x = r.dir[d];
    x.active = t.copies[d];
    if (!x.active) continue;
    if (t.cap[d] != 0) x.target = static_cast<double>(t.cap[d]);
    if (to_ns <= from_ns) continue;
    size_t windows = window_ns == 0 ? 0 : static_cast<size_t>((to_ns - from_ns) / window_ns);
    std::vector<uint64_t> per(windows, 0);
    for (const CopyRecord& c : records) {
      if (c.dir != d || c.end_ns < from_ns || c.end_ns >= to_ns) continue;
      x.bytes += c.bytes;
      size_t w = static_cast<size_t>((c.end_ns - from_ns) / window_ns);
      if (w < windows) per[w] += c.bytes;
    }
    x.rate = static_cast<double>(x.bytes) / (static_cast<double>(to_ns - from_ns) / 1e9);
    for (uint64_t b : per) {
      double rate = static_cast<double>(b) / (static_cast<double>(window_ns) / 1e9);
      x.windows.push_back(rate);
      if (x.target) {
        x.worst_window_pct = std::max(x.worst_window_pct, std::fabs(rate / *x.target - 1) * 100);
      }
    }
  }
  return r;
}

std::string CopyReportText(const CopyReport& report) {
  std::string out;
  char line[256];
  std::snprintf(line, sizeof line, "vgpu bench copy: %zu tenants, %.1f s%s, windows of %.1f s\n",
                report.tenants.size(), report.seconds, report.sim ? " on the simulated GPU" : "",
                report.window_s);
  out += line;
  if (report.link[0] != 0 || report.link[1] != 0) {
    out += "host link: h2d " + Rate(static_cast<double>(report.link[0])) + ", d2h " +
           Rate(static_cast<double>(report.link[1])) + "\n";
  }
  std::snprintf(line, sizeof line, "%-12s %-4s %-14s %-14s %-8s %s\n", "tenant", "dir", "target",
                "achieved", "worst", "windows (GB/s)");
  out += line;
  for (size_t i = 0; i < report.tenants.size(); ++i) {
    for (int d = 0; d < 2; ++d) {
      const CopyDirResult& x = report.results[i].dir[d];
      if (!x.active) continue;
      std::string windows;
      for (double w : x.windows) {
        char b[16];
        std::snprintf(b, sizeof b, "%s%.3f", windows.empty() ? "" : " ", w / 1e9);
        windows += b;
      }
      std::string worst = "-";
      if (x.target) {
        char b[16];
        std::snprintf(b, sizeof b, "%.1f%%", x.worst_window_pct);
        worst = b;
      }
      std::snprintf(line, sizeof line, "%-12s %-4s %-14s %-14s %-8s ",
                    report.tenants[i].name.c_str(), kDirNames[d],
                    x.target ? Rate(*x.target).c_str() : "none", Rate(x.rate).c_str(),
                    worst.c_str());
      out += line + windows + "\n";
    }
  }
  return out;
}

std::string CopyReportJson(const CopyReport& report) {
  std::string out = "{\"sim\":" + std::string(report.sim ? "true" : "false") +
                    ",\"seconds\":" + Number(report.seconds) +
                    ",\"window_s\":" + Number(report.window_s) +
                    ",\"link\":{\"h2d\":" + Number(static_cast<double>(report.link[0])) +
                    ",\"d2h\":" + Number(static_cast<double>(report.link[1])) + "},\"tenants\":[";
  for (size_t i = 0; i < report.tenants.size(); ++i) {
    const CopyTenant& t = report.tenants[i];
    out += std::string(i ? "," : "") + "{\"name\":\"" + t.name +
           "\",\"borrow\":" + (t.borrow ? "true" : "false");
    for (int d = 0; d < 2; ++d) {
      const CopyDirResult& x = report.results[i].dir[d];
      if (!x.active) continue;
      out += std::string(",\"") + kDirNames[d] +
             "\":{\"target\":" + (x.target ? Number(*x.target) : "null") +
             ",\"achieved\":" + Number(x.rate) + ",\"bytes\":" + std::to_string(x.bytes) +
             ",\"worst_window_pct\":" + Number(x.worst_window_pct) + ",\"windows\":[";
      for (size_t w = 0; w < x.windows.size(); ++w) {
        out += (w ? "," : "") + Number(x.windows[w]);
      }
      out += "]}";
    }
    out += "}";
  }
  out += "]}\n";
  return out;
}

}  // namespace vgpu::bench
