#include "sim/report.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

namespace vgpu::sim {
namespace {

std::string Fixed(double v, int digits = 2) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Pad(const std::string& s, size_t width, bool left = false) {
  // Width in characters; '±' is two bytes in UTF-8.
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80 ? 1 : 0;
  if (chars >= width) return s;
  std::string pad(width - chars, ' ');
  return left ? s + pad : pad + s;
}

}  // namespace

std::string FormatSeeds(const std::vector<uint64_t>& seeds) {
  bool consecutive = seeds.size() > 2;
  for (size_t i = 1; i < seeds.size() && consecutive; ++i)
    consecutive = seeds[i] == seeds[i - 1] + 1;
  if (consecutive) return std::to_string(seeds.front()) + "-" + std::to_string(seeds.back());
  std::string out;
  for (uint64_t s : seeds) out += (out.empty() ? "" : ",") + std::to_string(s);
  return out;
}

std::string CsvText(const std::vector<PolicyRuns>& runs) {
  std::string out = "policy,seed,arrived_pct,allocated_pct,unallocated_pct,frag_rate_pct\n";
  for (const PolicyRuns& p : runs) {
    for (const SeedResult& s : p.seeds) {
      for (const LevelValue& v : s.levels) {
        out += p.policy + "," + std::to_string(s.seed) + "," + std::to_string(v.arrived_pct) + "," +
               Fixed(v.allocated_pct) + "," + Fixed(100.0 - v.allocated_pct) + "," +
               Fixed(v.frag_rate_pct) + "\n";
      }
    }
  }
  return out;
}

std::string FormatTable(const std::vector<PolicySummary>& summaries, const ReportInfo& info) {
  const bool published = info.published != nullptr && info.published->HasWorkload(info.trace);
  size_t name_width = 8;
  for (const PolicySummary& s : summaries) name_width = std::max(name_width, s.policy.size());
  std::string out;
  out += info.trace + ": " + std::to_string(info.pods) + " pods on " + std::to_string(info.nodes) +
         " nodes / " + std::to_string(info.gpus) + " GPUs, inflated to " +
         Fixed(info.inflate * 100, 0) + "%, " + std::to_string(info.seeds.size()) + " seed" +
         (info.seeds.size() == 1 ? "" : "s") + " (" + FormatSeeds(info.seeds) + ")\n";
  out += "Unallocated GPU % at each arrived-workload level (mean±sd over seeds)";
  out += published ? "; pub@100 = the FGD authors' published mean at 100%, delta = ours - pub.\n\n"
                   : ".\n\n";
  constexpr size_t kCell = 13;
  out += Pad("policy", name_width, true);
  for (int level : kTableLevels) out += Pad(std::to_string(level) + "%", kCell);
  if (published) out += Pad("pub@100", 9) + Pad("delta", 7);
  out += Pad("failed pods", 13) + "\n";
  for (const PolicySummary& s : summaries) {
    out += Pad(s.policy, name_width, true);
    for (int level : kTableLevels) {
      const LevelStats* l = FindLevel(s, level);
      out += Pad(l == nullptr ? "-" : Fixed(l->unallocated.mean) + "±" + Fixed(l->unallocated.sd),
                 kCell);
    }
    if (published) {
      auto p = info.published->Find(info.trace, s.policy, 100);
      const LevelStats* l = FindLevel(s, 100);
      if (p && l != nullptr) {
        const double delta = l->unallocated.mean - p->mean;
        out += Pad(Fixed(p->mean), 9) + Pad((delta >= 0 ? "+" : "") + Fixed(delta), 7);
      } else {
        out += Pad("-", 9) + Pad("-", 7);
      }
    }
    out += Pad(Fixed(s.failed_pods, 0), 13) + "\n";
  }
  return out;
}

std::string FormatJson(const std::vector<PolicySummary>& summaries, const ReportInfo& info) {
  using nlohmann::json;
  json j;
  j["trace"] = info.trace;
  j["pods"] = info.pods;
  j["nodes"] = info.nodes;
  j["gpus"] = info.gpus;
  j["inflate"] = info.inflate;
  j["seeds"] = info.seeds;
  json policies = json::array();
  for (const PolicySummary& s : summaries) {
    json p;
    p["policy"] = s.policy;
    p["failed_pods_mean"] = s.failed_pods;
    p["pods_mean"] = s.pods;
    json levels = json::array();
    for (const LevelStats& l : s.levels) {
      json v;
      v["arrived_pct"] = l.arrived_pct;
      v["unallocated_mean"] = std::round(l.unallocated.mean * 1000) / 1000;
      v["unallocated_sd"] = std::round(l.unallocated.sd * 1000) / 1000;
      v["frag_rate_mean"] = std::round(l.frag_rate.mean * 1000) / 1000;
      if (info.published != nullptr) {
        if (auto pub = info.published->Find(info.trace, s.policy, l.arrived_pct)) {
          v["published_unallocated_mean"] = pub->mean;
          v["published_unallocated_sd"] = pub->sd;
        }
      }
      levels.push_back(v);
    }
    p["levels"] = levels;
    policies.push_back(p);
  }
  j["policies"] = policies;
  return j.dump(2) + "\n";
}

Status WriteTextFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Status::IoError(path + ": cannot write: " + std::strerror(errno));
  out << text;
  out.close();
  if (!out) return Status::IoError(path + ": write failed");
  return Status::Ok();
}

}  // namespace vgpu::sim
