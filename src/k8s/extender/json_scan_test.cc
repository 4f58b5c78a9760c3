#include "k8s/api/json_scan.h"

#include <gtest/gtest.h>

#include "k8s/extender/extender_protocol.h"
#include "k8s/extender/name_index.h"

namespace vgpu::k8s {
namespace {

TEST(JsonScan, MembersSkipNestedValuesAndEscapes) {
  auto m = ScanObjectMembers(
      R"( {"Pod": {"a": "}\"]", "b": [1, {"c": "]"}]}, "Nodes" : null, "NodeNames":["x","y\"z"], "n": -1.5e3 } )");
  ASSERT_TRUE(m.has_value());
  ASSERT_EQ(m->size(), 4u);
  EXPECT_EQ((*m)[0].first, "Pod");
  EXPECT_EQ((*m)[0].second, R"({"a": "}\"]", "b": [1, {"c": "]"}]})");
  EXPECT_EQ((*m)[1].second, "null");
  EXPECT_EQ((*m)[3].second, "-1.5e3");
  std::vector<std::string> names;
  ASSERT_TRUE(ScanStringArray((*m)[2].second, &names));
  EXPECT_EQ(names, (std::vector<std::string>{"x", "y\"z"}));
}

TEST(JsonScan, RefusesMalformedText) {
  for (const char* bad : {"", "[]", "{", "{\"a\"}", "{\"a\":1,}", "{\"a\":\"x}", "{\"a\":1} x",
                          "{\"a\":[1,2}", "{\"a\":1 \"b\":2}"}) {
    EXPECT_FALSE(ScanObjectMembers(bad).has_value()) << bad;
  }
  std::vector<std::string> out;
  for (const char* bad : {"", "[1]", "[\"a\",]", "[\"a\"", "{}", "[\"a\"] x"}) {
    EXPECT_FALSE(ScanStringArray(bad, &out)) << bad;
  }
  EXPECT_TRUE(ScanStringArray(" [ ] ", &out));
}

TEST(JsonScan, FastAndFullParsersAgree) {
  const std::string pod = R"({"metadata":{"name":"p","uid":"u"},"spec":{"containers":[]}})";
  const std::string fast = R"({"Pod":)" + pod + R"(,"Nodes":null,"NodeNames":["a","b\u0063"]})";
  const std::string slow = R"({"nodenames":["a","bc"],"pod":)" + pod + "}";  // full parser path
  auto a = ParseExtenderArgs(fast);
  auto b = ParseExtenderArgs(slow);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->pod, b->pod);
  EXPECT_EQ(a->node_names, b->node_names);
  EXPECT_EQ(a->node_names[1], "bc");
  // A broken body still gets the full parser's message.
  auto bad = ParseExtenderArgs(R"({"Pod":{"x":},"NodeNames":[]})");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("malformed JSON at byte"), std::string::npos);
}

TEST(JsonScan, NestingDepthIgnoresBracketsInStrings) {
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"a":[[1]]})", 3));
  EXPECT_TRUE(JsonNestsDeeperThan(R"({"a":[[[1]]]})", 3));
  EXPECT_FALSE(JsonNestsDeeperThan(R"({"a":"[[[[\"[[["})", 1));
  EXPECT_FALSE(JsonNestsDeeperThan(R"([[]],[[]],[[]])", 2));
}

TEST(JsonScan, DeeplyNestedBodiesAreRefusedNotCrashedOn) {
  const size_t n = 1'000'000;
  const std::string deep = std::string(n, '[') + std::string(n, ']');
  const std::string pod_in_quantity =
      R"({"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","resources":{"limits":)"
      R"({"nvidia.com/gpu":)" +
      deep + "}}}]}}";
  for (const std::string& body :
       {R"({"Pod":)" + pod_in_quantity + R"(,"NodeNames":["a"]})",
        R"({"Pod":)" + pod_in_quantity + R"(,"Nodes":null,"NodeNames":["a"]})", deep}) {
    auto args = ParseExtenderArgs(body);
    ASSERT_FALSE(args.has_value());
    EXPECT_NE(args.error().message().find("deeper than 256 levels"), std::string::npos);
  }
  auto bind = ParseBindingArgs(deep);
  ASSERT_FALSE(bind.has_value());
  EXPECT_NE(bind.error().message().find("deeper than 256 levels"), std::string::npos);
}

TEST(NameIndex, FindsEveryNameAndNothingElse) {
  std::vector<std::string> names;
  for (int i = 0; i < 3000; ++i) names.push_back("node-" + std::to_string(i));
  NameIndex idx;
  idx.Build(&names);
  for (int i = 0; i < 3000; ++i) EXPECT_EQ(idx.Find(names[static_cast<size_t>(i)]), i);
  EXPECT_FALSE(idx.Find("node-3000").has_value());
  EXPECT_FALSE(idx.Find("").has_value());
  NameIndex empty;
  EXPECT_FALSE(empty.Find("x").has_value());
}

}  // namespace
}  // namespace vgpu::k8s
