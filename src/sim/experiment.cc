#include "sim/experiment.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <mutex>
#include <thread>

namespace vgpu::sim {

Stat MeanSd(const std::vector<double>& values) {
  Stat s;
  if (values.empty()) return s;
  for (double v : values) s.mean += v;
  s.mean /= static_cast<double>(values.size());
  if (values.size() > 1) {
    double sq = 0;
    for (double v : values) sq += (v - s.mean) * (v - s.mean);
    s.sd = std::sqrt(sq / static_cast<double>(values.size() - 1));
  }
  return s;
}

Result<std::vector<PolicyRuns>> RunExperiment(const SnapshotInput& input,
                                              const ExperimentOptions& options) {
  if (options.policies.empty()) return Status::InvalidArgument("no policy to run");
  if (options.seeds.empty()) return Status::InvalidArgument("no seed to run");
  std::vector<sched::PolicyArgs> args(options.policies.size());
  for (size_t i = 0; i < options.policies.size(); ++i) {
    args[i].target_workload = input.target_workload;
    args[i].models = input.models;
    auto it = options.params.find(options.policies[i]);
    if (it != options.params.end()) args[i].params = it->second;
    auto made = sched::BuiltinPolicies().Create(options.policies[i], args[i]);
    if (!made) return made.error();
  }
  for (const auto& [name, kv] : options.params) {
    if (std::find(options.policies.begin(), options.policies.end(), name) ==
        options.policies.end()) {
      return Status::InvalidArgument("options given for policy '" + name +
                                     "', which is not being run");
    }
  }
  const size_t jobs = options.policies.size() * options.seeds.size();
  std::vector<Result<SeedResult>> results(jobs, Status::Internal("not run"));
  std::atomic<size_t> next{0};
  std::atomic<size_t> finished{0};
  std::atomic<int64_t> progress{0};
  // Expected pods per run: the original list plus about (inflate x capacity - its GPU request)
  // worth of resampled pods.
  int64_t capacity = 0, request = 0;
  for (const auto& n : input.nodes)
    capacity += sched::kGpuMilli * static_cast<int64_t>(n.gpus.size());
  for (const auto& r : input.pods) request += r.TotalGpuMilli();
  double per_pod = input.pods.empty()
                       ? 1.0
                       : static_cast<double>(request) / static_cast<double>(input.pods.size());
  const double extra =
      std::max(0.0, options.inflate * static_cast<double>(capacity) - static_cast<double>(request));
  const int64_t expected_per_run = static_cast<int64_t>(input.pods.size()) +
                                   static_cast<int64_t>(per_pod > 0 ? extra / per_pod : 0);
  const int64_t expected = expected_per_run * static_cast<int64_t>(jobs);

  auto worker = [&] {
    while (true) {
      const size_t j = next.fetch_add(1);
      if (j >= jobs) return;
      const size_t p = j / options.seeds.size();
      const uint64_t seed = options.seeds[j % options.seeds.size()];
      results[j] =
          RunSnapshot(input, options.policies[p], args[p], seed, options.inflate, &progress);
      finished.fetch_add(1);
    }
  };
  const int threads = std::max(1, std::min<int>(options.threads, static_cast<int>(jobs)));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  if (options.on_progress) {
    while (finished.load() < jobs) {
      options.on_progress(std::min(progress.load(), expected), expected);
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  for (std::thread& t : pool) t.join();
  if (options.on_progress) options.on_progress(expected, expected);

  std::vector<PolicyRuns> out;
  for (size_t p = 0; p < options.policies.size(); ++p) {
    PolicyRuns runs;
    runs.policy = options.policies[p];
    for (size_t s = 0; s < options.seeds.size(); ++s) {
      Result<SeedResult>& r = results[p * options.seeds.size() + s];
      if (!r) return r.error().WithContext("policy " + runs.policy);
      runs.seeds.push_back(std::move(*r));
    }
    out.push_back(std::move(runs));
  }
  return out;
}

PolicySummary Aggregate(const PolicyRuns& runs) {
  PolicySummary s;
  s.policy = runs.policy;
  std::map<int, std::vector<const LevelValue*>> by_level;
  for (const SeedResult& r : runs.seeds) {
    for (const LevelValue& v : r.levels) by_level[v.arrived_pct].push_back(&v);
    s.failed_pods += static_cast<double>(r.failed);
    s.pods += static_cast<double>(r.pods);
  }
  if (!runs.seeds.empty()) {
    s.failed_pods /= static_cast<double>(runs.seeds.size());
    s.pods /= static_cast<double>(runs.seeds.size());
  }
  for (const auto& [pct, values] : by_level) {
    if (values.size() != runs.seeds.size()) continue;
    std::vector<double> alloc, unalloc, frag;
    for (const LevelValue* v : values) {
      alloc.push_back(v->allocated_pct);
      unalloc.push_back(100.0 - v->allocated_pct);
      frag.push_back(v->frag_rate_pct);
    }
    s.levels.push_back(LevelStats{pct, MeanSd(alloc), MeanSd(unalloc), MeanSd(frag)});
  }
  return s;
}

const LevelStats* FindLevel(const PolicySummary& s, int pct) {
  for (const LevelStats& l : s.levels) {
    if (l.arrived_pct == pct) return &l;
  }
  return nullptr;
}

}  // namespace vgpu::sim
