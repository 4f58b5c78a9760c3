#include "mig/choice.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

namespace vgpu::mig {
namespace {

bool HighStartsFirst(const Profile& p) { return p.compute_slices == 1 || p.compute_slices == 3; }

// Feasible starts in `rule`'s order of preference for HAMi and first-fit.
std::vector<int> OrderedStarts(const Layout& layout, int profile, bool high_first) {
  std::vector<int> starts = FeasibleStarts(layout, profile);
  if (high_first) std::reverse(starts.begin(), starts.end());
  return starts;
}

Layout With(const Layout& layout, Instance inst) {
  Layout next = layout;
  next.instances.push_back(inst);
  std::sort(next.instances.begin(), next.instances.end(),
            [](const Instance& a, const Instance& b) { return a.start < b.start; });
  return next;
}

// Checks and state of the planner's search.
struct Search {
  const RequestMix* mix;
  std::vector<int> order;      // request positions, fewest feasible starts first
  std::vector<int> prev_same;  // per depth: the depth of the previous request of its profile, or -1
  std::vector<int> profiles;
  std::vector<int> starts;
  std::vector<int> best_starts;
  std::optional<CapacityScore> best;
  int visited = 0;

  void Run(const Layout& layout, size_t depth) {
    if (++visited > 200000) return;  // bounded; 7 requests of <= 7 starts stay far below
    if (depth == order.size()) {
      const CapacityScore s = ScoreLayout(layout, *mix);
      if (!best || s > *best) {
        best = s;
        best_starts = starts;
      }
      return;
    }
    const int req = order[depth];
    // Instances of one profile are tried in increasing start order only: the same layout is
    // not searched once per permutation of them.
    const int floor = prev_same[depth] < 0 ? -1 : starts[order[prev_same[depth]]];
    for (int start : FeasibleStarts(layout, profiles[req])) {
      if (start <= floor) continue;
      starts[req] = start;
      Run(With(layout, {profiles[req], start}), depth + 1);
    }
  }
};

}  // namespace

std::string_view PlacementRuleName(PlacementRule rule) {
  switch (rule) {
    case PlacementRule::kFirstFit:
      return "first-fit";
    case PlacementRule::kHami:
      return "hami";
    case PlacementRule::kFragmentationAware:
      return "ours";
  }
  return "ours";
}

RequestMix::RequestMix(const ModelTable& table, double half_life)
    : counts_(table.profiles.size(), 1.0),
      decay_(half_life > 0 ? std::exp2(-1.0 / half_life) : 1.0),
      total_(static_cast<double>(table.profiles.size())) {}

void RequestMix::Observe(int profile) {
  if (profile < 0 || profile >= static_cast<int>(counts_.size())) return;
  total_ = 0;
  for (double& c : counts_) {
    c *= decay_;
    total_ += c;
  }
  counts_[profile] += 1;
  total_ += 1;
}

RequestMix MixOfInstances(const ModelTable& table, std::span<const Layout> layouts) {
  RequestMix mix(table, 0);  // no decay: the instances are a snapshot, not a history
  for (const Layout& l : layouts) {
    if (l.table != &table) continue;
    for (const Instance& i : l.instances) mix.Observe(i.profile);
  }
  return mix;
}

double RequestMix::Weight(int profile) const {
  if (profile < 0 || profile >= static_cast<int>(counts_.size()) || total_ <= 0) return 0;
  return counts_[profile] / total_;
}

int MaxAdditional(const Layout& layout, int profile) {
  Layout l = layout;
  int added = 0;
  for (int s : FeasibleStarts(layout, profile)) {
    if (CheckAdd(l, {profile, s}).ok()) {
      l.instances.push_back({profile, s});
      ++added;
    }
  }
  return added;
}

int LargestPlaceableSlices(const Layout& layout) {
  int largest = 0;
  for (size_t q = 0; q < layout.table->profiles.size(); ++q) {
    const Profile& p = layout.table->profiles[q];
    if (p.memory_slices > largest && !FeasibleStarts(layout, static_cast<int>(q)).empty()) {
      largest = p.memory_slices;
    }
  }
  return largest;
}

CapacityScore ScoreLayout(const Layout& layout, const RequestMix& mix) {
  CapacityScore s;
  s.largest_slices = LargestPlaceableSlices(layout);
  for (size_t q = 0; q < layout.table->profiles.size(); ++q) {
    const int more = MaxAdditional(layout, static_cast<int>(q));
    const double w = mix.Weight(static_cast<int>(q));
    if (more > 0) s.next_fit += w;
    s.further += w * more;
  }
  return s;
}

std::optional<int> ChooseStart(const Layout& layout, int profile, PlacementRule rule,
                               const RequestMix* mix) {
  if (layout.table == nullptr || profile < 0 ||
      profile >= static_cast<int>(layout.table->profiles.size())) {
    return std::nullopt;
  }
  const bool high_first = HighStartsFirst(layout.table->profiles[profile]);
  if (rule == PlacementRule::kFirstFit || rule == PlacementRule::kHami) {
    const std::vector<int> starts =
        OrderedStarts(layout, profile, rule == PlacementRule::kHami && high_first);
    if (starts.empty()) return std::nullopt;
    return starts.front();
  }
  const RequestMix uniform(*layout.table);
  const RequestMix& m = mix ? *mix : uniform;
  std::optional<int> best;
  CapacityScore best_score;
  // Ties keep the first candidate, so the candidate order is criterion 4.
  for (int s : OrderedStarts(layout, profile, high_first)) {
    const CapacityScore score = ScoreLayout(With(layout, {profile, s}), m);
    if (!best || score > best_score) {
      best = s;
      best_score = score;
    }
  }
  return best;
}

Plan PlanAdds(const Layout& layout, std::span<const int> profiles, const RequestMix* mix) {
  const RequestMix uniform(*layout.table);
  Plan plan;
  plan.result = layout;
  Search search{mix ? mix : &uniform,
                {},
                {},
                {profiles.begin(), profiles.end()},
                std::vector<int>(profiles.size(), -1),
                {},
                std::nullopt,
                0};
  search.order.resize(profiles.size());
  std::iota(search.order.begin(), search.order.end(), 0);
  std::stable_sort(search.order.begin(), search.order.end(), [&](int a, int b) {
    return FeasibleStarts(layout, profiles[a]).size() < FeasibleStarts(layout, profiles[b]).size();
  });
  search.prev_same.assign(profiles.size(), -1);
  for (size_t d = 0; d < search.order.size(); ++d) {
    for (size_t e = d; e-- > 0;) {
      if (profiles[search.order[e]] == profiles[search.order[d]]) {
        search.prev_same[d] = static_cast<int>(e);
        break;
      }
    }
  }
  bool valid = true;
  for (int p : profiles) {
    valid = valid && p >= 0 && p < static_cast<int>(layout.table->profiles.size());
  }
  if (valid && !profiles.empty()) search.Run(layout, 0);
  if (search.best) {
    plan.all_fit = true;
    for (size_t i = 0; i < profiles.size(); ++i) {
      plan.items.push_back({profiles[i], search.best_starts[i], {}});
      plan.result = With(plan.result, {profiles[i], search.best_starts[i]});
    }
    return plan;
  }
  plan.all_fit = profiles.empty();
  for (int p : profiles) {
    PlannedInstance item{
        p, ChooseStart(plan.result, p, PlacementRule::kFragmentationAware, search.mix), {}};
    if (item.start) {
      plan.result = With(plan.result, {p, *item.start});
    } else if (p < 0 || p >= static_cast<int>(layout.table->profiles.size())) {
      item.why = {Refusal::kUnknownProfile, 0};
    } else {
      // The legal start with the fewest blocking slices explains the refusal best.
      std::optional<AddCheck> best;
      for (int s : layout.table->profiles[p].Starts()) {
        const AddCheck c = CheckAdd(plan.result, {p, s});
        if (!best || std::popcount(c.blocking_slices) < std::popcount(best->blocking_slices)) {
          best = c;
        }
      }
      item.why = best.value_or(AddCheck{Refusal::kIllegalStart, 0});
    }
    plan.items.push_back(item);
  }
  return plan;
}

}  // namespace vgpu::mig
