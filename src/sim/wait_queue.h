// WaitQueue: the pods of a time-based replay that arrived but do not fit yet, and the rule that
// decides which of them may start when resources free up.
//
// Disciplines:
// - kFifo (strict first-in, first-out): pods start in arrival order. While any pod waits, a new
//   arrival joins the tail without being tried, and only the head is tried when resources free
//   up; when the head starts, the next pod becomes the head and is tried at once. A large pod at
//   the head therefore holds back every later pod, even ones that would fit.
// - kBackfill (greedy backfill): every arrival is tried at once, and when resources free up the
//   waiting pods are tried in arrival order; any pod that fits starts, so later, smaller pods pass
//   a head that does not fit. There is no reservation for the head: under sustained load a large
//   pod can wait much longer than under FIFO.
//
// Cost. The queue relies on an invariant that the replay maintains: a pod that waits did not fit
// on any node when it was last tried, and since then nodes only lost free resources except the
// ones freed before this scan. So a scan asks `fits_freed(job)` (does the pod fit on one of the
// freed nodes? a cheap check) and calls `try_start(job)` (a full scheduling decision) only for
// pods that pass. A FIFO head that has never been tried is tried in full.
// Backfill groups the waiting pods by shape (the caller's id for an exact request: pods of one
// shape fit or not together). Within one scan resources only shrink, so once the oldest pod of a
// shape fails, every later pod of that shape fails too. A scan therefore checks the oldest pod of
// each shape, then starts pods in arrival order from a heap of the shapes that fit: O(shapes x
// freed nodes) cheap checks plus O(log shapes) per started pod, whatever the queue length. The
// pods that start, and their order, are the same as a pass over the whole queue would give.
//
// Not thread-safe. Job ids and shape ids are the caller's (shape ids should be small and dense).
#pragma once

#include <cstdint>
#include <deque>
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
  using ShapeId = uint32_t;
  // Tries to start a job now (a full decision over every node); true when it started.
  using TryStart = std::function<bool(JobId)>;
  // Whether the job fits on one of the nodes freed since the last scan.
  using FitsFreed = std::function<bool(JobId)>;

  explicit WaitQueue(QueueDiscipline discipline) : discipline_(discipline) {}

  QueueDiscipline discipline() const { return discipline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Waiting jobs in arrival order (O(n log n); for tests and diagnostics).
  std::vector<JobId> Waiting() const;

  // A job of shape `shape` arrives: it starts at once if the discipline lets it try and it fits,
  // else it waits. Returns true when it started.
  bool Arrive(JobId job, ShapeId shape, const TryStart& try_start);
  // Resources were freed on some nodes: starts the jobs the discipline allows, in arrival order.
  // Returns the number started.
  size_t Scan(const FitsFreed& fits_freed, const TryStart& try_start);

 private:
  struct Entry {
    uint64_t seq;  // arrival order
    JobId job;
  };
  size_t ScanFifo(const FitsFreed& fits_freed, const TryStart& try_start);
  size_t ScanBackfill(const FitsFreed& fits_freed, const TryStart& try_start);

  QueueDiscipline discipline_;
  size_t size_ = 0;
  uint64_t next_seq_ = 0;
  // FIFO: one queue; fifo_[head_..] wait.
  std::vector<Entry> fifo_;
  size_t head_ = 0;
  bool head_tried_ = false;  // the head failed a full decision since it became the head
  // Backfill: one queue per shape, and the shapes that have waiting jobs (possibly stale).
  std::vector<std::deque<Entry>> by_shape_;
  std::vector<ShapeId> waiting_shapes_;
  std::vector<uint8_t> listed_;  // shape is in waiting_shapes_
};

}  // namespace vgpu::sim
