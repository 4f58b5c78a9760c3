#include "sim/mig_replay.h"

#include <algorithm>
#include <optional>
#include <queue>

#include "common/rng.h"
#include "mig/layout.h"
#include "sim/replay.h"

namespace vgpu::sim {
namespace {

struct Node {
  int64_t cpu_free = 0;
  int64_t memory_free = 0;
  std::vector<mig::Layout> gpus;
};

int FreeSlices(const mig::Layout& l) {
  int used = 0;
  for (const mig::Instance& i : l.instances) used += l.table->profiles[i.profile].memory_slices;
  return l.table->memory_slices - used;
}

struct Running {
  int64_t until_us;
  size_t job;
  size_t node;
  std::vector<std::pair<size_t, int>> instances;  // (GPU, start)
  bool operator>(const Running& o) const { return until_us > o.until_us; }
};

}  // namespace

int ProfileForShare(const mig::ModelTable& table, int32_t gpu_milli) {
  int64_t whole = 0;
  for (const mig::Profile& p : table.profiles) whole = std::max<int64_t>(whole, p.memory_mib);
  // At least gpu_milli thousandths of the whole GPU's memory, rounded up to a MiB.
  const std::vector<int> fitting = table.Fitting((whole * gpu_milli + 999) / 1000);
  return fitting.empty() ? -1 : fitting.front();
}

Result<MigReplayResult> RunMigReplay(const std::vector<sched::NodeSpec>& specs,
                                     const std::vector<ReplayJob>& jobs,
                                     const MigReplayConfig& cfg) {
  if (cfg.table == nullptr) return Status::InvalidArgument("the MIG replay needs a MIG table");
  if (!(cfg.cluster_scale > 0 && cfg.cluster_scale <= 1)) {
    return Status::InvalidArgument("cluster scale must be in (0, 1]");
  }
  if (cfg.horizon_us <= 0) return Status::InvalidArgument("horizon must be positive");
  const mig::ModelTable& table = *cfg.table;
  Rng rng(cfg.seed);
  std::vector<Node> nodes;
  size_t most_gpus = 0;
  MigReplayResult out;
  for (size_t i : SampleNodes(specs, cfg.cluster_scale, rng)) {
    Node n{specs[i].cpu_milli, specs[i].memory_mib, {}};
    n.gpus.assign(specs[i].gpus.size(), mig::Layout{&table, {}});
    out.gpus += static_cast<int64_t>(n.gpus.size());
    most_gpus = std::max(most_gpus, n.gpus.size());
    nodes.push_back(std::move(n));
  }
  out.nodes = nodes.size();
  out.asked_by_profile.assign(table.profiles.size(), 0);
  out.accepted_by_profile.assign(table.profiles.size(), 0);
  const double total_slices = static_cast<double>(out.gpus) * table.memory_slices;
  mig::RequestMix mix(table);
  std::priority_queue<Running, std::vector<Running>, std::greater<>> running;
  int64_t used_slices = 0, last_us = 0;
  double used_integral = 0, stranded_sum = 0;
  int64_t refusals = 0;
  // Advances the time integral of used slices to `t` (capped at the horizon).
  auto advance = [&](int64_t t) {
    t = std::min(t, cfg.horizon_us);
    if (t > last_us) used_integral += static_cast<double>(used_slices) * (t - last_us);
    last_us = std::max(last_us, t);
  };
  auto depart_until = [&](int64_t t) {
    while (!running.empty() && running.top().until_us <= t) {
      const Running r = running.top();
      running.pop();
      advance(r.until_us);
      const sched::PodRequest& q = jobs[r.job].request;
      nodes[r.node].cpu_free += q.cpu_milli;
      nodes[r.node].memory_free += q.memory_mib;
      for (const auto& [g, start] : r.instances) {
        mig::Layout& l = nodes[r.node].gpus[g];
        for (const mig::Instance& i : l.instances) {
          if (i.start == start) used_slices -= table.profiles[i.profile].memory_slices;
        }
        (void)mig::Remove(&l, start);
      }
    }
  };
  for (size_t j = 0; j < jobs.size(); ++j) {
    const ReplayJob& job = jobs[j];
    const sched::PodRequest& q = job.request;
    if (job.arrival_us > cfg.horizon_us) break;  // jobs are by arrival
    if (q.IsCpuOnly()) continue;
    if (static_cast<size_t>(q.num_gpus) > most_gpus) {
      ++out.unplaceable;
      continue;
    }
    depart_until(job.arrival_us);
    advance(job.arrival_us);
    const int profile = ProfileForShare(table, q.gpu_milli);
    if (profile < 0) {
      ++out.unplaceable;
      continue;
    }
    ++out.arrivals;
    ++out.asked_by_profile[profile];
    mix.Observe(profile);
    // Binpack over (node, GPU): the fullest fitting GPUs first.
    struct Pick {
      int free = 0;
      size_t node = 0, gpu = 0;
      int start = 0;
      mig::CapacityScore score;
    };
    std::optional<std::vector<Pick>> best;
    auto free_of = [](const std::vector<Pick>& a) {
      int f = 0;
      for (const Pick& p : a) f += p.free;
      return f;
    };
    auto worse = [&](const std::vector<Pick>& a, const std::vector<Pick>& b) {
      const int fa = free_of(a), fb = free_of(b);
      if (fa != fb) return fa > fb;
      mig::CapacityScore sa, sb;
      for (const Pick& p : a) sa = std::max(sa, p.score);
      for (const Pick& p : b) sb = std::max(sb, p.score);
      return sa < sb;
    };
    for (size_t n = 0; n < nodes.size(); ++n) {
      Node& node = nodes[n];
      if (node.cpu_free < q.cpu_milli || node.memory_free < q.memory_mib) continue;
      std::vector<Pick> fits;
      for (size_t g = 0; g < node.gpus.size(); ++g) {
        if (mig::FeasibleStarts(node.gpus[g], profile).empty()) continue;
        fits.push_back({FreeSlices(node.gpus[g]), n, g, 0, {}});
      }
      if (fits.size() < static_cast<size_t>(q.num_gpus)) continue;
      std::stable_sort(fits.begin(), fits.end(),
                       [](const Pick& a, const Pick& b) { return a.free < b.free; });
      fits.resize(static_cast<size_t>(q.num_gpus));
      // Cannot be better: fuller GPUs were found (or as full ones, when only ours breaks ties).
      const bool scored = cfg.rule == mig::PlacementRule::kFragmentationAware;
      if (best &&
          (free_of(fits) > free_of(*best) || (!scored && free_of(fits) == free_of(*best)))) {
        continue;
      }
      for (Pick& p : fits) {
        const mig::Layout& l = node.gpus[p.gpu];
        p.start = *mig::ChooseStart(l, profile, cfg.rule, &mix);
        if (scored) {
          mig::Layout after = l;
          (void)mig::Add(&after, {profile, p.start});
          p.score = mig::ScoreLayout(after, mix);
        }
      }
      if (!best || worse(*best, fits)) best = std::move(fits);
    }
    if (!best) {
      ++refusals;
      stranded_sum += 100.0 * (total_slices - static_cast<double>(used_slices)) / total_slices;
      continue;
    }
    Running r{job.arrival_us + job.run_us, j, best->front().node, {}};
    nodes[r.node].cpu_free -= q.cpu_milli;
    nodes[r.node].memory_free -= q.memory_mib;
    for (const Pick& p : *best) {
      (void)mig::Add(&nodes[r.node].gpus[p.gpu], {profile, p.start});
      used_slices += table.profiles[profile].memory_slices;
      r.instances.emplace_back(p.gpu, p.start);
    }
    ++out.accepted;
    ++out.accepted_by_profile[profile];
    running.push(std::move(r));
  }
  depart_until(cfg.horizon_us);
  advance(cfg.horizon_us);
  out.stranded_pct = refusals ? stranded_sum / static_cast<double>(refusals) : 0;
  out.used_pct = total_slices > 0
                     ? 100.0 * used_integral / (total_slices * static_cast<double>(cfg.horizon_us))
                     : 0;
  return out;
}

}  // namespace vgpu::sim
