// Actions of the tuning rules (rules.h): a closed set, applied through an ActionSink. The node
// daemon implements the sink for real (Kubernetes Events and metrics, share and priority changes
// through live resize, quarantine levels); RecordingSink keeps them, for tests and dry runs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::analyze {

enum class ActionType {
  kAlert,                 // a Kubernetes Event and a metric
  kLowerShare,            // lower a best-effort slice's compute share by `amount` points
  kRaiseShare,            // raise a best-effort slice's compute share by `amount` points
  kRaisePriority,         // raise a slice's priority at the compute gate
  kRecommendMig,          // recommend a MIG profile for the GPU (`detail`: the profile)
  kRecommendMemoryLimit,  // recommend a memory limit for the slice (`amount`: bytes)
  kQuarantineSlice,       // stop admitting work from the slice
  kQuarantineGpu,         // stop placing on the GPU (cordon the device)
};
std::string_view ActionName(ActionType t);
std::optional<ActionType> ParseActionName(std::string_view name);
// Every action name, for error messages.
std::string ActionNames();

struct Action {
  ActionType type = ActionType::kAlert;
  std::string rule;    // the rule that decided it
  std::string target;  // the slice ("gpu0/web") or the GPU ("gpu0")
  double amount = 0;
  std::string detail;
  int64_t at_ns = 0;  // the evaluation's clock
};

class ActionSink {
 public:
  virtual ~ActionSink() = default;
  // The rule started firing for the target: apply the action.
  virtual void Fire(const Action& a) = 0;
  // The rule stopped firing (its clear condition held for clear_for): undo what can be undone
  // (a share change is restored; an alert is resolved; a recommendation is withdrawn).
  virtual void Resolve(const Action& a) = 0;
};

class RecordingSink final : public ActionSink {
 public:
  struct Event {
    bool fired;  // false: resolved
    Action action;
  };
  void Fire(const Action& a) override { events_.push_back({true, a}); }
  void Resolve(const Action& a) override { events_.push_back({false, a}); }
  const std::vector<Event>& events() const { return events_; }

 private:
  std::vector<Event> events_;
};

}  // namespace vgpu::analyze
