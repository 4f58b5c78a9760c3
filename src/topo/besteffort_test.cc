// go-gpuallocator's own besteffort tests (gpuallocator/besteffort_test.go), reproduced on the
// ported policy: set and partition iteration, the policy cases on the DGX-1 Volta fixture, and
// the allocator sequences on the 4 x RTX 8000, DGX-1 Pascal and DGX-1 Volta fixtures.
#include "topo/besteffort.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "topo/presets.h"

namespace vgpu::topo {
namespace {

std::vector<int> Sorted(std::vector<int> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST(BestEffort, IterateSets) {
  std::vector<int> d = {0, 1, 2, 3};
  auto collect = [&](int size) {
    std::vector<std::vector<int>> out;
    IterateSets(d, size, [&](const std::vector<int>& s) { out.push_back(s); });
    return out;
  };
  EXPECT_TRUE(collect(0).empty());
  EXPECT_EQ(collect(1), (std::vector<std::vector<int>>{{0}, {1}, {2}, {3}}));
  EXPECT_EQ(collect(2),
            (std::vector<std::vector<int>>{{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}}));
  EXPECT_EQ(collect(3),
            (std::vector<std::vector<int>>{{0, 1, 2}, {0, 1, 3}, {0, 2, 3}, {1, 2, 3}}));
  EXPECT_EQ(collect(4), (std::vector<std::vector<int>>{{0, 1, 2, 3}}));
  EXPECT_TRUE(collect(5).empty());
}

TEST(BestEffort, IteratePartitions) {
  std::vector<int> d = {0, 1, 2, 3};
  using P = std::vector<std::vector<int>>;
  auto collect = [&](int size) {
    std::vector<P> out;
    IteratePartitions(d, size, [&](const P& p) { out.push_back(p); });
    return out;
  };
  EXPECT_TRUE(collect(0).empty());
  EXPECT_EQ(collect(1), (std::vector<P>{{{0}}, {{1}}, {{2}}, {{3}}}));
  EXPECT_EQ(collect(2), (std::vector<P>{{{0, 1}, {2, 3}}, {{0, 2}, {1, 3}}, {{0, 3}, {1, 2}}}));
  EXPECT_EQ(collect(3), (std::vector<P>{{{0, 1, 2}, {3, -1, -1}},
                                        {{0, 1, 3}, {2, -1, -1}},
                                        {{0, 2, 3}, {1, -1, -1}},
                                        {{0, -1, -1}, {1, 2, 3}}}));
  EXPECT_EQ(collect(4), (std::vector<P>{{{0, 1, 2, 3}}}));
  EXPECT_TRUE(collect(5).empty());
  // The partition counts of the research notes: 8 GPUs in pairs 105, in fours 35.
  int count = 0;
  IteratePartitions({0, 1, 2, 3, 4, 5, 6, 7}, 2, [&](const P&) { ++count; });
  EXPECT_EQ(count, 105);
  count = 0;
  IteratePartitions({0, 1, 2, 3, 4, 5, 6, 7}, 4, [&](const P&) { ++count; });
  EXPECT_EQ(count, 35);
}

TEST(BestEffort, PolicyCasesOnDgx1Volta) {
  Topology t = *Preset("dgx1-volta");
  struct Case {
    const char* description;
    std::vector<int> available, required;
    int size;
    std::vector<int> result;
  } cases[] = {
      {"Single NVLINK, prefer same switch", {0, 2, 4, 5}, {}, 2, {4, 5}},
      {"Single NVLINK, prefer same socket", {0, 4, 5, 6}, {}, 2, {5, 6}},
      {"Prefer dual NVLINK same socket", {0, 3, 1}, {}, 2, {0, 3}},
      {"Prefer dual NVLINK cross socket", {0, 1, 4}, {}, 2, {0, 4}},
      {"Must include with allocation size 1", {0, 1, 2, 3, 4, 5, 6, 7}, {4}, 1, {4}},
      {"Must include with allocation size 2", {0, 1, 2, 3, 4, 5, 6, 7}, {4}, 2, {4, 7}},
      {"Must include with allocation size 4", {0, 1, 2, 3, 4, 5, 6, 7}, {4}, 4, {4, 5, 6, 7}},
      {"Must include with unavailable device", {1, 2, 3, 4, 5, 6, 7}, {0, 1, 2, 3}, 4, {}},
      {"Must include with full set specified",
       {0, 1, 2, 3, 4, 5, 6, 7},
       {0, 2, 4, 6},
       4,
       {0, 2, 4, 6}},
      {"Must include with too many devices specified",
       {0, 1, 2, 3, 4, 5, 6, 7},
       {1, 2, 3, 4, 5, 6},
       4,
       {}},
      {"Required too many devices than available", {1, 2, 3, 4, 5}, {1, 2, 3, 4, 5, 6}, 1, {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Sorted(BestEffortAllocate(t, c.available, c.required, c.size)), c.result)
        << c.description;
  }
}

// go-gpuallocator's Allocator: each allocation removes its GPUs from the available ones.
void RunSequence(const std::string& preset,
                 const std::vector<std::pair<int, std::vector<int>>>& steps) {
  Topology t = *Preset(preset);
  std::vector<int> available;
  for (int g = 0; g < t.size(); ++g) available.push_back(g);
  for (const auto& [size, expected] : steps) {
    std::vector<int> got = Sorted(BestEffortAllocate(t, available, {}, size));
    EXPECT_EQ(got, expected) << preset << " size " << size;
    for (int g : got) available.erase(std::find(available.begin(), available.end(), g));
  }
}

TEST(BestEffort, AllocatorSequences) {
  RunSequence("rtx8000x4", {{1, {0}}, {1, {1}}, {1, {2}}, {1, {3}}, {1, {}}});
  RunSequence("rtx8000x4", {{2, {0, 3}}, {2, {1, 2}}, {1, {}}});
  RunSequence("rtx8000x4", {{4, {0, 1, 2, 3}}, {1, {}}});
  for (const char* p : {"dgx1-pascal", "dgx1-volta"}) {
    RunSequence(
        p,
        {{1, {0}}, {1, {1}}, {1, {2}}, {1, {3}}, {1, {4}}, {1, {5}}, {1, {6}}, {1, {7}}, {1, {}}});
    RunSequence(p, {{4, {0, 1, 2, 3}}, {4, {4, 5, 6, 7}}, {1, {}}});
    RunSequence(p, {{8, {0, 1, 2, 3, 4, 5, 6, 7}}, {1, {}}});
  }
  RunSequence("dgx1-pascal", {{2, {0, 2}}, {2, {1, 3}}, {2, {4, 6}}, {2, {5, 7}}, {1, {}}});
  RunSequence("dgx1-volta", {{2, {0, 3}}, {2, {1, 2}}, {2, {4, 7}}, {2, {5, 6}}, {1, {}}});
}

TEST(BestEffort, RetainsBestPartition) {
  Topology t(14);
  for (int a = 0; a < 14; ++a) {
    for (int b = a + 1; b < 14; ++b) t.SetLink(a, b, PairLink{});
  }
  for (int i = 0; i < 12; i += 2) t.SetLink(i, i + 1, PairLink{PcieLevel::kSystem, 2});
  t.SetLink(12, 13, PairLink{PcieLevel::kSystem, 4});
  std::vector<int> all;
  for (int g = 0; g < 14; ++g) all.push_back(g);
  EXPECT_EQ(Sorted(BestEffortAllocate(t, all, {}, 2)), (std::vector<int>{12, 13}));
}

// besteffort does not see NVLink through NVSwitch; HAMi does.
TEST(BestEffort, BlindToNvSwitch) {
  Topology t = *Preset("hgx-h200");
  EXPECT_EQ(BestEffortPairScore(t.Link(0, 1)), 20);  // NODE only
  EXPECT_EQ(BestEffortPairScore(t.Link(0, 4)), 10);  // SYS only
  EXPECT_EQ(HamiPairScore(t.Link(0, 4)), 1810);
  EXPECT_EQ(BestEffortPairScore(Preset("dgx1-volta")->Link(0, 3)), 230);  // NV2 + PHB
}

TEST(Hami, GreedySubsetAndWorstCardForOne) {
  Topology t = *Preset("dgx1-volta");
  // Size 1: the card with the lowest score sum to the other available cards.
  std::vector<int> got = HamiAllocate(t, {0, 3, 5}, 1);
  EXPECT_EQ(got, (std::vector<int>{5}));
  // Greedy: the best pair now (NV2 + PIX), whatever it leaves behind.
  EXPECT_EQ(Sorted(HamiAllocate(t, {0, 1, 2, 3, 4, 5, 6, 7}, 2)), (std::vector<int>{2, 3}));
  EXPECT_EQ(LowestIndexAllocate({5, 2, 7}, 2), (std::vector<int>{2, 5}));
  EXPECT_TRUE(HamiAllocate(t, {0}, 2).empty());
}

}  // namespace
}  // namespace vgpu::topo
