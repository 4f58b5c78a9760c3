#include "sim/replay_options.h"

#include <gtest/gtest.h>

namespace vgpu::sim {
namespace {

TEST(ReplayOptions, TimeSpans) {
  EXPECT_EQ(*ParseTimeSpan("30d"), 30LL * 86400 * 1000000);
  EXPECT_EQ(*ParseTimeSpan("12h"), 12LL * 3600 * 1000000);
  EXPECT_EQ(*ParseTimeSpan("90m"), 90LL * 60 * 1000000);
  EXPECT_EQ(*ParseTimeSpan("45s"), 45LL * 1000000);
  EXPECT_EQ(*ParseTimeSpan("3600"), 3600LL * 1000000);
  EXPECT_EQ(*ParseTimeSpan("1.5d"), 129600LL * 1000000);
  EXPECT_EQ(*ParseTimeSpan("2w"), 14LL * 86400 * 1000000);
  for (const char* bad :
       {"", "d", "-1d", "5x", "1..5h", "0", "0.0000001s", "1e3", ".5h", "200000w"}) {
    auto r = ParseTimeSpan(bad);
    EXPECT_FALSE(r.has_value()) << bad;
    if (!r) {
      EXPECT_NE(r.error().message().find("time span"), std::string::npos);
    }
  }
}

TEST(ReplayOptions, FormatsSpans) {
  EXPECT_EQ(FormatTimeSpan(12), "12 s");
  EXPECT_EQ(FormatTimeSpan(90), "1.5 m");
  EXPECT_EQ(FormatTimeSpan(5400), "1.5 h");
  EXPECT_EQ(FormatTimeSpan(3 * 86400), "3.0 d");
}

TEST(ReplayOptions, NumberLists) {
  EXPECT_EQ(*ParseNumberList("50,100, 200,100", 1, 1000), (std::vector<double>{50, 100, 200}));
  EXPECT_EQ(*ParseNumberList("0.05", 0.001, 1), (std::vector<double>{0.05}));
  for (const char* bad : {"", "1,,2", "abc", "-1", "2000", "1e2", "nan"}) {
    EXPECT_FALSE(ParseNumberList(bad, 1, 1000).has_value()) << bad;
  }
  auto r = ParseNumberList("5,2000", 1, 1000);
  EXPECT_NE(r.error().message().find("2000 is outside 1..1000"), std::string::npos)
      << r.error().message();
}

}  // namespace
}  // namespace vgpu::sim
