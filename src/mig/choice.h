// Where to put a new MIG instance: the placement rules compared by `vgpu bench mig`, the
// request-mix learner, and a multi-profile planner.
//
// Rules (all choose only among FeasibleStarts, so each refuses exactly when nothing fits):
// - kFirstFit: the lowest feasible start (NVIDIA's default, placement order).
// - kHami: HAMi's order (pkg/device/nvidia/mig_topology.go): profiles with 1 or 3 compute slices
//   try the highest start first, the others the lowest.
// - kFragmentationAware (ours): the start whose resulting layout scores best, lexicographically:
//   1. the largest profile (in memory slices) still placeable afterwards: keep big holes;
//   2. the chance that the next request fits, under the learned mix (sum over profiles of the
//      mix weight of each profile that still has a feasible start);
//   3. the mix-weighted number of further instances that still fit;
//   4. the highest start for 1- and 3-compute-slice profiles, else the lowest (packs small
//      instances away from slice 0, where the 4g and 7g profiles must start).
// Pure functions; the mix is the caller's.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "mig/layout.h"

namespace vgpu::mig {

enum class PlacementRule { kFirstFit, kHami, kFragmentationAware };
std::string_view PlacementRuleName(PlacementRule rule);  // "first-fit", "hami", "ours"

// How often each profile of a table is asked for: a uniform prior of one request per profile
// plus every observed request, with older observations decayed (half-life `half_life`).
class RequestMix {
 public:
  explicit RequestMix(const ModelTable& table, double half_life = 200);
  void Observe(int profile);
  // Normalized weight of `profile` (the weights add up to 1).
  double Weight(int profile) const;
  size_t size() const { return counts_.size(); }

 private:
  std::vector<double> counts_;
  double decay_ = 1;
  double total_ = 0;
};

// The mix of what `layouts` (of `table`) hold now: the uniform prior plus one observation per
// instance. A stateless stand-in for the learned mix where no history is kept (the scheduler's
// ChooseMig): the instances a node runs are its recent requests, weighted by how long they stay.
RequestMix MixOfInstances(const ModelTable& table, std::span<const Layout> layouts);

// How many more instances of `profile` fit into `layout` (greedy in placement order, which is
// optimal for one size of aligned placement), respecting max counts and compute slices.
int MaxAdditional(const Layout& layout, int profile);
// Memory slices of the largest profile that still has a feasible start (0 when none).
int LargestPlaceableSlices(const Layout& layout);
// Score of a layout for the fragmentation-aware rule, components 1-3 (higher is better).
struct CapacityScore {
  int largest_slices = 0;
  double next_fit = 0;
  double further = 0;
  auto operator<=>(const CapacityScore&) const = default;
};
CapacityScore ScoreLayout(const Layout& layout, const RequestMix& mix);

// The start `rule` picks for `profile`, or std::nullopt when no legal placement is free.
// `mix` is used by kFragmentationAware only (a uniform one when null).
std::optional<int> ChooseStart(const Layout& layout, int profile, PlacementRule rule,
                               const RequestMix* mix = nullptr);

// Planning several instances at once (`vgpu mig plan --add a,b`): when all of them fit together
// (a backtracking search over their feasible starts, fewest placements first, as HAMi's
// canPlaceMigProfiles), the combination whose final layout scores best; otherwise one by one in
// the given order, each with the fragmentation-aware rule, those that do not fit refused with
// their blocking check.
struct PlannedInstance {
  int profile = 0;
  std::optional<int> start;  // where it goes; empty when refused
  AddCheck why;              // for a refusal: the check at its best legal start
};
struct Plan {
  std::vector<PlannedInstance> items;  // in request order
  Layout result;                       // the layout with every placed item
  bool all_fit = false;
};
Plan PlanAdds(const Layout& layout, std::span<const int> profiles, const RequestMix* mix = nullptr);

}  // namespace vgpu::mig
