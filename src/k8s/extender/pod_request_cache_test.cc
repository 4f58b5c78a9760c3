// PodRequestCache: by exact text only; PodRequestKeyOf: the same key for replicas, another for any
// change to what the request is read from, and no key where a full parser must decide.
#include "k8s/extender/pod_request_cache.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

TEST(PodRequestCache, ReturnsOnlyForIdenticalText) {
  PodRequestCache cache;
  const std::string text = R"({"metadata":{"uid":"a"}})";
  EXPECT_EQ(cache.Find(text), nullptr);
  auto parsed = std::make_shared<ParsedPod>();
  parsed->uid = "a";
  parsed->request = PodGpuRequest{};
  cache.Insert(text, parsed);
  auto hit = cache.Find(text);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->uid, "a");
  EXPECT_EQ(cache.Find(R"({"metadata":{"uid":"b"}})"), nullptr);
  EXPECT_EQ(cache.Find(text + " "), nullptr);
  // Too large to keep.
  const std::string huge(PodRequestCache::kMaxTextBytes + 1, ' ');
  cache.Insert(huge, parsed);
  EXPECT_EQ(cache.Find(huge), nullptr);
}

std::string Pod(const std::string& uid, const std::string& name, const std::string& annotations,
                const std::string& spec) {
  return R"({"metadata":{"name":")" + name + R"(","namespace":"ml","uid":")" + uid +
         R"(","annotations":)" + annotations + R"(,"resourceVersion":"7"},"spec":)" + spec +
         R"(,"status":{"phase":"Pending"}})";
}

TEST(PodRequestKey, ReplicasShareAKeyAndKeepTheirIdentity) {
  const std::string spec =
      R"({"containers":[{"name":"m","resources":{"limits":{"nvidia.com/gpu":"1"}}}]})";
  const std::string annotations = R"({"nvidia.com/use-gputype":"A100"})";
  const std::string first = Pod("u-1", "train-0", annotations, spec);
  const std::string second = Pod("u-2", "train-1", annotations, spec);
  auto a = PodRequestKeyOf(first);  // the identity is views into the text: kept alive here
  auto b = PodRequestKeyOf(second);
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->text, b->text);
  EXPECT_EQ(a->uid, "u-1");
  EXPECT_EQ(b->uid, "u-2");
  EXPECT_EQ(b->name, "train-1");
  EXPECT_EQ(b->ns, "ml");
  // Another spec or other annotations: another key.
  auto c = PodRequestKeyOf(Pod("u-3", "x", annotations, R"({"containers":[]})"));
  auto d = PodRequestKeyOf(Pod("u-4", "y", R"({"nvidia.com/use-gputype":"H100"})", spec));
  ASSERT_TRUE(c.has_value() && d.has_value());
  EXPECT_NE(c->text, a->text);
  EXPECT_NE(d->text, a->text);
  // The boundary between the two parts is in the key: moving text across it changes the key.
  auto e = PodRequestKeyOf(R"({"metadata":{"annotations":{}},"spec":{"x":1}})");
  auto f = PodRequestKeyOf(R"({"metadata":{"annotations":{"x":1}},"spec":{}})");
  ASSERT_TRUE(e.has_value() && f.has_value());
  EXPECT_NE(e->text, f->text);
  // No metadata at all: an empty identity.
  auto g = PodRequestKeyOf(R"({"spec":{}})");
  ASSERT_TRUE(g.has_value());
  EXPECT_EQ(g->uid, "");
}

TEST(PodRequestKey, RefusesWhereTheFullParserMustDecide) {
  for (const char* text : {
           R"([1])",                                           // not an object
           R"({"spec":{},"spec":{"containers":[]}})",          // a repeated member
           R"({"metadata":{"uid":"a","uid":"b"},"spec":{}})",  // a repeated identity
           R"({"metadata":{"annotations":{},"annotations":{"x":"y"}}})",
           R"({"metadata":{"uid":"a\u0062"},"spec":{}})",  // an escaped UID
           R"({"metadata":{"name":7},"spec":{}})",         // not a string
           R"({"metadata":[],"spec":{}})",                 // metadata not an object
           R"({"metadata":{"uid":"a"},"spec":{})",         // truncated
       }) {
    EXPECT_FALSE(PodRequestKeyOf(text).has_value()) << text;
  }
}

}  // namespace
}  // namespace vgpu::k8s
