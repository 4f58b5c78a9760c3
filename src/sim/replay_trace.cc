#include "sim/replay_trace.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/csv.h"

namespace vgpu::sim {

Result<std::vector<TimedPod>> LoadTimedPodList(const std::string& path,
                                               const sched::ModelRegistry& models) {
  auto pods = LoadPodList(path, models);
  if (!pods) return pods.error();
  auto table = CsvTable::Load(path);
  if (!table) return table.error();
  const CsvTable& t = *table;
  const int created = t.FindColumn("creation_time");
  const int deleted = t.FindColumn("deletion_time");
  if (created < 0 || deleted < 0) {
    return Status::InvalidArgument(
        t.source() + ": the replay needs the columns creation_time and deletion_time (seconds); " +
        "this pod list has no " + (created < 0 ? "creation_time" : "deletion_time") + " column");
  }
  const int scheduled = t.FindColumn("scheduled_time");
  const int phase = t.FindColumn("pod_phase");
  if (t.num_rows() != pods->size()) return Status::Internal(path + ": rows changed while loading");
  std::vector<TimedPod> out;
  out.reserve(pods->size());
  for (size_t row = 0; row < t.num_rows(); ++row) {
    TimedPod p;
    p.pod = std::move((*pods)[row]);
    auto c = t.GetInt(row, created, 0);
    if (!c) return c.error();
    auto d = t.GetIntOr(row, deleted, -1, 0);
    if (!d) return d.error();
    p.times.creation_s = *c;
    p.times.deletion_s = *d;
    if (*d >= 0 && *d < *c) {
      return t.FieldError(row, deleted,
                          "\"" + std::string(t.Field(row, deleted)) +
                              "\" is before the pod's creation_time " + std::to_string(*c));
    }
    if (scheduled >= 0) {
      auto s = t.GetIntOr(row, scheduled, -1, 0);
      if (!s) return s.error();
      if (*s >= 0 && (*s < *c || (*d >= 0 && *s > *d))) {
        return t.FieldError(row, scheduled,
                            "\"" + std::string(t.Field(row, scheduled)) +
                                "\" is outside the pod's lifetime [creation_time " +
                                std::to_string(*c) + ", deletion_time " +
                                (*d >= 0 ? std::to_string(*d) : std::string("end")) + "]");
      }
      p.times.scheduled_s = *s;
    }
    if (phase >= 0) p.times.phase = std::string(t.Field(row, phase));
    out.push_back(std::move(p));
  }
  return out;
}

Result<JobList> MakeJobs(const std::vector<TimedPod>& pods, const JobOptions& options) {
  if (!(options.time_compress > 0) || !std::isfinite(options.time_compress)) {
    return Status::InvalidArgument("time compression must be a number > 0");
  }
  JobList list;
  if (pods.empty()) return list;
  int64_t first = INT64_MAX, end = 0;
  for (const TimedPod& p : pods) {
    first = std::min(first, p.times.creation_s);
    end = std::max({end, p.times.deletion_s, p.times.creation_s, p.times.scheduled_s});
  }
  std::vector<size_t> order(pods.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return pods[a].times.creation_s < pods[b].times.creation_s;
  });
  constexpr double kMicro = 1e6;
  for (size_t i : order) {
    const TimedPod& p = pods[i];
    const PodTimes& t = p.times;
    const bool pending = t.phase == "Pending" || t.scheduled_s < 0;
    if (pending && !options.include_pending) {
      ++list.skipped_pending;
      continue;
    }
    const int64_t deletion = t.deletion_s >= 0 ? t.deletion_s : end;
    const int64_t start = options.run_time_from == RunTimeFrom::kScheduled && t.scheduled_s >= 0
                              ? t.scheduled_s
                              : t.creation_s;
    ReplayJob j;
    j.name = p.pod.name;
    j.request = p.pod.request;
    j.arrival_us =
        std::llround(static_cast<double>(t.creation_s - first) * kMicro / options.time_compress);
    j.run_us = (deletion - start) * static_cast<int64_t>(kMicro);
    j.censored = t.deletion_s < 0 || t.deletion_s == end;
    list.censored += j.censored ? 1 : 0;
    list.zero_run_time += j.run_us == 0 ? 1 : 0;
    list.cpu_only += j.request.IsCpuOnly() ? 1 : 0;
    list.span_us = std::max(list.span_us, j.arrival_us);
    list.jobs.push_back(std::move(j));
  }
  return list;
}

}  // namespace vgpu::sim
