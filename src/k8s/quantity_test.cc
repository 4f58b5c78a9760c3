#include "k8s/quantity.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

TEST(Quantity, WholeNumbersInEveryNotation) {
  EXPECT_EQ(*ParseWholeQuantity("4096"), 4096);
  EXPECT_EQ(*ParseWholeQuantity("+3"), 3);
  EXPECT_EQ(*ParseWholeQuantity("-2"), -2);
  EXPECT_EQ(*ParseWholeQuantity("2Ki"), 2048);
  EXPECT_EQ(*ParseWholeQuantity("1Gi"), int64_t{1} << 30);
  EXPECT_EQ(*ParseWholeQuantity("1.5k"), 1500);
  EXPECT_EQ(*ParseWholeQuantity("2e3"), 2000);
  EXPECT_EQ(*ParseWholeQuantity("3000m"), 3);
  EXPECT_EQ(*ParseWholeQuantity("0"), 0);
  EXPECT_EQ(*WholeQuantityOf(Json(12)), 12);
  EXPECT_EQ(*WholeQuantityOf(Json(12.0)), 12);
}

TEST(Quantity, RejectsFractionsGarbageAndOverflow) {
  for (const char* bad : {"500m", "1.5", "", "abc", "1Zi", "1e", "10Ei", "99999999999999999999"}) {
    EXPECT_FALSE(ParseWholeQuantity(bad).has_value()) << bad;
  }
  EXPECT_NE(ParseWholeQuantity("500m").error().message().find("'500m' is not a whole number"),
            std::string::npos);
  EXPECT_FALSE(WholeQuantityOf(Json(1.5)).has_value());
  EXPECT_FALSE(WholeQuantityOf(Json::array()).has_value());
}

}  // namespace
}  // namespace vgpu::k8s
