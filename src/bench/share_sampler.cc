#include "bench/share_sampler.h"

#include <map>

#include "simgpu/config.h"
#include "simgpu/shared_state.h"
#include "simgpu/timeline.h"

namespace vgpu::bench {
namespace {

constexpr uint64_t kBucket = 10ULL * 1000 * 1000;

class TimelineSampler : public ShareSampler {
 public:
  TimelineSampler(std::unique_ptr<simgpu::SharedState> state, std::vector<pid_t> pids)
      : state_(std::move(state)),
        pids_(std::move(pids)),
        busy_(pids_.size()),
        slots_(pids_.size(), -1) {}

  void Sample(uint64_t now) override {
    simgpu::SharedState::Lock lock(state_.get());
    simgpu::SharedStateLayout* l = state_->layout();
    simgpu::Settle(l, 0, now);
    uint64_t from = last_ == 0 ? now - 4000 * kBucket / 10 : last_;
    from -= from % kBucket;
    uint64_t to = now - now % kBucket;  // whole buckets only
    for (size_t i = 0; i < pids_.size(); ++i) {
      if (slots_[i] < 0) slots_[i] = simgpu::FindProcessSlot(l, pids_[i]);
      if (slots_[i] < 0) continue;
      for (uint64_t b = from; b < to; b += kBucket) {
        busy_[i][b] = simgpu::BusyInWindow(l, 0, slots_[i], b, b + kBucket);
      }
    }
    if (to > last_) last_ = to;
  }

  std::optional<double> Share(size_t index, uint64_t from, uint64_t to) const override {
    if (index >= busy_.size() || to <= from || slots_[index] < 0) return std::nullopt;
    double total = 0;
    for (const auto& [b, ns] : busy_[index]) {
      uint64_t lo = std::max(b, from), hi = std::min(b + kBucket, to);
      if (hi > lo) total += static_cast<double>(ns) * static_cast<double>(hi - lo) / kBucket;
    }
    return 100.0 * total / static_cast<double>(to - from);
  }

 private:
  std::unique_ptr<simgpu::SharedState> state_;
  std::vector<pid_t> pids_;
  std::vector<std::map<uint64_t, uint64_t>> busy_;
  std::vector<int> slots_;
  uint64_t last_ = 0;
};

}  // namespace

std::unique_ptr<ShareSampler> ShareSampler::Open(const std::vector<pid_t>& pids) {
  Result<simgpu::Config> config = simgpu::LoadConfigFromEnvironment();
  if (!config.has_value()) return nullptr;
  auto state = simgpu::SharedState::Open(*config, simgpu::SharedState::DefaultPath(*config));
  if (!state.has_value()) return nullptr;
  return std::make_unique<TimelineSampler>(std::move(*state), pids);
}

}  // namespace vgpu::bench
