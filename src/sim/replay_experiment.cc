#include "sim/replay_experiment.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "sched/workload.h"

namespace vgpu::sim {

Result<ReplayExperiment> RunReplayExperiment(std::vector<sched::NodeSpec> nodes,
                                             const std::vector<TimedPod>& pods,
                                             const sched::ModelRegistry* models,
                                             const ReplayPlan& plan) {
  if (plan.policies.empty() || plan.queues.empty() || plan.allocations.empty() ||
      plan.loads.empty() || plan.seeds.empty()) {
    return Status::InvalidArgument("nothing to run: a list of the replay plan is empty");
  }
  std::vector<sched::PodRequest> requests;
  for (const TimedPod& p : pods) requests.push_back(p.pod.request);
  const std::vector<sched::WorkloadSpec> typical = sched::TypicalWorkload(requests, models);
  for (const std::string& p : plan.policies) {
    sched::PolicyArgs args;
    args.target_workload = typical;
    auto it = plan.params.find(p);
    if (it != plan.params.end()) args.params = it->second;
    args.models = models;
    auto made = sched::BuiltinPolicies().Create(p, args);
    if (!made) return made.error();
  }
  for (const auto& [name, kv] : plan.params) {
    if (std::find(plan.policies.begin(), plan.policies.end(), name) == plan.policies.end()) {
      return Status::InvalidArgument("options given for policy '" + name +
                                     "', which is not being run");
    }
  }
  if (plan.topology.enabled()) VGPU_RETURN_IF_ERROR(CheckTopologyModel(plan.topology));
  std::stable_sort(nodes.begin(), nodes.end(),
                   [](const auto& a, const auto& b) { return a.name < b.name; });

  ReplayExperiment out;
  std::vector<ReplayInput> inputs(plan.loads.size());
  for (size_t l = 0; l < plan.loads.size(); ++l) {
    JobOptions jo;
    jo.time_compress = plan.loads[l].time_compress;
    jo.run_time_from = plan.run_time_from;
    jo.include_pending = plan.include_pending;
    auto jobs = MakeJobs(pods, jo);
    if (!jobs) return jobs.error();
    if (jobs->jobs.empty()) return Status::InvalidArgument("no pod to replay");
    int64_t horizon = plan.horizon_us;
    if (horizon <= 0) {
      horizon = jobs->span_us;
      if (horizon <= 0) {  // every pod arrives at once: until the longest run ends
        for (const ReplayJob& j : jobs->jobs) horizon = std::max(horizon, j.run_us);
        horizon = std::max<int64_t>(horizon, 1000000);
      }
    }
    if (plan.step_us > 0 && horizon / plan.step_us > 1000000) {
      return Status::InvalidArgument("a sample step of " + std::to_string(plan.step_us / 1000000) +
                                     " s gives more than a million samples over the horizon");
    }
    out.horizon_us.push_back(horizon);
    inputs[l].nodes = nodes;
    inputs[l].jobs = jobs->jobs;
    inputs[l].models = models;
    jobs->jobs.clear();
    out.job_lists.push_back(std::move(*jobs));
  }

  // Grid order: policy, queue, load, seed, allocation.
  const size_t na = plan.allocations.size(), ns = plan.seeds.size(), nl = plan.loads.size(),
               nq = plan.queues.size();
  const size_t total = plan.policies.size() * nq * nl * ns * na;
  out.runs.resize(total);
  std::vector<Status> errors(total);
  std::atomic<size_t> next{0}, finished{0};
  auto worker = [&] {
    while (true) {
      const size_t i = next.fetch_add(1);
      if (i >= total) return;
      size_t k = i;
      ReplayRun& run = out.runs[i];
      run.allocation = plan.allocations[k % na];
      k /= na;
      run.seed = plan.seeds[k % ns];
      k /= ns;
      run.load = k % nl;
      k /= nl;
      run.queue = plan.queues[k % nq];
      k /= nq;
      run.policy = plan.policies[k];
      ReplayConfig c;
      c.policy = run.policy;
      auto it = plan.params.find(run.policy);
      if (it != plan.params.end()) c.policy_params = it->second;
      c.seed = run.seed;
      c.allocation = run.allocation;
      c.queue = run.queue;
      c.cluster_scale = plan.loads[run.load].cluster_scale;
      c.horizon_us = out.horizon_us[run.load];
      c.step_us = plan.step_us > 0 ? plan.step_us : std::max<int64_t>(1, c.horizon_us / 400);
      c.topology = plan.topology;
      const auto start = std::chrono::steady_clock::now();
      auto r = RunReplay(inputs[run.load], c);
      run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (r) {
        run.result = std::move(*r);
      } else {
        errors[i] = r.error();
      }
      finished.fetch_add(1);
    }
  };
  const int threads = std::max(1, std::min<int>(plan.threads, static_cast<int>(total)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  if (plan.on_progress) {
    while (finished.load() < total) {
      plan.on_progress(static_cast<int64_t>(finished.load()), static_cast<int64_t>(total));
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  for (std::thread& t : pool) t.join();
  if (plan.on_progress) plan.on_progress(static_cast<int64_t>(total), static_cast<int64_t>(total));
  for (size_t i = 0; i < total; ++i) {
    if (!errors[i].ok()) return errors[i].WithContext("policy " + out.runs[i].policy);
  }
  return out;
}

namespace {

bool SameCell(const ReplayRun& a, const ReplayRun& b) {
  return a.policy == b.policy && a.queue == b.queue && a.load == b.load;
}

}  // namespace

std::vector<ReplayCell> SummarizeCells(const ReplayExperiment& e) {
  std::vector<ReplayCell> cells;
  std::vector<int> counts;
  for (const ReplayRun& run : e.runs) {
    size_t c = 0;
    while (c < cells.size() &&
           !(cells[c].policy == run.policy && cells[c].queue == run.queue &&
             cells[c].load == run.load && cells[c].allocation == run.allocation)) {
      ++c;
    }
    if (c == cells.size()) {
      ReplayCell cell;
      cell.policy = run.policy;
      cell.queue = run.queue;
      cell.load = run.load;
      cell.allocation = run.allocation;
      cells.push_back(cell);
      counts.push_back(0);
    }
    ReplayCell& x = cells[c];
    const ReplayResult& r = run.result;
    ++counts[c];
    x.nodes += static_cast<double>(r.nodes);
    x.gpus += static_cast<double>(r.gpus);
    x.jobs += static_cast<double>(r.jobs);
    x.unplaceable += static_cast<double>(r.unplaceable);
    x.offered_pct += r.offered_pct;
    x.offered_whole_pct += r.offered_whole_pct;
    x.peak_demand_pct += r.peak_demand_pct;
    x.completed += static_cast<double>(r.completed);
    x.completed_gpu_hours += r.completed_gpu_hours;
    x.queued_at_horizon += static_cast<double>(r.queued_at_horizon);
    x.waited += static_cast<double>(r.waited);
    x.wait_mean_s += r.wait_mean_s;
    x.wait_p50_s += r.wait_p50_s;
    x.wait_p99_s += r.wait_p99_s;
    x.wait_max_s += r.wait_max_s;
    x.mean_allocated_pct += r.mean_allocated_pct;
    x.mean_requested_pct += r.mean_requested_pct;
    x.mean_queued += r.mean_queued;
    x.max_queued += static_cast<double>(r.max_queued);
    x.last_start_s += static_cast<double>(r.last_start_us) / 1e6;
    x.makespan_s += static_cast<double>(r.makespan_us) / 1e6;
    x.wall_s += run.wall_s;
  }
  for (size_t c = 0; c < cells.size(); ++c) {
    ReplayCell& x = cells[c];
    const double n = counts[c];
    for (double* v : {&x.nodes,
                      &x.gpus,
                      &x.jobs,
                      &x.unplaceable,
                      &x.offered_pct,
                      &x.offered_whole_pct,
                      &x.peak_demand_pct,
                      &x.completed,
                      &x.completed_gpu_hours,
                      &x.queued_at_horizon,
                      &x.waited,
                      &x.wait_mean_s,
                      &x.wait_p50_s,
                      &x.wait_p99_s,
                      &x.wait_max_s,
                      &x.mean_allocated_pct,
                      &x.mean_requested_pct,
                      &x.mean_queued,
                      &x.max_queued,
                      &x.last_start_s,
                      &x.makespan_s,
                      &x.wall_s}) {
      *v /= n;
    }
  }
  return cells;
}

std::vector<ReplayRatio> SummarizeRatios(const ReplayExperiment& e) {
  std::vector<ReplayRatio> out;
  std::vector<std::vector<double>> completed, hours, wait;
  auto ratio = [](double a, double b) { return b > 0 ? a / b : (a > 0 ? 0.0 : 1.0); };
  for (const ReplayRun& shared : e.runs) {
    if (shared.allocation != Allocation::kShared) continue;
    const ReplayRun* whole = nullptr;
    for (const ReplayRun& w : e.runs) {
      if (w.allocation == Allocation::kWhole && w.seed == shared.seed && SameCell(w, shared)) {
        whole = &w;
        break;
      }
    }
    if (whole == nullptr) continue;
    size_t c = 0;
    while (c < out.size() && !(out[c].policy == shared.policy && out[c].queue == shared.queue &&
                               out[c].load == shared.load)) {
      ++c;
    }
    if (c == out.size()) {
      ReplayRatio r;
      r.policy = shared.policy;
      r.queue = shared.queue;
      r.load = shared.load;
      out.push_back(r);
      completed.emplace_back();
      hours.emplace_back();
      wait.emplace_back();
    }
    const ReplayResult& s = shared.result;
    const ReplayResult& w = whole->result;
    completed[c].push_back(
        ratio(static_cast<double>(s.completed), static_cast<double>(w.completed)));
    hours[c].push_back(ratio(s.completed_gpu_hours, w.completed_gpu_hours));
    wait[c].push_back(ratio(s.wait_mean_s, w.wait_mean_s));
  }
  for (size_t c = 0; c < out.size(); ++c) {
    out[c].completed = MeanSd(completed[c]);
    out[c].completed_min = *std::min_element(completed[c].begin(), completed[c].end());
    out[c].completed_max = *std::max_element(completed[c].begin(), completed[c].end());
    out[c].gpu_hours = MeanSd(hours[c]);
    out[c].wait_mean = MeanSd(wait[c]);
  }
  return out;
}

}  // namespace vgpu::sim
