// WaitQueue: the pods of a time-based replay that arrived but do not fit yet, and the rule that
// decides which of them may start when resources free up.
//
// Disciplines:
// - kFifo (strict first-in, first-out): pods start in arrival order. While any pod waits, a new
//   arrival joins the tail without being tried, and only the head is tried when resources free
//   up; when the head starts, the next pod becomes the head and is tried at once. A large pod at
//   the head therefore holds back every later pod, even ones that would fit.
// - kBackfill (greedy backfill): every arrival is tried at once, and when resources free up the
//   whole queue is tried in arrival order; any pod that fits starts, so later, smaller pods pass a
//   head that does not fit. There is no reservation for the head: under sustained load a large pod
//   can wait much longer than under FIFO.
//
// Cost: the queue relies on an invariant that the replay maintains: a pod that waits did not fit
// on any node when it was last tried, and since then nodes only lost free resources except the
// ones reported in `freed`. So a scan asks only `fits_freed(job)` (does the pod fit on one of the
// freed nodes? a cheap check) and calls `try_start(job)` (a full scheduling decision) only for pods
// that pass. A FIFO head that has never been tried is tried in full. One scan is O(queue length x
// freed nodes) cheap checks plus one decision per started pod.
//
// Not thread-safe. Job ids are the caller's (indices into its job list).
#pragma once

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vgpu::sim {

enum class QueueDiscipline { kFifo, kBackfill };

std::string_view QueueName(QueueDiscipline q);
// "fifo" or "backfill"; kInvalidArgument otherwise.
Result<QueueDiscipline> ParseQueueDiscipline(std::string_view name);

class WaitQueue {
 public:
  using JobId = uint32_t;
  // Tries to start a job now (a full decision over every node); true when it started.
  using TryStart = std::function<bool(JobId)>;
  // Whether the job fits on one of the nodes freed since the last scan.
  using FitsFreed = std::function<bool(JobId)>;

  explicit WaitQueue(QueueDiscipline discipline) : discipline_(discipline) {}

  QueueDiscipline discipline() const { return discipline_; }
  size_t size() const { return jobs_.size() - head_; }
  bool empty() const { return size() == 0; }
  // Waiting jobs in arrival order.
  std::vector<JobId> Waiting() const { return {jobs_.begin() + head_, jobs_.end()}; }

  // A job arrives: it starts at once if the discipline lets it try and it fits, else it waits.
  // Returns true when it started.
  bool Arrive(JobId job, const TryStart& try_start);
  // Resources were freed on some nodes: starts the jobs the discipline allows, in arrival order.
  // Returns the number started.
  size_t Scan(const FitsFreed& fits_freed, const TryStart& try_start);

 private:
  void Compact();

  QueueDiscipline discipline_;
  std::vector<JobId> jobs_;  // jobs_[head_..] wait, in arrival order
  size_t head_ = 0;
  bool head_tried_ = false;  // FIFO: the head failed a full decision since it became the head
};

}  // namespace vgpu::sim
