#include "k8s/api/quantity.h"

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

TEST(Quantity, CeilingsAsKubernetesRoundsThem) {
  EXPECT_EQ(*ParseCeilQuantity("500m", 3), 500);  // CPU in milli
  EXPECT_EQ(*ParseCeilQuantity("0.5", 3), 500);
  EXPECT_EQ(*ParseCeilQuantity("2", 3), 2000);
  EXPECT_EQ(*ParseCeilQuantity("1.0001", 3), 1001);  // rounded up, as MilliValue()
  EXPECT_EQ(*ParseCeilQuantity("250u", 3), 1);
  EXPECT_EQ(*ParseCeilQuantity("1Gi", 0), int64_t{1} << 30);
  EXPECT_EQ(*ParseCeilQuantity("1m", 0), 1);  // a thousandth of a byte is one byte
  EXPECT_EQ(*ParseCeilQuantity("1.5Ki", 0), 1536);
  EXPECT_EQ(*CeilQuantityOf(Json(0.25), 3), 250);
  EXPECT_EQ(*CeilQuantityOf(Json(4), 3), 4000);
  EXPECT_FALSE(ParseCeilQuantity("-1", 3).has_value());
  EXPECT_FALSE(ParseCeilQuantity("9Ei", 3).has_value());
  EXPECT_FALSE(CeilQuantityOf(Json::object(), 0).has_value());
}

}  // namespace
}  // namespace vgpu::k8s
