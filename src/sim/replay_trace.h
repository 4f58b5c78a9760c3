// The time columns of a pod list, and the jobs a time-based replay runs.
//
// Pod list time columns (seconds): creation_time and deletion_time (required), scheduled_time
// (optional; empty for pods that were never bound), pod_phase (optional: Running, Succeeded,
// Failed, Pending, ...). Every other column is read by LoadPodList (trace.h).
//
// How each kind of pod becomes a job (see docs/replay.md for the data behind these choices):
// - Arrival = (creation_time - the earliest creation_time) / time_compress, in microseconds.
// - Run time (what the pod holds its resources for once started; never compressed):
//     kFromScheduled (default): deletion_time - scheduled_time, i.e. the time the pod ran in the
//       traced cluster; pods without scheduled_time fall back to deletion_time - creation_time.
//     kFromCreation: deletion_time - creation_time (includes the traced cluster's own queueing).
// - Pending pods (pod_phase "Pending", or no scheduled_time) never ran in the traced cluster: their
//   deletion_time is when their owner gave up. They are skipped unless `include_pending`.
// - Censored pods: deletion_time equal to the largest deletion_time of the file (the pod was still
//   running when the trace was cut), or an empty deletion_time (which means the same). Their run
//   time is a lower bound; they are kept and marked, and makespan ignores them.
// - Pods whose run time is 0 are kept: they need a place, then leave at once.
// - CPU-only pods are kept: they compete for CPU and memory on the GPU nodes.
// Errors (kInvalidArgument) name file, line and column: a missing time column, text or a negative
// value in a time field, deletion before creation, scheduled_time outside [creation, deletion].
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "sched/model_set.h"
#include "sim/trace.h"

namespace vgpu::sim {

struct PodTimes {
  int64_t creation_s = 0;
  int64_t deletion_s = -1;   // -1: empty (still running at the end of the trace)
  int64_t scheduled_s = -1;  // -1: never bound
  std::string phase;         // empty when the file has no pod_phase column
};

struct TimedPod {
  TracePod pod;
  PodTimes times;
};

// Loads a pod list with its time columns (LoadPodList's checks, plus the ones above).
Result<std::vector<TimedPod>> LoadTimedPodList(const std::string& path,
                                               const sched::ModelRegistry& models);

enum class RunTimeFrom { kScheduled, kCreation };

struct JobOptions {
  double time_compress = 1.0;  // > 0; arrivals are divided by it
  RunTimeFrom run_time_from = RunTimeFrom::kScheduled;
  bool include_pending = false;
};

// One pod of a replay, as the trace asks for it.
struct ReplayJob {
  std::string name;
  sched::PodRequest request;
  int64_t arrival_us = 0;
  int64_t run_us = 0;
  bool censored = false;
};

struct JobList {
  std::vector<ReplayJob> jobs;  // by arrival, then by position in the file
  int64_t skipped_pending = 0;
  int64_t censored = 0;
  int64_t zero_run_time = 0;
  int64_t cpu_only = 0;
  int64_t span_us = 0;  // last arrival
};

// Turns the pod list into jobs as described above. kInvalidArgument for time_compress <= 0.
Result<JobList> MakeJobs(const std::vector<TimedPod>& pods, const JobOptions& options);

}  // namespace vgpu::sim
