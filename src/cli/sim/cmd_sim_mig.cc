// `vgpu sim --mode replay --mig MODEL`: the time-based replay on MIG GPUs (sim/mig_replay.h),
// comparing the MIG placement rules at each load point and seed.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <string>

#include "cli/sim/sim_replay.h"
#include "mig/profiles.h"
#include "sim/mig_replay.h"
#include "sim/options.h"
#include "sim/replay_options.h"
#include "sim/trace.h"

namespace vgpu::cli {
namespace {

Result<std::vector<mig::PlacementRule>> ParseRules(const std::string& text) {
  std::vector<mig::PlacementRule> out;
  size_t start = 0;
  while (true) {
    const size_t end = text.find(',', start);
    const std::string name = text.substr(start, end == std::string::npos ? end : end - start);
    bool known = false;
    for (auto r : {mig::PlacementRule::kFragmentationAware, mig::PlacementRule::kFirstFit,
                   mig::PlacementRule::kHami}) {
      if (mig::PlacementRuleName(r) == name) {
        known = true;
        if (std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
      }
    }
    if (!known) {
      return Status::InvalidArgument(
          "--policy: with --mig the policies are the MIG placement "
          "rules ours, first-fit, hami; got '" +
          name + "'");
    }
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return out;
}

// "1g.10gb 41%, 7g.80gb 52%, ...": the share of the requests per profile (those asked for).
std::string MixLine(const mig::ModelTable& table, const std::vector<int64_t>& asked) {
  int64_t total = 0;
  for (int64_t a : asked) total += a;
  std::string out;
  for (size_t q = 0; q < asked.size() && total > 0; ++q) {
    if (asked[q] == 0) continue;
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s%.*s %.1f%%", out.empty() ? "" : ", ",
                  static_cast<int>(table.profiles[q].name.size()), table.profiles[q].name.data(),
                  100.0 * static_cast<double>(asked[q]) / static_cast<double>(total));
    out += buf;
  }
  return out;
}

}  // namespace

Status RunMigReplayMode(const SimCommonFlags& c, const ReplayFlags& f) {
  Result<const mig::ModelTable*> found = mig::LookupModel(f.mig);
  if (!found) return Status::InvalidArgument("--mig: " + found.error().message());
  const mig::ModelTable* table = *found;
  if (f.queue != "fifo" || f.alloc != "shared,whole" || !f.step.empty() || !c.csv.empty() ||
      !c.svg.empty()) {
    return Status::InvalidArgument(
        "--mig: --queue, --alloc, --step, --csv and --svg do not apply (MIG pods that do not fit "
        "on arrival are refused; the output is the table or --json)");
  }
  VGPU_RETURN_IF_ERROR(InputFile("--nodes", c.nodes));
  VGPU_RETURN_IF_ERROR(InputFile("--pods", c.pods));
  std::vector<mig::PlacementRule> rules = {mig::PlacementRule::kFragmentationAware,
                                           mig::PlacementRule::kFirstFit,
                                           mig::PlacementRule::kHami};
  if (c.policy_given) {
    auto parsed = ParseRules(c.policy);
    if (!parsed) return parsed.error();
    rules = *parsed;
  }
  std::vector<uint64_t> seeds = {42};
  if (c.seeds_given) {
    auto parsed = sim::ParseSeedList(c.seeds);
    if (!parsed) return parsed.error().WithContext("--seeds");
    seeds = *parsed;
  }
  auto compress = sim::ParseNumberList(f.time_compress, 0.001, 1e7);
  if (!compress) return compress.error().WithContext("--time-compress");
  auto scales = sim::ParseNumberList(f.cluster_scale, 0.0001, 1);
  if (!scales) return scales.error().WithContext("--cluster-scale");
  int64_t horizon_us = 0;
  if (!f.horizon.empty()) {
    auto h = sim::ParseTimeSpan(f.horizon);
    if (!h) return h.error().WithContext("--horizon");
    horizon_us = *h;
  }
  sched::ModelRegistry models;
  auto nodes = sim::LoadNodeList(c.nodes, &models);
  if (!nodes) return AsBadInput(nodes.error());
  std::sort(nodes->begin(), nodes->end(),
            [](const sched::NodeSpec& a, const sched::NodeSpec& b) { return a.name < b.name; });
  auto pods = sim::LoadTimedPodList(c.pods, models);
  if (!pods) return AsBadInput(pods.error());

  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  if (!c.json) {
    std::printf(
        "MIG replay: every GPU a mig-dynamic %.*s; pods refused when they do not fit on "
        "arrival; means over %zu seed(s)\n",
        static_cast<int>(table->key.size()), table->key.data(), seeds.size());
    std::printf("%-9s %-7s %-10s %6s %6s %9s %10s %10s %8s\n", "COMPRESS", "SCALE", "RULE", "NODES",
                "GPUS", "ARRIVALS", "ACCEPTED", "STRANDED", "USED");
  }
  for (double k : *compress) {
    sim::JobOptions jo;
    jo.time_compress = k;
    jo.run_time_from =
        f.run_time_from == "creation" ? sim::RunTimeFrom::kCreation : sim::RunTimeFrom::kScheduled;
    jo.include_pending = f.include_pending;
    auto jobs = sim::MakeJobs(*pods, jo);
    if (!jobs) return AsBadInput(jobs.error());
    const int64_t horizon = horizon_us > 0 ? horizon_us : std::max<int64_t>(1, jobs->span_us);
    for (double scale : *scales) {
      std::string mix_line;
      for (mig::PlacementRule rule : rules) {
        double nodes_n = 0, gpus = 0, arrivals = 0, accepted = 0, stranded = 0, used = 0;
        std::vector<int64_t> asked(table->profiles.size(), 0);
        for (uint64_t seed : seeds) {
          sim::MigReplayConfig cfg{table, rule, seed, scale, horizon};
          auto r = sim::RunMigReplay(*nodes, jobs->jobs, cfg);
          if (!r) return r.error();
          nodes_n += static_cast<double>(r->nodes);
          for (size_t q = 0; q < asked.size(); ++q) asked[q] += r->asked_by_profile[q];
          gpus += static_cast<double>(r->gpus);
          arrivals += static_cast<double>(r->arrivals);
          accepted += r->accepted_pct();
          stranded += r->stranded_pct;
          used += r->used_pct;
        }
        const double n = static_cast<double>(seeds.size());
        const std::string_view name = mig::PlacementRuleName(rule);
        if (rule == rules.front()) mix_line = MixLine(*table, asked);
        if (c.json) {
          rows.push_back({{"time_compress", k},
                          {"cluster_scale", scale},
                          {"rule", name},
                          {"nodes", nodes_n / n},
                          {"gpus", gpus / n},
                          {"arrivals", arrivals / n},
                          {"accepted_pct", accepted / n},
                          {"stranded_pct", stranded / n},
                          {"used_pct", used / n}});
        } else {
          std::printf("%-9g %-7g %-10.*s %6.0f %6.0f %9.0f %9.2f%% %9.2f%% %7.2f%%\n", k, scale,
                      static_cast<int>(name.size()), name.data(), nodes_n / n, gpus / n,
                      arrivals / n, accepted / n, stranded / n, used / n);
        }
      }
      if (!c.json) std::printf("          requests: %s\n", mix_line.c_str());
    }
  }
  if (c.json) {
    std::printf("%s\n", nlohmann::ordered_json(
                            {{"mig_model", table->key}, {"seeds", seeds}, {"rows", rows}})
                            .dump(2)
                            .c_str());
  }
  return Status::Ok();
}

}  // namespace vgpu::cli
