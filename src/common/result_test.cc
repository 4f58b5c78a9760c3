#include "common/result.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>

namespace vgpu {
namespace {

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd: " + std::to_string(x));
  return x / 2;
}

Status Chain(int x, int* out) {
  Result<int> r = Half(x);
  VGPU_RETURN_IF_ERROR(r.status());
  *out = *r;
  return Status::Ok();
}

TEST(Result, ValueAndError) {
  Result<int> ok = Half(4);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(*ok, 2);
  Result<int> bad = Half(3);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "odd: 3");
  EXPECT_EQ(bad.value_or(-1), -1);
}

TEST(Result, OkStatusBecomesInternalError) {
  Result<int> r = Status::Ok();
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInternal);
}

TEST(Result, MoveOnlyValues) {
  Result<std::unique_ptr<int>> r = std::make_unique<int>(7);
  ASSERT_TRUE(r.has_value());
  std::unique_ptr<int> p = std::move(r).value();
  EXPECT_EQ(*p, 7);
}

TEST(Status, ReturnIfErrorPropagates) {
  int out = 0;
  EXPECT_TRUE(Chain(8, &out).ok());
  EXPECT_EQ(out, 4);
  Status s = Chain(5, &out);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.ToString(), "invalid argument: odd: 5");
  EXPECT_EQ(s.WithContext("--x").message(), "--x: odd: 5");
}

}  // namespace
}  // namespace vgpu
