#include "sim/replay_report.h"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/replay_options.h"
#include "sim/report.h"

namespace vgpu::sim {
namespace {

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string Pad(const std::string& s, size_t width, bool left = false) {
  size_t chars = 0;
  for (unsigned char c : s) chars += (c & 0xC0) != 0x80 ? 1 : 0;
  if (chars >= width) return left ? s + " " : " " + s;
  std::string pad(width - chars, ' ');
  return left ? s + pad : pad + s;
}

std::string Num(double v) { return Fixed(v, std::fabs(v - std::round(v)) < 1e-9 ? 0 : 1); }

std::string LoadText(const LoadPoint& l) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "time-compress %g, cluster-scale %g", l.time_compress,
                l.cluster_scale);
  return buf;
}

std::string Ratio(const Stat& s, size_t seeds) {
  return Fixed(s.mean, 2) + (seeds > 1 ? "±" + Fixed(s.sd, 2) : "");
}

const ReplayCell* FindCell(const std::vector<ReplayCell>& cells, const std::string& policy,
                           QueueDiscipline q, size_t load, Allocation a) {
  for (const ReplayCell& c : cells) {
    if (c.policy == policy && c.queue == q && c.load == load && c.allocation == a) return &c;
  }
  return nullptr;
}

const ReplayRatio* FindRatio(const std::vector<ReplayRatio>& ratios, const std::string& policy,
                             QueueDiscipline q, size_t load) {
  for (const ReplayRatio& r : ratios) {
    if (r.policy == policy && r.queue == q && r.load == load) return &r;
  }
  return nullptr;
}

}  // namespace

std::string FormatReplayTable(const ReplayExperiment& e, const ReplayPlan& plan,
                              const ReplayReportInfo& info) {
  const std::vector<ReplayCell> cells = SummarizeCells(e);
  const std::vector<ReplayRatio> ratios = SummarizeRatios(e);
  const size_t seeds = plan.seeds.size();
  std::string out;
  const JobList& first = e.job_lists.front();
  out += "Time-based replay of " + info.trace + ": " + std::to_string(info.pods_in_file) +
         " pods in the file; " + std::to_string(first.skipped_pending) +
         " never-scheduled (Pending)" + (plan.include_pending ? " included" : " skipped") + "; " +
         std::to_string(first.censored) + " still running at the trace end; " +
         std::to_string(first.zero_run_time) + " with zero run time; " +
         std::to_string(first.cpu_only) + " CPU-only.\n";
  out += "Run time = deletion_time - " + info.run_time_from + "_time. " + std::to_string(seeds) +
         " seed" + (seeds == 1 ? "" : "s") + " (" + FormatSeeds(plan.seeds) +
         "); values are means over seeds" +
         (seeds > 1 ? ", ratios mean±sd of the per-seed ratios" : "") + ".\n";
  out +=
      "completed: pods that left by the horizon; GPU-h: their requested GPU x run time; wait: "
      "start - arrival over every pod that arrived by the horizon;\nalloc %: allocated GPU / "
      "capacity, used %: GPU the running pods asked for / capacity (time averages over the "
      "horizon).\n";

  for (const std::string& policy : plan.policies) {
    for (QueueDiscipline q : plan.queues) {
      for (size_t l = 0; l < plan.loads.size(); ++l) {
        const ReplayCell* any = nullptr;
        for (Allocation a : plan.allocations) {
          if (any == nullptr) any = FindCell(cells, policy, q, l, a);
        }
        if (any == nullptr) continue;
        out += "\n== policy " + policy + ", queue " + std::string(QueueName(q)) + ", " +
               LoadText(plan.loads[l]) + ": " + Num(any->nodes) + " nodes / " + Num(any->gpus) +
               " GPUs, horizon " + FormatTimeSpan(static_cast<double>(e.horizon_us[l]) / 1e6) +
               "\n";
        out += "   " + Num(any->jobs) + " pods arrive within the horizon (" +
               Num(any->unplaceable) + " fit no node and are left out); offered " +
               Fixed(any->offered_pct, 1) + "% of GPU capacity as requested, " +
               Fixed(any->offered_whole_pct, 1) + "% as whole GPUs (ceiling x" +
               Fixed(any->offered_pct > 0 ? any->offered_whole_pct / any->offered_pct : 1, 2) +
               "); peak demand " + Fixed(any->peak_demand_pct, 0) + "%\n";
        out += Pad("alloc", 8, true) + Pad("completed", 10) + Pad("GPU-h", 9) + Pad("waited", 8) +
               Pad("wait mean", 10) + Pad("p50", 8) + Pad("p99", 9) + Pad("max", 9) +
               Pad("alloc %", 8) + Pad("used %", 7) + Pad("queue", 7) + Pad("max q", 7) +
               Pad("last start", 11) + Pad("makespan", 10) + "\n";
        for (Allocation a : plan.allocations) {
          const ReplayCell* c = FindCell(cells, policy, q, l, a);
          if (c == nullptr) continue;
          out += Pad(std::string(AllocationName(a)), 8, true) + Pad(Num(c->completed), 10) +
                 Pad(Fixed(c->completed_gpu_hours, c->completed_gpu_hours < 100 ? 1 : 0), 9) +
                 Pad(Num(c->waited), 8) + Pad(FormatTimeSpan(c->wait_mean_s), 10) +
                 Pad(FormatTimeSpan(c->wait_p50_s), 8) + Pad(FormatTimeSpan(c->wait_p99_s), 9) +
                 Pad(FormatTimeSpan(c->wait_max_s), 9) + Pad(Fixed(c->mean_allocated_pct, 1), 8) +
                 Pad(Fixed(c->mean_requested_pct, 1), 7) + Pad(Fixed(c->mean_queued, 1), 7) +
                 Pad(Num(c->max_queued), 7) + Pad(FormatTimeSpan(c->last_start_s), 11) +
                 Pad(FormatTimeSpan(c->makespan_s), 10) + "\n";
        }
        if (const ReplayRatio* r = FindRatio(ratios, policy, q, l)) {
          out += "   shared/whole: completed x" + Ratio(r->completed, seeds) + ", GPU-hours x" +
                 Ratio(r->gpu_hours, seeds) + "\n";
        }
      }
    }
  }

  const size_t rows = plan.policies.size() * plan.queues.size() * plan.loads.size();
  if (rows > 1 && !ratios.empty()) {
    out +=
        "\nSweep: shared vs whole GPUs per load (s = shared, w = whole; ratio = shared / whole "
        "completed pods;\nceiling = offered whole / offered shared: the most sharing could gain if "
        "GPUs were the only limit and packing were perfect)\n";
    size_t pw = 6;
    for (const std::string& p : plan.policies) pw = std::max(pw, p.size());
    out += Pad("policy", pw, true) + Pad("queue", 9) + Pad("compress", 9) + Pad("scale", 7) +
           Pad("GPUs", 6) + Pad("offered", 8) + Pad("peak", 6) + Pad("ceiling", 8) +
           Pad("done s", 8) + Pad("done w", 8) + Pad("ratio", 11) + Pad("GPU-h ratio", 12) +
           Pad("wait s", 9) + Pad("wait w", 9) + Pad("p99 s", 9) + Pad("p99 w", 9) +
           Pad("alloc s", 8) + Pad("alloc w", 8) + Pad("used w", 7) + "\n";
    for (const std::string& policy : plan.policies) {
      for (QueueDiscipline q : plan.queues) {
        for (size_t l = 0; l < plan.loads.size(); ++l) {
          const ReplayCell* s = FindCell(cells, policy, q, l, Allocation::kShared);
          const ReplayCell* w = FindCell(cells, policy, q, l, Allocation::kWhole);
          const ReplayRatio* r = FindRatio(ratios, policy, q, l);
          if (s == nullptr || w == nullptr || r == nullptr) continue;
          char compress[32], scale[32];
          std::snprintf(compress, sizeof compress, "%g", plan.loads[l].time_compress);
          std::snprintf(scale, sizeof scale, "%g", plan.loads[l].cluster_scale);
          out += Pad(policy, pw, true) + Pad(std::string(QueueName(q)), 9) + Pad(compress, 9) +
                 Pad(scale, 7) + Pad(Num(s->gpus), 6) + Pad(Fixed(s->offered_pct, 1) + "%", 8) +
                 Pad(Fixed(s->peak_demand_pct, 0) + "%", 6) +
                 Pad(Fixed(s->offered_pct > 0 ? s->offered_whole_pct / s->offered_pct : 1, 2), 8) +
                 Pad(Num(s->completed), 8) + Pad(Num(w->completed), 8) +
                 Pad(Ratio(r->completed, seeds), 11) + Pad(Ratio(r->gpu_hours, seeds), 12) +
                 Pad(FormatTimeSpan(s->wait_mean_s), 9) + Pad(FormatTimeSpan(w->wait_mean_s), 9) +
                 Pad(FormatTimeSpan(s->wait_p99_s), 9) + Pad(FormatTimeSpan(w->wait_p99_s), 9) +
                 Pad(Fixed(s->mean_allocated_pct, 1), 8) + Pad(Fixed(w->mean_allocated_pct, 1), 8) +
                 Pad(Fixed(w->mean_requested_pct, 1), 7) + "\n";
        }
      }
    }
  }
  return out;
}

std::string ReplayCsvText(const ReplayExperiment& e, const ReplayPlan& plan) {
  std::string out =
      "policy,queue,allocation,time_compress,cluster_scale,seed,time_s,allocated_gpu_pct,"
      "requested_gpu_pct,demand_gpu_pct,running_pods,queued_pods,completed_pods\n";
  char buf[256];
  for (const ReplayRun& run : e.runs) {
    const LoadPoint& l = plan.loads[run.load];
    std::snprintf(buf, sizeof buf, "%s,%s,%s,%g,%g,%llu,", run.policy.c_str(),
                  std::string(QueueName(run.queue)).c_str(),
                  std::string(AllocationName(run.allocation)).c_str(), l.time_compress,
                  l.cluster_scale, static_cast<unsigned long long>(run.seed));
    const std::string prefix = buf;
    for (const ReplaySample& s : run.result.series) {
      std::snprintf(buf, sizeof buf, "%.3f,%.2f,%.2f,%.2f,%lld,%lld,%lld\n",
                    static_cast<double>(s.time_us) / 1e6, s.allocated_pct, s.requested_pct,
                    s.demand_pct, static_cast<long long>(s.running),
                    static_cast<long long>(s.queued), static_cast<long long>(s.completed));
      out += prefix + buf;
    }
  }
  return out;
}

std::string ReplayJson(const ReplayExperiment& e, const ReplayPlan& plan,
                       const ReplayReportInfo& info) {
  using nlohmann::json;
  auto r3 = [](double v) { return std::round(v * 1000) / 1000; };
  json j;
  j["trace"] = info.trace;
  j["pods_in_file"] = info.pods_in_file;
  j["run_time_from"] = info.run_time_from;
  j["include_pending"] = plan.include_pending;
  j["seeds"] = plan.seeds;
  json loads = json::array();
  for (size_t l = 0; l < plan.loads.size(); ++l) {
    const JobList& jl = e.job_lists[l];
    loads.push_back({{"time_compress", plan.loads[l].time_compress},
                     {"cluster_scale", plan.loads[l].cluster_scale},
                     {"horizon_s", static_cast<double>(e.horizon_us[l]) / 1e6},
                     {"arrival_span_s", static_cast<double>(jl.span_us) / 1e6},
                     {"skipped_pending", jl.skipped_pending},
                     {"censored", jl.censored},
                     {"zero_run_time", jl.zero_run_time},
                     {"cpu_only", jl.cpu_only}});
  }
  j["loads"] = loads;
  json cells = json::array();
  for (const ReplayCell& c : SummarizeCells(e)) {
    cells.push_back({{"policy", c.policy},
                     {"queue", QueueName(c.queue)},
                     {"load", c.load},
                     {"allocation", AllocationName(c.allocation)},
                     {"nodes", c.nodes},
                     {"gpus", c.gpus},
                     {"pods", c.jobs},
                     {"unplaceable", c.unplaceable},
                     {"offered_pct", r3(c.offered_pct)},
                     {"offered_whole_pct", r3(c.offered_whole_pct)},
                     {"peak_demand_pct", r3(c.peak_demand_pct)},
                     {"completed", c.completed},
                     {"completed_gpu_hours", r3(c.completed_gpu_hours)},
                     {"queued_at_horizon", c.queued_at_horizon},
                     {"waited", c.waited},
                     {"wait_mean_s", r3(c.wait_mean_s)},
                     {"wait_p50_s", r3(c.wait_p50_s)},
                     {"wait_p99_s", r3(c.wait_p99_s)},
                     {"wait_max_s", r3(c.wait_max_s)},
                     {"mean_allocated_pct", r3(c.mean_allocated_pct)},
                     {"mean_used_pct", r3(c.mean_requested_pct)},
                     {"mean_queued", r3(c.mean_queued)},
                     {"max_queued", c.max_queued},
                     {"last_start_s", r3(c.last_start_s)},
                     {"makespan_s", r3(c.makespan_s)},
                     {"run_wall_s", r3(c.wall_s)}});
  }
  j["cells"] = cells;
  json ratios = json::array();
  for (const ReplayRatio& r : SummarizeRatios(e)) {
    ratios.push_back({{"policy", r.policy},
                      {"queue", QueueName(r.queue)},
                      {"load", r.load},
                      {"completed_mean", r3(r.completed.mean)},
                      {"completed_sd", r3(r.completed.sd)},
                      {"completed_min", r3(r.completed_min)},
                      {"completed_max", r3(r.completed_max)},
                      {"gpu_hours_mean", r3(r.gpu_hours.mean)},
                      {"gpu_hours_sd", r3(r.gpu_hours.sd)}});
  }
  j["shared_over_whole"] = ratios;
  return j.dump(2) + "\n";
}

}  // namespace vgpu::sim
