#include "sim/wait_queue.h"

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

bool WaitQueue::Arrive(JobId job, const TryStart& try_start) {
  if (discipline_ == QueueDiscipline::kFifo && !empty()) {
    jobs_.push_back(job);  // no overtaking: the head was tried and did not fit
    return false;
  }
  if (try_start(job)) return true;
  if (empty()) head_tried_ = true;
  jobs_.push_back(job);
  return false;
}

size_t WaitQueue::Scan(const FitsFreed& fits_freed, const TryStart& try_start) {
  size_t started = 0;
  if (discipline_ == QueueDiscipline::kFifo) {
    while (!empty()) {
      const JobId job = jobs_[head_];
      if (head_tried_ && !fits_freed(job)) break;
      if (!try_start(job)) {
        head_tried_ = true;
        break;
      }
      ++head_;
      ++started;
      head_tried_ = false;
    }
  } else {
    size_t keep = head_;
    for (size_t i = head_; i < jobs_.size(); ++i) {
      const JobId job = jobs_[i];
      if (fits_freed(job) && try_start(job)) {
        ++started;
      } else {
        jobs_[keep++] = job;
      }
    }
    jobs_.resize(keep);
  }
  Compact();
  return started;
}

void WaitQueue::Compact() {
  if (head_ > 0 && head_ * 2 >= jobs_.size()) {
    jobs_.erase(jobs_.begin(), jobs_.begin() + static_cast<std::ptrdiff_t>(head_));
    head_ = 0;
  }
}

}  // namespace vgpu::sim
