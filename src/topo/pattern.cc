#include "topo/pattern.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

namespace vgpu::topo {
namespace {

Status Bad(const std::string& why) {
  return Status::InvalidArgument(std::string(kCommPatternAnnotation) + ": " + why);
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool ParseNumber(std::string_view s, double* out) {
  std::string text(Trim(s));
  if (text.empty()) return false;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size() || !std::isfinite(v) || v < 0) return false;
  *out = v;
  return true;
}

bool ParseCount(std::string_view s, int* out) {
  double v = 0;
  if (!ParseNumber(s, &v) || v != std::floor(v) || v < 1 || v > 1024) return false;
  *out = static_cast<int>(v);
  return true;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t pos = 0;
  while (true) {
    size_t end = s.find(sep, pos);
    out.push_back(
        s.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
    if (end == std::string_view::npos) return out;
    pos = end + 1;
  }
}

Result<CommPattern> ParseMatrix(std::string_view body, int gpus) {
  CommPattern p;
  p.kind = CommPattern::Kind::kMatrix;
  std::vector<std::string_view> rows = Split(body, ';');
  int n = static_cast<int>(rows.size());
  if (n > gpus) {
    return Bad("matrix has " + std::to_string(n) + " ranks but the pod asks for " +
               std::to_string(gpus) + " GPUs (more ranks than GPUs)");
  }
  if (n != gpus) {
    return Bad("matrix has " + std::to_string(n) + " ranks; it must have one per GPU (" +
               std::to_string(gpus) + ")");
  }
  p.ranks = n;
  p.matrix.assign(static_cast<size_t>(n) * n, 0.0);
  for (int r = 0; r < n; ++r) {
    std::string row(rows[r]);
    std::replace(row.begin(), row.end(), ',', ' ');
    std::vector<std::string_view> values;
    for (std::string_view v : Split(row, ' ')) {
      if (!Trim(v).empty()) values.push_back(v);
    }
    if (static_cast<int>(values.size()) != n) {
      return Bad("matrix row " + std::to_string(r) + " has " + std::to_string(values.size()) +
                 " values, expected " + std::to_string(n));
    }
    for (int c = 0; c < n; ++c) {
      double v = 0;
      if (!ParseNumber(values[c], &v)) {
        return Bad("matrix row " + std::to_string(r) + " column " + std::to_string(c) + ": \"" +
                   std::string(Trim(values[c])) + "\" is not a non-negative number");
      }
      if (r == c && v != 0) {
        return Bad("matrix row " + std::to_string(r) + " column " + std::to_string(c) +
                   ": a rank sends nothing to itself (must be 0)");
      }
      p.matrix[r * n + c] = v;
    }
  }
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      double m = std::max(p.matrix[a * n + b], p.matrix[b * n + a]);
      p.matrix[a * n + b] = p.matrix[b * n + a] = m;
    }
  }
  return p;
}

}  // namespace

Result<CommPattern> ParseCommPattern(std::string_view text, int gpus) {
  text = Trim(text);
  if (gpus < 1) return Bad("the pod asks for no GPUs");
  if (text.rfind("matrix=", 0) == 0) return ParseMatrix(text.substr(7), gpus);
  CommPattern p;
  std::vector<std::string_view> fields = Split(text, ',');
  bool dp_gb_set = false;
  std::string_view head = Trim(fields[0]);
  size_t first_option = 1;
  if (head == "allreduce" || head.empty()) {
    p.kind = CommPattern::Kind::kAllReduce;
  } else if (head == "pipeline") {
    p.kind = CommPattern::Kind::kPipeline;
  } else if (head.rfind("tp=", 0) == 0) {
    p.kind = CommPattern::Kind::kTensorData;
    first_option = 0;
  } else {
    return Bad("unknown pattern \"" + std::string(head) +
               "\" (known: allreduce, pipeline, tp=T,dp=D, matrix=...)");
  }
  for (size_t i = first_option; i < fields.size(); ++i) {
    std::string_view f = Trim(fields[i]);
    size_t eq = f.find('=');
    std::string_view key = eq == std::string_view::npos ? f : f.substr(0, eq);
    std::string_view value = eq == std::string_view::npos ? "" : f.substr(eq + 1);
    bool ok = eq != std::string_view::npos;
    if (key == "gb") {
      ok = ok && ParseNumber(value, &p.gb) && p.gb > 0;
    } else if (key == "dpgb" && p.kind == CommPattern::Kind::kTensorData) {
      ok = ok && ParseNumber(value, &p.dp_gb);
      dp_gb_set = true;
    } else if (key == "tp" && p.kind == CommPattern::Kind::kTensorData) {
      ok = ok && ParseCount(value, &p.tp);
    } else if (key == "dp" && p.kind == CommPattern::Kind::kTensorData) {
      ok = ok && ParseCount(value, &p.dp);
    } else {
      return Bad("unknown field \"" + std::string(key) + "\"");
    }
    if (!ok) return Bad("field " + std::string(key) + ": bad value \"" + std::string(value) + "\"");
  }
  if (p.kind == CommPattern::Kind::kTensorData) {
    if (p.tp == 0 || p.dp == 0) return Bad("tp=T,dp=D needs both tp and dp");
    if (p.tp * p.dp > gpus) {
      return Bad("tp*dp = " + std::to_string(p.tp * p.dp) + " ranks but the pod asks for " +
                 std::to_string(gpus) + " GPUs (more ranks than GPUs)");
    }
    if (p.tp * p.dp != gpus) {
      return Bad("tp*dp = " + std::to_string(p.tp * p.dp) + " must equal the GPU count (" +
                 std::to_string(gpus) + ")");
    }
    if (!dp_gb_set) p.dp_gb = p.gb / 8;
  }
  return p;
}

double PatternSeconds(Evaluator& ev, const CommPattern& p, const std::vector<int>& g) {
  int k = static_cast<int>(g.size());
  if (k < 2) return 0.0;
  auto matrix_time = [&](auto weight) {
    double worst = 0;
    for (int a = 0; a < k; ++a) {
      double t = 0;
      for (int b = 0; b < k; ++b) {
        if (a != b) {
          double w = weight(a, b);
          if (w > 0) t += w / ev.Pair(g[a], g[b]);
        }
      }
      worst = std::max(worst, t);
    }
    return worst;
  };
  switch (p.kind) {
    case CommPattern::Kind::kAllReduce:
      return ev.AllReduceSeconds(GpusMask(g), p.gb);
    case CommPattern::Kind::kPipeline: {
      // The matrix with W[r][r+1] = W[r+1][r] = gb, summed over each rank's two neighbours only.
      double worst = 0;
      for (int a = 0; a < k; ++a) {
        double t = 0;
        if (a > 0) t += p.gb / ev.Pair(g[a], g[a - 1]);
        if (a + 1 < k) t += p.gb / ev.Pair(g[a], g[a + 1]);
        worst = std::max(worst, t);
      }
      return worst;
    }
    case CommPattern::Kind::kMatrix:
      return matrix_time([&](int a, int b) { return p.matrix[a * p.ranks + b]; });
    case CommPattern::Kind::kTensorData: {
      // Group masks built in place: this runs for every permutation of the rank order search.
      double tp_time = 0, dp_time = 0;
      for (int group = 0; group < p.dp; ++group) {
        GpuMask members = 0;
        for (int i = group * p.tp; i < (group + 1) * p.tp; ++i) members |= GpuMask{1} << g[i];
        tp_time = std::max(tp_time, ev.AllReduceSeconds(members, p.gb));
      }
      for (int lane = 0; lane < p.tp; ++lane) {
        GpuMask members = 0;
        for (int group = 0; group < p.dp; ++group) members |= GpuMask{1} << g[group * p.tp + lane];
        dp_time = std::max(dp_time, ev.AllReduceSeconds(members, p.dp_gb));
      }
      return tp_time + dp_time;
    }
  }
  return 0.0;
}

}  // namespace vgpu::topo
