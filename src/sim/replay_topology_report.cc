#include "sim/replay_topology_report.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "sim/replay_options.h"

namespace vgpu::sim {

std::vector<TopologyRow> SummarizeTopology(
    const std::vector<std::pair<GpuChoice, ReplayExperiment>>& experiments) {
  std::vector<TopologyRow> rows;
  for (const auto& [choice, e] : experiments) {
    std::vector<int> counts;
    const size_t first = rows.size();
    for (const ReplayRun& run : e.runs) {
      size_t i = first;
      while (i < rows.size() &&
             !(rows[i].policy == run.policy && rows[i].queue == run.queue &&
               rows[i].load == run.load && rows[i].allocation == run.allocation)) {
        ++i;
      }
      if (i == rows.size()) {
        TopologyRow r;
        r.choice = choice;
        r.policy = run.policy;
        r.queue = run.queue;
        r.load = run.load;
        r.allocation = run.allocation;
        rows.push_back(r);
        counts.push_back(0);
      }
      TopologyRow& r = rows[i];
      const TopologyOutcome& o = run.result.topology;
      r.multi_jobs += static_cast<double>(o.multi_jobs);
      r.bandwidth_ratio += o.bandwidth_ratio;
      r.run_factor += o.run_factor;
      r.best_share += o.best_share;
      r.jct_mean_s += o.jct_mean_s;
      r.multi_jct_mean_s += o.multi_jct_mean_s;
      r.multi_jct_p99_s += o.multi_jct_p99_s;
      r.unplaceable += static_cast<double>(run.result.unplaceable);
      ++counts[i - first];
    }
    for (size_t i = first; i < rows.size(); ++i) {
      const double n = counts[i - first];
      TopologyRow& r = rows[i];
      for (double* v : {&r.multi_jobs, &r.bandwidth_ratio, &r.run_factor, &r.best_share,
                        &r.jct_mean_s, &r.multi_jct_mean_s, &r.multi_jct_p99_s, &r.unplaceable}) {
        *v /= n;
      }
    }
  }
  return rows;
}

namespace {

// vgpu's row of the same cell, if it ran.
const TopologyRow* VgpuRow(const std::vector<TopologyRow>& rows, const TopologyRow& like) {
  for (const TopologyRow& r : rows) {
    if (r.choice == GpuChoice::kVgpu && r.policy == like.policy && r.queue == like.queue &&
        r.load == like.load && r.allocation == like.allocation) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

std::string FormatTopologyTable(const std::vector<TopologyRow>& rows, const ReplayPlan& plan,
                                const std::string& trace) {
  std::string out;
  char buf[512];
  std::string shapes;
  for (const std::string& s : plan.topology.shapes) shapes += (shapes.empty() ? "" : ",") + s;
  std::snprintf(buf, sizeof buf,
                "vgpu sim replay with topology: %s; shapes %s; communication share %.2f; %zu "
                "seed(s)\n",
                trace.c_str(), shapes.c_str(), plan.topology.comm_share, plan.seeds.size());
  out += buf;
  out +=
      "multi: multi-GPU pods on shaped nodes; bw: their bus bandwidth / the best set's; run: "
      "their run-time factor;\nbest: share on a best set; JCT = wait + run, hours; vs vgpu: "
      "multi-GPU mean JCT / vgpu's\n";
  std::snprintf(buf, sizeof buf, "%-13s %-16s %-8s %-9s %-6s %7s %6s %6s %6s %9s %9s %9s %7s\n",
                "choice", "policy", "queue", "load", "alloc", "multi", "bw", "run", "best",
                "JCT all", "JCT multi", "p99 multi", "vs vgpu");
  out += buf;
  for (const TopologyRow& r : rows) {
    const LoadPoint& l = plan.loads[r.load];
    char load[32];
    std::snprintf(load, sizeof load, "x%g/s%g", l.time_compress, l.cluster_scale);
    const TopologyRow* v = VgpuRow(rows, r);
    char versus[16] = "-";
    if (v != nullptr && v->multi_jct_mean_s > 0) {
      std::snprintf(versus, sizeof versus, "%.3f", r.multi_jct_mean_s / v->multi_jct_mean_s);
    }
    std::snprintf(buf, sizeof buf,
                  "%-13s %-16s %-8s %-9s %-6s %7.1f %6.3f %6.3f %6.3f %9.2f %9.2f %9.2f %7s\n",
                  std::string(GpuChoiceName(r.choice)).c_str(), r.policy.c_str(),
                  std::string(QueueName(r.queue)).c_str(), load,
                  std::string(AllocationName(r.allocation)).c_str(), r.multi_jobs,
                  r.bandwidth_ratio, r.run_factor, r.best_share, r.jct_mean_s / 3600,
                  r.multi_jct_mean_s / 3600, r.multi_jct_p99_s / 3600, versus);
    out += buf;
  }
  return out;
}

std::string TopologyJson(const std::vector<TopologyRow>& rows, const ReplayPlan& plan) {
  nlohmann::ordered_json j;
  j["shapes"] = plan.topology.shapes;
  j["comm_share"] = plan.topology.comm_share;
  j["seeds"] = plan.seeds;
  j["rows"] = nlohmann::ordered_json::array();
  for (const TopologyRow& r : rows) {
    nlohmann::ordered_json o;
    o["choice"] = std::string(GpuChoiceName(r.choice));
    o["policy"] = r.policy;
    o["queue"] = std::string(QueueName(r.queue));
    o["time_compress"] = plan.loads[r.load].time_compress;
    o["cluster_scale"] = plan.loads[r.load].cluster_scale;
    o["allocation"] = std::string(AllocationName(r.allocation));
    o["multi_jobs"] = r.multi_jobs;
    o["bandwidth_ratio"] = r.bandwidth_ratio;
    o["run_factor"] = r.run_factor;
    o["best_share"] = r.best_share;
    o["unplaceable"] = r.unplaceable;
    o["jct_mean_s"] = r.jct_mean_s;
    o["multi_jct_mean_s"] = r.multi_jct_mean_s;
    o["multi_jct_p99_s"] = r.multi_jct_p99_s;
    j["rows"].push_back(std::move(o));
  }
  return j.dump(2) + "\n";
}

}  // namespace vgpu::sim
