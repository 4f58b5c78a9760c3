#include "sim/wait_queue.h"

#include <algorithm>
#include <queue>

namespace vgpu::sim {

std::string_view QueueName(QueueDiscipline q) {
  return q == QueueDiscipline::kFifo ? "fifo" : "backfill";
}

Result<QueueDiscipline> ParseQueueDiscipline(std::string_view name) {
  if (name == "fifo") return QueueDiscipline::kFifo;
  if (name == "backfill") return QueueDiscipline::kBackfill;
  return Status::InvalidArgument("unknown queue discipline '" + std::string(name) +
                                 "' (known: fifo, backfill)");
}

std::vector<WaitQueue::JobId> WaitQueue::Waiting() const {
  std::vector<Entry> all(fifo_.begin() + static_cast<std::ptrdiff_t>(head_), fifo_.end());
  for (const auto& q : by_shape_) all.insert(all.end(), q.begin(), q.end());
  std::sort(all.begin(), all.end(), [](const Entry& a, const Entry& b) { return a.seq < b.seq; });
  std::vector<JobId> out;
  out.reserve(all.size());
  for (const Entry& e : all) out.push_back(e.job);
  return out;
}

bool WaitQueue::Arrive(JobId job, ShapeId shape, const TryStart& try_start) {
  const Entry e{next_seq_++, job};
  if (discipline_ == QueueDiscipline::kFifo) {
    if (!empty()) {
      fifo_.push_back(e);  // no overtaking: the head was tried and did not fit
      ++size_;
      return false;
    }
    if (try_start(job)) return true;
    head_tried_ = true;
    fifo_.push_back(e);
    ++size_;
    return false;
  }
  if (try_start(job)) return true;
  if (shape >= by_shape_.size()) {
    by_shape_.resize(shape + 1);
    listed_.resize(shape + 1, 0);
  }
  by_shape_[shape].push_back(e);
  if (listed_[shape] == 0) {
    listed_[shape] = 1;
    waiting_shapes_.push_back(shape);
  }
  ++size_;
  return false;
}

size_t WaitQueue::Scan(const FitsFreed& fits_freed, const TryStart& try_start) {
  return discipline_ == QueueDiscipline::kFifo ? ScanFifo(fits_freed, try_start)
                                               : ScanBackfill(fits_freed, try_start);
}

size_t WaitQueue::ScanFifo(const FitsFreed& fits_freed, const TryStart& try_start) {
  size_t started = 0;
  while (!empty()) {
    const JobId job = fifo_[head_].job;
    if (head_tried_ && !fits_freed(job)) break;
    if (!try_start(job)) {
      head_tried_ = true;
      break;
    }
    ++head_;
    --size_;
    ++started;
    head_tried_ = false;
  }
  if (head_ > 0 && head_ * 2 >= fifo_.size()) {
    fifo_.erase(fifo_.begin(), fifo_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
  return started;
}

size_t WaitQueue::ScanBackfill(const FitsFreed& fits_freed, const TryStart& try_start) {
  using Candidate = std::pair<uint64_t, ShapeId>;  // (seq of the shape's oldest job, shape)
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> ready;
  size_t keep = 0;
  for (ShapeId s : waiting_shapes_) {
    if (by_shape_[s].empty()) {
      listed_[s] = 0;
      continue;
    }
    waiting_shapes_[keep++] = s;
    if (fits_freed(by_shape_[s].front().job)) ready.emplace(by_shape_[s].front().seq, s);
  }
  waiting_shapes_.resize(keep);
  size_t started = 0;
  while (!ready.empty()) {
    const ShapeId s = ready.top().second;
    ready.pop();
    std::deque<Entry>& q = by_shape_[s];
    // Earlier starts in this scan may have taken what this shape needed: check again.
    if (!fits_freed(q.front().job) || !try_start(q.front().job)) continue;
    q.pop_front();
    --size_;
    ++started;
    if (!q.empty() && fits_freed(q.front().job)) ready.emplace(q.front().seq, s);
  }
  return started;
}

}  // namespace vgpu::sim
