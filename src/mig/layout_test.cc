#include "mig/layout.h"

#include <gtest/gtest.h>

#include <bit>
#include <map>
#include <set>

#include "mig/choice.h"

namespace vgpu::mig {
namespace {

const ModelTable& H200() { return *ModelByKey("H200"); }

// Every layout reachable from the empty one by adding instances through Add, for one table.
std::vector<Layout> Reachable(const ModelTable& table) {
  std::set<std::vector<std::pair<int, int>>> seen;
  std::vector<Layout> all{Layout{&table, {}}};
  seen.insert({});
  for (size_t i = 0; i < all.size(); ++i) {
    for (size_t q = 0; q < table.profiles.size(); ++q) {
      for (int s : table.profiles[q].Starts()) {
        Layout next = all[i];
        if (!Add(&next, {static_cast<int>(q), s}).ok()) continue;
        std::vector<std::pair<int, int>> key;
        for (const Instance& inst : next.instances) key.push_back({inst.start, inst.profile});
        if (seen.insert(key).second) all.push_back(std::move(next));
      }
    }
  }
  return all;
}

// The legality of adding (q, s) computed from first principles, independently of CheckAdd.
bool FitsByHand(const Layout& l, int q, int s) {
  const Profile& p = l.table->profiles[q];
  if (!p.LegalStart(s)) return false;
  if (s + p.memory_slices > l.table->memory_slices) return false;
  bool slice_used[kMemorySlices] = {};
  int compute = 0, same = 0;
  Engines used = p.engines;
  for (const Instance& inst : l.instances) {
    const Profile& o = l.table->profiles[inst.profile];
    for (int k = inst.start; k < inst.start + o.memory_slices; ++k) slice_used[k] = true;
    compute += o.compute_slices;
    same += inst.profile == q;
    used.copy += o.engines.copy;
    used.decoder += o.engines.decoder;
    used.jpeg += o.engines.jpeg;
    used.ofa += o.engines.ofa;
  }
  for (int k = s; k < s + p.memory_slices; ++k) {
    if (slice_used[k]) return false;
  }
  // The whole-GPU profile's engines are the GPU's.
  Engines all;
  for (const Profile& o : l.table->profiles) {
    if (o.memory_slices == l.table->memory_slices) all = o.engines;
  }
  return same < p.max_count && static_cast<int>(l.instances.size()) < l.table->max_instances &&
         compute + p.compute_slices <= l.table->compute_slices && used.copy <= all.copy &&
         used.decoder <= all.decoder && used.jpeg <= all.jpeg && used.ofa <= all.ofa;
}

TEST(MigLayout, ExhaustiveOverEveryReachableLayoutOfEveryTable) {
  for (const ModelTable& table : AllModels()) {
    SCOPED_TRACE(std::string(table.key));
    const std::vector<Layout> layouts = Reachable(table);
    EXPECT_GT(layouts.size(), table.memory_slices == 8 ? 100u : 20u);
    const RequestMix mix(table);
    for (const Layout& l : layouts) {
      SCOPED_TRACE(FormatLayout(l));
      ASSERT_TRUE(Validate(l).ok()) << Validate(l).ToString();
      // No overlap, max counts, instance and compute limits.
      int slices = 0;
      std::map<int, int> counts;
      for (const Instance& inst : l.instances) {
        slices += table.profiles[inst.profile].memory_slices;
        ++counts[inst.profile];
      }
      EXPECT_EQ(std::popcount(UsedSlices(l)), slices);
      for (auto [q, n] : counts) EXPECT_LE(n, table.profiles[q].max_count);
      EXPECT_LE(l.instances.size(), static_cast<size_t>(table.max_instances));
      EXPECT_LE(UsedComputeSlices(l), table.compute_slices);
      // The text form round-trips.
      auto parsed = ParseLayout(table, FormatLayout(l));
      ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
      EXPECT_EQ(*parsed, l);
      for (int q = 0; q < static_cast<int>(table.profiles.size()); ++q) {
        std::vector<int> by_hand;
        for (int s = 0; s < kMemorySlices; ++s) {
          EXPECT_EQ(CheckAdd(l, {q, s}).ok(), FitsByHand(l, q, s)) << q << "@" << s;
          if (FitsByHand(l, q, s)) by_hand.push_back(s);
        }
        EXPECT_EQ(FeasibleStarts(l, q), by_hand);
        // Every rule refuses exactly when no legal placement is free, and picks a feasible one.
        for (PlacementRule rule :
             {PlacementRule::kFirstFit, PlacementRule::kHami, PlacementRule::kFragmentationAware}) {
          const std::optional<int> s = ChooseStart(l, q, rule, &mix);
          ASSERT_EQ(s.has_value(), !by_hand.empty());
          if (s) {
            EXPECT_TRUE(std::find(by_hand.begin(), by_hand.end(), *s) != by_hand.end());
          }
        }
      }
      // Removing any instance leaves a valid layout.
      for (const Instance& inst : l.instances) {
        Layout r = l;
        ASSERT_TRUE(Remove(&r, inst.start).ok());
        EXPECT_TRUE(Validate(r).ok());
        EXPECT_EQ(r.instances.size() + 1, l.instances.size());
      }
    }
  }
}

// Our rule keeps the largest profile placeable whenever some feasible start does, and among
// those maximizes the chance that the next request of the mix fits.
TEST(MigLayout, FragmentationAwareChoiceIsBestByItsScore) {
  for (const char* key : {"H200", "A100-40GB"}) {
    const ModelTable& table = *ModelByKey(key);
    RequestMix mix(table);
    mix.Observe(0);
    mix.Observe(3);
    for (const Layout& l : Reachable(table)) {
      for (int q = 0; q < static_cast<int>(table.profiles.size()); ++q) {
        const std::optional<int> ours = ChooseStart(l, q, PlacementRule::kFragmentationAware, &mix);
        if (!ours) continue;
        Layout chosen = l;
        ASSERT_TRUE(Add(&chosen, {q, *ours}).ok());
        const CapacityScore got = ScoreLayout(chosen, mix);
        for (int s : FeasibleStarts(l, q)) {
          Layout other = l;
          ASSERT_TRUE(Add(&other, {q, s}).ok());
          EXPECT_GE(got.largest_slices, LargestPlaceableSlices(other));
          EXPECT_GE(got, ScoreLayout(other, mix));
        }
      }
    }
  }
}

// A measured property of every table: over every reachable layout, no request mix changes
// the start our rule picks (the largest placeable profile decides, and where it ties every mix
// ranks the tied starts alike). The mix still ranks candidates
// across GPUs (MigChoice::score in the scheduler). If a table or the rule changes this, the
// request-mix section of docs/mig.md must be revisited.
TEST(MigLayout, NoRequestMixChangesTheStartOfOneGpu) {
  for (const ModelTable& table : AllModels()) {
    SCOPED_TRACE(std::string(table.key));
    const RequestMix uniform(table);
    std::vector<RequestMix> extremes;  // nearly all weight on one profile
    for (size_t q = 0; q < table.profiles.size(); ++q) {
      RequestMix m(table, 0);
      for (int i = 0; i < 1000; ++i) m.Observe(static_cast<int>(q));
      extremes.push_back(m);
    }
    int choices = 0;
    for (const Layout& l : Reachable(table)) {
      for (int q = 0; q < static_cast<int>(table.profiles.size()); ++q) {
        if (FeasibleStarts(l, q).size() < 2) continue;
        ++choices;
        const auto start = ChooseStart(l, q, PlacementRule::kFragmentationAware, &uniform);
        for (const RequestMix& m : extremes) {
          EXPECT_EQ(ChooseStart(l, q, PlacementRule::kFragmentationAware, &m), start)
              << FormatLayout(l) << " + " << table.profiles[q].name;
        }
      }
    }
    EXPECT_GT(choices, table.memory_slices == 8 ? 2000 : 20);  // the case is not empty
  }
}

TEST(MigLayout, ParseAndValidationErrorsNameTheItem) {
  auto err = [](std::string_view text) {
    auto r = ParseLayout(H200(), text);
    EXPECT_FALSE(r.has_value()) << text;
    return r ? std::string() : r.error().message();
  };
  EXPECT_TRUE(ParseLayout(H200(), "").has_value());
  EXPECT_EQ(FormatLayout(*ParseLayout(H200(), " 1g.18gb@4 , 3g.71gb@0")), "3g.71gb@0,1g.18gb@4");
  EXPECT_EQ(err("3g.71gb@0,2g.35gb@2"), "2g.35gb@2 overlaps 3g.71gb@0 on memory slices 2-3");
  EXPECT_EQ(err("5g.70gb@0"), "5g.70gb@0: H200 has no MIG profile 5g.70gb");
  EXPECT_EQ(err("3g.71gb@2"),
            "3g.71gb@2: 3g.71gb cannot start at memory slice 2 (legal starts: 0,4)");
  EXPECT_EQ(err("1g.18gb+me@0,1g.18gb+me@1"), "1g.18gb+me@1: at most 1 1g.18gb+me per GPU");
  EXPECT_NE(err("3g.71gb").find("layout item '3g.71gb': want PROFILE@START"), std::string::npos);
  EXPECT_NE(err("3g.71gb@x").find("'3g.71gb@x'"), std::string::npos);
  EXPECT_NE(err("3g.71gb@8").find("'3g.71gb@8'"), std::string::npos);
  EXPECT_NE(err("1g.18gb@0,,").find("layout item ''"), std::string::npos);
  EXPECT_EQ(err("4g.71gb@0,3g.71gb@4,1g.18gb@4"),
            "1g.18gb@4 overlaps 3g.71gb@4 on memory slices 4");
  Layout l = *ParseLayout(H200(), "1g.18gb@0,1g.18gb@1,1g.18gb@2,1g.18gb@3,1g.18gb@4,1g.18gb@5");
  EXPECT_EQ(Add(&l, {H200().IndexOf("1g.35gb"), 6}).ok(), true);  // 7th instance, 7th SM slice
  EXPECT_EQ(CheckAdd(l, {0, 6}).refusal, Refusal::kOverlap);
  EXPECT_EQ(Remove(&l, 7).code(), StatusCode::kNotFound);
}

TEST(MigLayout, RulesDifferAsDocumented) {
  const Layout empty{&H200(), {}};
  const int one = H200().IndexOf("1g.18gb"), two = H200().IndexOf("2g.35gb");
  EXPECT_EQ(ChooseStart(empty, one, PlacementRule::kFirstFit), 0);
  EXPECT_EQ(ChooseStart(empty, one, PlacementRule::kHami), 6);
  EXPECT_EQ(ChooseStart(empty, two, PlacementRule::kHami), 0);
  // Ours keeps a 4-slice hole and all three 2g placements: 1g goes to slice 6 or 7's side.
  const std::optional<int> ours = ChooseStart(empty, one, PlacementRule::kFragmentationAware);
  ASSERT_TRUE(ours.has_value());
  EXPECT_GE(*ours, 4);
}

TEST(MigLayout, PlanFindsACombinationGreedyMisses) {
  // 1g.35gb then 3g.71gb: placed one by one in the worst order they could collide; the planner
  // searches the combinations and fits both plus a 2g.35gb.
  const ModelTable& t = H200();
  const std::vector<int> want = {t.IndexOf("1g.35gb"), t.IndexOf("2g.35gb"), t.IndexOf("3g.71gb")};
  const Plan plan = PlanAdds(Layout{&t, {}}, want);
  ASSERT_TRUE(plan.all_fit);
  EXPECT_TRUE(Validate(plan.result).ok());
  EXPECT_EQ(plan.result.instances.size(), 3u);
  // A request that cannot fit is refused with what blocks it.
  const Layout full = *ParseLayout(t, "3g.71gb@0,3g.71gb@4");
  const std::vector<int> more = {t.IndexOf("2g.35gb")};
  const Plan refused = PlanAdds(full, more);
  EXPECT_FALSE(refused.all_fit);
  ASSERT_EQ(refused.items.size(), 1u);
  EXPECT_FALSE(refused.items[0].start.has_value());
  EXPECT_EQ(refused.items[0].why.refusal, Refusal::kOverlap);
}

// The A30's two media-extension profiles share its one JPEG and OFA engine.
TEST(MigLayout, EnginesOfTheWholeGpuBoundALayout) {
  const ModelTable& a30 = *ModelByKey("A30");
  Layout l = *ParseLayout(a30, "1g.6gb+me@0");
  const Instance two_me{a30.IndexOf("2g.12gb+me"), 2};
  EXPECT_EQ(CheckAdd(l, two_me).refusal, Refusal::kEngines);
  EXPECT_NE(Add(&l, two_me).message().find("1 JPEG and 1 OFA engine(s) in all"), std::string::npos);
  EXPECT_TRUE(CheckAdd(l, {a30.IndexOf("2g.12gb"), 2}).ok());
  EXPECT_EQ(ParseLayout(a30, "1g.6gb@4").error().message(),
            "1g.6gb@4: 1g.6gb cannot start at memory slice 4 (legal starts: 0-3)");
}

// One search places both a static layout (`vgpu mig apply`, `vgpu node --gpu-modes`) and
// `vgpu mig plan`: for every multiset of profiles that some valid layout of a table holds, the
// planner finds a layout of it, and one whose score (room kept for what comes next) is the best
// of all the layouts of that multiset.
TEST(MigLayout, PlanOfEveryStaticLayoutIsTheBestOfItsMultiset) {
  for (const ModelTable& table : AllModels()) {
    SCOPED_TRACE(std::string(table.key));
    const RequestMix uniform(table);
    std::map<std::vector<int>, CapacityScore> best;
    for (const Layout& l : Reachable(table)) {
      if (l.instances.empty()) continue;
      std::vector<int> multiset;
      for (const Instance& i : l.instances) multiset.push_back(i.profile);
      std::sort(multiset.begin(), multiset.end());
      const CapacityScore s = ScoreLayout(l, uniform);
      auto [it, added] = best.try_emplace(multiset, s);
      if (!added && s > it->second) it->second = s;
    }
    EXPECT_GT(best.size(), table.memory_slices == 8 ? 100u : 10u);
    for (const auto& [multiset, score] : best) {
      const Plan plan = PlanAdds(Layout{&table, {}}, multiset);
      SCOPED_TRACE(FormatLayout(plan.result));
      ASSERT_TRUE(plan.all_fit);
      ASSERT_TRUE(Validate(plan.result).ok());
      ASSERT_EQ(plan.result.instances.size(), multiset.size());
      EXPECT_EQ(ScoreLayout(plan.result, uniform), score);
    }
  }
  // The case that stranded slices: 3g.71gb and two 1g.18gb on an H200 keep room for a 2g.35gb.
  const ModelTable& t = H200();
  const std::vector<int> want = {t.IndexOf("3g.71gb"), t.IndexOf("1g.18gb"), t.IndexOf("1g.18gb")};
  const Plan plan = PlanAdds(Layout{&t, {}}, want);
  EXPECT_EQ(FormatLayout(plan.result), "1g.18gb@0,1g.18gb@1,3g.71gb@4");
  EXPECT_FALSE(FeasibleStarts(plan.result, t.IndexOf("2g.35gb")).empty());
}

TEST(MigLayout, RequestMixLearnsAndDecays) {
  RequestMix mix(H200(), 10);
  for (int i = 0; i < 100; ++i) mix.Observe(0);
  EXPECT_GT(mix.Weight(0), 0.9);
  for (int i = 0; i < 100; ++i) mix.Observe(6);
  EXPECT_GT(mix.Weight(6), 0.9);
  double sum = 0;
  for (size_t q = 0; q < mix.size(); ++q) sum += mix.Weight(static_cast<int>(q));
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

}  // namespace
}  // namespace vgpu::mig
