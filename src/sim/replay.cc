#include "sim/replay.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <unordered_map>

#include "common/rng.h"
#include "sched/scheduler.h"
#include "sched/workload.h"

namespace vgpu::sim {

using sched::NodeId;
using sched::PodRequest;

std::string_view AllocationName(Allocation a) {
  return a == Allocation::kShared ? "shared" : "whole";
}

PodRequest Allocated(const PodRequest& r, Allocation a) {
  PodRequest out = r;
  if (a == Allocation::kWhole && out.num_gpus > 0) out.gpu_milli = sched::kGpuMilli;
  return out;
}

namespace {

// Nearest-rank quantile of sorted values.
double Quantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t rank = static_cast<size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

// The offered demand: every job running from its arrival for its run time, nothing waiting. Fills
// the peak and each sample's demand_pct.
void DemandCurve(const std::vector<ReplayJob>& jobs, const std::vector<uint32_t>& active,
                 int64_t horizon, int64_t capacity, ReplayResult* res) {
  std::vector<std::pair<int64_t, int64_t>> events;  // (time, +-milli); departures sort first
  events.reserve(active.size() * 2);
  for (uint32_t j : active) {
    const int64_t milli = jobs[j].request.TotalGpuMilli();
    if (milli == 0) continue;
    events.emplace_back(jobs[j].arrival_us, milli);
    events.emplace_back(jobs[j].arrival_us + jobs[j].run_us, -milli);
  }
  std::sort(events.begin(), events.end());
  const double cap = static_cast<double>(capacity);
  int64_t level = 0, peak = 0;
  size_t e = 0;
  auto advance_to = [&](int64_t t) {  // applies the events at or before t
    for (; e < events.size() && events[e].first <= t; ++e) {
      level += events[e].second;
      if (events[e].first <= horizon) peak = std::max(peak, level);
    }
  };
  for (ReplaySample& s : res->series) {
    advance_to(s.time_us);
    s.demand_pct = 100.0 * static_cast<double>(level) / cap;
  }
  advance_to(horizon);
  res->peak_demand_pct = 100.0 * static_cast<double>(peak) / cap;
}

}  // namespace

// Keeps the name-sorted node indices of the sample (protocol step 1): a stratified sample that
// keeps the mix of node types (same CPU, memory and GPUs). Each type gets scale x its count,
// rounded down; the nodes left over go to the largest remainders (ties in random order); within a
// type the nodes are drawn at random.
std::vector<size_t> SampleNodes(const std::vector<sched::NodeSpec>& nodes, double scale, Rng& rng) {
  std::vector<size_t> kept(nodes.size());
  std::iota(kept.begin(), kept.end(), size_t{0});
  if (scale >= 1.0) return kept;
  auto same_type = [](const sched::NodeSpec& a, const sched::NodeSpec& b) {
    if (a.cpu_milli != b.cpu_milli || a.memory_mib != b.memory_mib) return false;
    if (a.gpus.size() != b.gpus.size()) return false;
    for (size_t g = 0; g < a.gpus.size(); ++g) {
      if (a.gpus[g].model != b.gpus[g].model || a.gpus[g].memory_mib != b.gpus[g].memory_mib)
        return false;
    }
    return true;
  };
  std::vector<std::vector<size_t>> types;  // in order of first appearance
  for (size_t i = 0; i < nodes.size(); ++i) {
    size_t t = 0;
    while (t < types.size() && !same_type(nodes[types[t].front()], nodes[i])) ++t;
    if (t == types.size()) types.emplace_back();
    types[t].push_back(i);
  }
  const size_t total =
      std::min(nodes.size(), std::max<size_t>(1, static_cast<size_t>(std::llround(
                                                     scale * static_cast<double>(nodes.size())))));
  std::vector<size_t> quota(types.size());
  std::vector<std::pair<double, uint64_t>> remainder(types.size());  // (fraction, random tie)
  size_t given = 0;
  for (size_t t = 0; t < types.size(); ++t) {
    const double exact = scale * static_cast<double>(types[t].size());
    quota[t] = static_cast<size_t>(std::floor(exact));
    given += quota[t];
    remainder[t] = {exact - std::floor(exact), rng.Next()};
  }
  std::vector<size_t> by_remainder(types.size());
  std::iota(by_remainder.begin(), by_remainder.end(), size_t{0});
  std::sort(by_remainder.begin(), by_remainder.end(),
            [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t i = 0; given < total && i < by_remainder.size(); ++i) {
    ++quota[by_remainder[i]];
    ++given;
  }
  kept.clear();
  for (size_t t = 0; t < types.size(); ++t) {
    rng.Shuffle(types[t]);
    kept.insert(kept.end(), types[t].begin(), types[t].begin() + static_cast<long>(quota[t]));
  }
  std::sort(kept.begin(), kept.end());
  return kept;
}

Result<ReplayResult> RunReplay(const ReplayInput& input, const ReplayConfig& cfg) {
  if (cfg.horizon_us <= 0) return Status::InvalidArgument("the horizon must be > 0");
  if (!(cfg.cluster_scale > 0 && cfg.cluster_scale <= 1)) {
    return Status::InvalidArgument("the cluster scale must be in (0, 1]");
  }
  if (cfg.step_us < 0) return Status::InvalidArgument("the sample step must be >= 0");
  const int64_t horizon = cfg.horizon_us;
  Rng rng(cfg.seed);

  // Cluster: the node sample and the tie-break order.
  sched::Cluster cluster;
  for (size_t i : SampleNodes(input.nodes, cfg.cluster_scale, rng)) {
    auto id = cluster.AddNode(input.nodes[i]);
    if (!id) return id.error();
  }
  std::vector<NodeId> rank(cluster.num_nodes());
  std::iota(rank.begin(), rank.end(), NodeId{0});
  rng.Shuffle(rank);
  std::vector<NodeId> order(rank.size());
  for (NodeId i = 0; i < rank.size(); ++i) order[rank[i]] = i;

  std::unique_ptr<TopologyPlacer> placer;
  if (cfg.topology.enabled()) {
    auto made_placer = TopologyPlacer::Create(cluster, cfg.topology);
    if (!made_placer) return made_placer.error();
    placer = std::move(*made_placer);
  }

  // Requests as allocated in this mode; the policy's target workload is theirs.
  const size_t num_jobs = input.jobs.size();
  std::vector<PodRequest> req(num_jobs);
  for (size_t j = 0; j < num_jobs; ++j) req[j] = Allocated(input.jobs[j].request, cfg.allocation);
  sched::PolicyArgs args;
  args.target_workload = sched::TypicalWorkload(req, input.models);
  args.models = input.models;
  args.params = cfg.policy_params;
  auto made = sched::BuiltinPolicies().Create(cfg.policy, args);
  if (!made) return made.error();
  // Pods that require NVLink need the links of their node (replay_topology.h).
  int64_t nvlink_jobs = 0;
  for (const PodRequest& r : req) nvlink_jobs += r.require_nvlink ? 1 : 0;
  if (nvlink_jobs > 0) {
    if (placer == nullptr) {
      return Status::InvalidArgument(
          std::to_string(nvlink_jobs) +
          " pod(s) require NVLink (vgpu.io/topology: require-nvlink); the replay knows the links "
          "only with server shapes (--topology)");
    }
    (*made)->filters.push_back(std::make_unique<NvlinkFilter>(placer.get()));
  }
  auto scheduler = sched::Scheduler::Create(&cluster, std::move(*made), order);
  if (!scheduler) return scheduler.error();

  ReplayResult res;
  res.nodes = cluster.num_nodes();
  const int64_t capacity = cluster.total_gpu_milli();
  res.gpus = capacity / sched::kGpuMilli;
  if (capacity == 0) return Status::InvalidArgument("the replayed cluster has no GPUs");

  // Jobs of the run: arrived within the horizon, and able to fit the empty cluster.
  std::vector<uint32_t> active;
  {
    std::unordered_map<PodRequest, bool, sched::PodRequestHash> fits_empty;
    for (size_t j = 0; j < num_jobs && input.jobs[j].arrival_us <= horizon; ++j) {
      auto [it, added] = fits_empty.try_emplace(req[j], false);
      if (added) {
        for (NodeId n = 0; n < cluster.num_nodes() && !it->second; ++n)
          it->second = scheduler->Feasible(req[j], n);
      }
      if (it->second) {
        active.push_back(static_cast<uint32_t>(j));
      } else {
        ++res.unplaceable;
      }
    }
  }
  res.jobs = static_cast<int64_t>(active.size());
  // Shapes: jobs with equal requests fit or not together (the wait queue groups them).
  std::vector<uint32_t> shape(num_jobs, 0);
  {
    std::unordered_map<PodRequest, uint32_t, sched::PodRequestHash> ids;
    for (uint32_t j : active) {
      shape[j] = ids.try_emplace(req[j], static_cast<uint32_t>(ids.size())).first->second;
    }
  }
  double offered = 0, offered_whole = 0;
  for (uint32_t j : active) {
    const ReplayJob& job = input.jobs[j];
    const double overlap =
        static_cast<double>(std::min(job.arrival_us + job.run_us, horizon) - job.arrival_us);
    offered += static_cast<double>(job.request.TotalGpuMilli()) * overlap;
    offered_whole += static_cast<double>(job.request.num_gpus) * sched::kGpuMilli * overlap;
  }
  const double cap_time = static_cast<double>(capacity) * static_cast<double>(horizon);
  res.offered_pct = 100.0 * offered / cap_time;
  res.offered_whole_pct = 100.0 * offered_whole / cap_time;

  // The event loop.
  using Departure = std::pair<int64_t, uint32_t>;
  std::priority_queue<Departure, std::vector<Departure>, std::greater<>> departures;
  std::vector<int64_t> start(num_jobs, -1);
  std::vector<int64_t> run_us(num_jobs, 0);  // as run (the topology model may stretch it)
  std::vector<uint8_t> multi_shaped(num_jobs, 0);
  double ratio_sum = 0, factor_sum = 0;
  int64_t best_sets = 0;
  WaitQueue queue(cfg.queue);
  std::vector<uint8_t> freed_mark(cluster.num_nodes(), 0);
  std::vector<NodeId> freed;
  int64_t now = 0;
  int64_t requested_milli = 0;  // shared sizes of the running pods
  int64_t running = 0;
  Status error;

  const WaitQueue::TryStart try_start = [&](uint32_t j) {
    auto placement = scheduler->Schedule(req[j], rng);
    if (!placement) {
      if (placement.error().code() != StatusCode::kResourceExhausted) error = placement.error();
      return false;
    }
    run_us[j] = input.jobs[j].run_us;
    if (placer != nullptr && req[j].num_gpus >= 2 && placer->Shaped(placement->node)) {
      double factor = 1, ratio = 1;
      placement->gpus =
          placer->Choose(cluster, placement->node, req[j], placement->gpus, &factor, &ratio);
      run_us[j] = std::llround(static_cast<double>(run_us[j]) * factor);
      multi_shaped[j] = 1;
      ratio_sum += ratio;
      factor_sum += factor;
      best_sets += ratio >= 1.0 - 1e-9 ? 1 : 0;
    }
    Status s = scheduler->Reserve(j, req[j], *placement);
    if (!s.ok()) {
      error = s.WithContext("pod " + input.jobs[j].name);
      return false;
    }
    start[j] = now;
    departures.emplace(now + run_us[j], j);
    requested_milli += input.jobs[j].request.TotalGpuMilli();
    ++running;
    return true;
  };
  const WaitQueue::FitsFreed fits_freed = [&](uint32_t j) {
    for (NodeId n : freed) {
      if (scheduler->Feasible(req[j], n)) return true;
    }
    return false;
  };
  const auto feasible = [&](uint32_t j, NodeId n) { return scheduler->Feasible(req[j], n); };

  double alloc_integral = 0, req_integral = 0, queue_integral = 0;
  int64_t last_t = 0;
  int64_t next_sample = 0;
  auto sample_until = [&](int64_t t) {  // samples strictly before t, within the horizon
    if (cfg.step_us <= 0) return;
    while (next_sample < t && next_sample <= horizon) {
      ReplaySample s;
      s.time_us = next_sample;
      s.allocated_pct = 100.0 * static_cast<double>(cluster.allocated_gpu_milli()) /
                        static_cast<double>(capacity);
      s.requested_pct =
          100.0 * static_cast<double>(requested_milli) / static_cast<double>(capacity);
      s.running = running;
      s.queued = static_cast<int64_t>(queue.size());
      s.completed = res.completed;
      res.series.push_back(s);
      next_sample += cfg.step_us;
    }
  };
  auto advance = [&](int64_t t) {  // integrates the state held over [last_t, t)
    const int64_t a = std::min(last_t, horizon), b = std::min(t, horizon);
    if (b > a) {
      const double dt = static_cast<double>(b - a);
      alloc_integral += static_cast<double>(cluster.allocated_gpu_milli()) * dt;
      req_integral += static_cast<double>(requested_milli) * dt;
      queue_integral += static_cast<double>(queue.size()) * dt;
    }
    last_t = t;
  };

  size_t next_arrival = 0;
  constexpr int64_t kNever = INT64_MAX;
  while (true) {
    int64_t t = kNever;
    if (next_arrival < active.size()) t = input.jobs[active[next_arrival]].arrival_us;
    if (!departures.empty()) t = std::min(t, departures.top().first);
    if (t == kNever) break;
    sample_until(t);
    advance(t);
    now = t;
    while (!departures.empty() && departures.top().first == t) {
      const uint32_t j = departures.top().second;
      departures.pop();
      const sched::Cluster::Reservation* r = cluster.FindReservation(j);
      if (r == nullptr) return Status::Internal("departing pod is not reserved");
      const NodeId n = r->placement.node;
      scheduler->Unreserve(j);
      if (freed_mark[n] == 0) {
        freed_mark[n] = 1;
        freed.push_back(n);
      }
      requested_milli -= input.jobs[j].request.TotalGpuMilli();
      --running;
      if (t <= horizon) {
        ++res.completed;
        res.completed_gpu_hours += static_cast<double>(input.jobs[j].request.TotalGpuMilli()) /
                                   sched::kGpuMilli * static_cast<double>(input.jobs[j].run_us) /
                                   3.6e9;
      }
      if (!input.jobs[j].censored) res.makespan_us = std::max(res.makespan_us, t);
    }
    if (!freed.empty()) {
      queue.Scan(fits_freed, try_start);
      for (NodeId n : freed) freed_mark[n] = 0;
      freed.clear();
    }
    while (next_arrival < active.size() && input.jobs[active[next_arrival]].arrival_us == t) {
      const uint32_t j = active[next_arrival++];
      scheduler->ObservePod(req[j]);
      queue.Arrive(j, shape[j], try_start);
    }
    if (!error.ok()) return error;
    if (t <= horizon) res.max_queued = std::max(res.max_queued, static_cast<int64_t>(queue.size()));
    if (cfg.on_instant) {
      const std::vector<uint32_t> waiting = queue.Waiting();
      cfg.on_instant(t, cluster, waiting, feasible);
    }
  }
  if (!queue.empty()) return Status::Internal("pods still wait after every pod left");
  sample_until(horizon + 1);
  advance(horizon);

  DemandCurve(input.jobs, active, horizon, capacity, &res);

  std::vector<double> waits;
  waits.reserve(active.size());
  for (uint32_t j : active) {
    const int64_t w = start[j] - input.jobs[j].arrival_us;
    waits.push_back(static_cast<double>(w) / 1e6);
    res.waited += w > 0 ? 1 : 0;
    res.started += start[j] <= horizon ? 1 : 0;
    res.last_start_us = std::max(res.last_start_us, start[j]);
  }
  res.queued_at_horizon = res.jobs - res.started;
  if (placer != nullptr) {
    TopologyOutcome& o = res.topology;
    std::vector<double> multi_jct;
    double jct_sum = 0;
    for (uint32_t j : active) {
      const double jct = static_cast<double>(start[j] + run_us[j] - input.jobs[j].arrival_us) / 1e6;
      jct_sum += jct;
      if (multi_shaped[j]) multi_jct.push_back(jct);
    }
    o.multi_jobs = static_cast<int64_t>(multi_jct.size());
    if (!active.empty()) o.jct_mean_s = jct_sum / static_cast<double>(active.size());
    if (!multi_jct.empty()) {
      const double m = static_cast<double>(multi_jct.size());
      std::sort(multi_jct.begin(), multi_jct.end());
      o.multi_jct_mean_s = std::accumulate(multi_jct.begin(), multi_jct.end(), 0.0) / m;
      o.multi_jct_p99_s = Quantile(multi_jct, 0.99);
      o.bandwidth_ratio = ratio_sum / m;
      o.run_factor = factor_sum / m;
      o.best_share = static_cast<double>(best_sets) / m;
    }
  }
  std::sort(waits.begin(), waits.end());
  if (!waits.empty()) {
    res.wait_mean_s =
        std::accumulate(waits.begin(), waits.end(), 0.0) / static_cast<double>(waits.size());
    res.wait_p50_s = Quantile(waits, 0.50);
    res.wait_p99_s = Quantile(waits, 0.99);
    res.wait_max_s = waits.back();
  }
  const double h = static_cast<double>(horizon);
  res.mean_allocated_pct = 100.0 * alloc_integral / cap_time;
  res.mean_requested_pct = 100.0 * req_integral / cap_time;
  res.mean_queued = queue_integral / h;
  res.decisions = scheduler->stats().decisions;
  return res;
}

}  // namespace vgpu::sim
