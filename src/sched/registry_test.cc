#include "sched/registry.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace vgpu::sched {
namespace {

TEST(Registry, BuiltinNamesAndDefaultAlias) {
  const PolicyRegistry& r = BuiltinPolicies();
  for (const char* name : {"random", "dotprod", "clustering", "packing", "bestfit", "fgd",
                           "fgd-online", "hami-binpack", "hami-spread", "cafgd", "default"}) {
    EXPECT_TRUE(r.Contains(name)) << name;
  }
  EXPECT_EQ(*r.Resolve("default"), "cafgd");
  EXPECT_EQ(*r.Resolve("bestfit"), "bestfit");
  auto made = r.Create("default", PolicyArgs{});
  ASSERT_TRUE(made.has_value());
  EXPECT_EQ((*made)->name, "cafgd");
}

TEST(Registry, ErrorsNameThePolicyAndArgument) {
  const PolicyRegistry& r = BuiltinPolicies();
  auto unknown = r.Create("tetris", PolicyArgs{});
  ASSERT_FALSE(unknown.has_value());
  EXPECT_EQ(unknown.error().code(), StatusCode::kNotFound);
  EXPECT_NE(unknown.error().message().find("unknown policy 'tetris'"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("bestfit"), std::string::npos);

  auto fgd = r.Create("fgd", PolicyArgs{});
  ASSERT_FALSE(fgd.has_value());
  EXPECT_NE(fgd.error().message().find("target workload"), std::string::npos);

  PolicyArgs bad;
  bad.params["colour"] = "red";
  auto b = r.Create("bestfit", bad);
  ASSERT_FALSE(b.has_value());
  EXPECT_NE(b.error().message().find("'colour'"), std::string::npos);

  PolicyArgs split;
  split.params["split"] = "0";
  EXPECT_FALSE(r.Create("hami-spread", split).has_value());
  split.params["split"] = "4";
  EXPECT_EQ((*r.Create("hami-spread", split))->fit.max_pods_per_gpu, 4);
  PolicyArgs cov;
  cov.params["coverage"] = "abc";
  EXPECT_FALSE(r.Create("fgd-online", cov).has_value());
}

TEST(Registry, RegisterRejectsDuplicatesAndDanglingAliases) {
  PolicyRegistry r;
  ASSERT_TRUE(RegisterBuiltinPolicies(&r).ok());
  EXPECT_EQ(r.Register("fgd", "again",
                       [](const PolicyArgs&) -> Result<std::unique_ptr<Policy>> {
                         return Status::Internal("unused");
                       })
                .code(),
            StatusCode::kAlreadyExists);
  EXPECT_EQ(r.RegisterAlias("best", "nothing").code(), StatusCode::kNotFound);
  EXPECT_EQ(r.Names().back(), "default");
}

}  // namespace
}  // namespace vgpu::sched
