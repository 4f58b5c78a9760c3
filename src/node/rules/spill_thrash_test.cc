// Thrash control: sustained host-link traffic on a GPU signals the slices that spill on it,
// after `rounds` consecutive rounds, never a slice that does not spill (a high-priority one), and
// a quiet round starts the count again.
#include "node/rules/spill_thrash.h"

#include <gtest/gtest.h>

namespace vgpu::node {
namespace {

std::vector<SpillSliceState> Slices() {
  return {{"high", false, 0, {"GPU-a"}},
          {"low", true, 3ULL << 30, {"GPU-a"}},
          {"other-gpu", true, 1ULL << 30, {"GPU-b"}}};
}

TEST(SpillThrash, SustainedTrafficSignalsOnlyTheSpillingSlicesOfThatGpu) {
  SpillThrash t(ThrashRules{2e9, 3});
  std::map<std::string, double> rx = {{"GPU-a", 10e9}, {"GPU-b", 0.5e9}};
  EXPECT_TRUE(t.Round(rx, Slices()).empty());
  EXPECT_TRUE(t.Round(rx, Slices()).empty());
  std::vector<ThrashSignal> s = t.Round(rx, Slices());
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].slice, "low");
  EXPECT_NE(s[0].what.find("10.00 GB/s"), std::string::npos) << s[0].what;
  EXPECT_NE(s[0].what.find("3.00 GiB"), std::string::npos) << s[0].what;
  EXPECT_EQ(t.Round(rx, Slices()).size(), 1u) << "one signal per round while it lasts";
}

TEST(SpillThrash, AQuietRoundStartsAgainAndNoSpillerMeansNoSignal) {
  SpillThrash t(ThrashRules{2e9, 2});
  std::map<std::string, double> busy = {{"GPU-a", 5e9}}, quiet = {{"GPU-a", 1e9}};
  EXPECT_TRUE(t.Round(busy, Slices()).empty());
  EXPECT_TRUE(t.Round(quiet, Slices()).empty());
  EXPECT_TRUE(t.Round(busy, Slices()).empty());
  EXPECT_EQ(t.Round(busy, Slices()).size(), 1u);
  std::vector<SpillSliceState> none = {{"high", false, 0, {"GPU-a"}}};
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(t.Round(busy, none).empty());
  EXPECT_TRUE(t.Round({}, Slices()).empty()) << "an unknown rate is no thrash";
}

TEST(SpillThrash, RulesParseAndBadFieldsAreNamed) {
  auto r = ParseThrashRules("link=5GB/s,rounds=4");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->link_bytes_per_s, 5e9);
  EXPECT_EQ(r->rounds, 4);
  EXPECT_NE(ParseThrashRules("link=-1").error().message().find("link"), std::string::npos);
  EXPECT_NE(ParseThrashRules("rounds=0").error().message().find("rounds"), std::string::npos);
  EXPECT_NE(ParseThrashRules("speed=1").error().message().find("speed"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::node
