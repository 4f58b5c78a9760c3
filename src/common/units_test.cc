#include "common/units.h"

#include <gtest/gtest.h>

#include <string>

namespace vgpu {
namespace {

TEST(ParseByteSize, AcceptsDocumentedForms) {
  EXPECT_EQ(*ParseByteSize("4096"), 4096u);
  EXPECT_EQ(*ParseByteSize("0"), 0u);
  EXPECT_EQ(*ParseByteSize("4GiB"), 4ULL << 30);
  EXPECT_EQ(*ParseByteSize("4096m"), 4096ULL << 20);
  EXPECT_EQ(*ParseByteSize("4096M"), 4096ULL << 20);
  EXPECT_EQ(*ParseByteSize("512MiB"), 512ULL << 20);
  EXPECT_EQ(*ParseByteSize("512Mi"), 512ULL << 20);
  EXPECT_EQ(*ParseByteSize("4g"), 4ULL << 30);
  EXPECT_EQ(*ParseByteSize("2k"), 2048u);
  EXPECT_EQ(*ParseByteSize("1t"), 1ULL << 40);
  EXPECT_EQ(*ParseByteSize("10B"), 10u);
  EXPECT_EQ(*ParseByteSize("4GB"), 4'000'000'000ULL);
  EXPECT_EQ(*ParseByteSize("3kb"), 3000u);
  EXPECT_EQ(*ParseByteSize("1.5GiB"), 3ULL << 29);
  EXPECT_EQ(*ParseByteSize("0.5k"), 512u);
}

// The rule documented in units.h, --help and docs/intercept.md: a single letter and the "i"
// forms are binary (HAMi-core's CUDA_DEVICE_MEMORY_LIMIT=8g, Kubernetes' Gi); a "B" without "i"
// is decimal (SI). Kubernetes' own "8G" (10^9) is not followed: HAMi-core's 8g must mean 8 GiB.
TEST(ParseByteSize, SingleLettersAndIFormsAreBinaryBFormsDecimal) {
  for (const char* binary : {"8G", "8g", "8Gi", "8gi", "8GiB", "8gib"}) {
    EXPECT_EQ(*ParseByteSize(binary), 8ULL << 30) << binary;
  }
  for (const char* decimal : {"8GB", "8gb", "8Gb"}) {
    EXPECT_EQ(*ParseByteSize(decimal), 8'000'000'000ULL) << decimal;
  }
  EXPECT_EQ(*ParseByteSize("1M"), 1ULL << 20);
  EXPECT_EQ(*ParseByteSize("1MB"), 1'000'000u);
  EXPECT_EQ(*ParseByteSize("2T"), 2ULL << 40);
  EXPECT_EQ(*ParseByteSize("2TB"), 2'000'000'000'000ULL);
}

TEST(ParseByteSize, LongValuesAreCutInMessages) {
  const std::string value(100000, '9');
  auto r = ParseByteSize(value + "XB", "--memory");
  ASSERT_FALSE(r.has_value());
  EXPECT_LT(r.error().message().size(), 300u) << r.error().message();
  EXPECT_NE(r.error().message().find("(100002 bytes)"), std::string::npos);
}

TEST(ParseByteSize, RejectsBadInputWithReason) {
  struct Case {
    const char* text;
    ParseError error;
  } cases[] = {
      {"", ParseError::kEmpty},
      {"-1", ParseError::kSign},
      {"+1", ParseError::kSign},
      {"4XB", ParseError::kBadUnit},
      {"GiB", ParseError::kNotANumber},
      {"4 GiB", ParseError::kNotANumber},
      {"1.5", ParseError::kFraction},
      {"1.", ParseError::kNotANumber},
      {"4GiB!", ParseError::kNotANumber},
      {"18446744073709551616", ParseError::kOverflow},
      {"17179869184GiB", ParseError::kOverflow},
      {"99999999999999999999999", ParseError::kOverflow},
  };
  for (const Case& c : cases) {
    Parsed<uint64_t> p = ParseByteSizeRaw(c.text);
    EXPECT_EQ(p.error, c.error) << c.text;
  }
}

TEST(ParseByteSize, MaxValueFitsExactly) {
  EXPECT_EQ(*ParseByteSize("18446744073709551615"), UINT64_MAX);
}

TEST(ParseByteSize, MessageNamesWhatAndValue) {
  Result<uint64_t> r = ParseByteSize("4XB", "--memory");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("--memory"), std::string::npos);
  EXPECT_NE(r.error().message().find("\"4XB\""), std::string::npos);
  EXPECT_NE(r.error().message().find("unknown unit"), std::string::npos);
}

TEST(ParsePercent, AcceptsIntegersZeroToHundred) {
  EXPECT_EQ(*ParsePercent("30%"), 30);
  EXPECT_EQ(*ParsePercent("30"), 30);
  EXPECT_EQ(*ParsePercent("0"), 0);
  EXPECT_EQ(*ParsePercent("100%"), 100);
}

TEST(ParsePercent, RejectsOutOfRangeAndJunk) {
  EXPECT_EQ(ParsePercentRaw("101").error, ParseError::kOutOfRange);
  EXPECT_EQ(ParsePercentRaw("-5").error, ParseError::kSign);
  EXPECT_EQ(ParsePercentRaw("12.5%").error, ParseError::kFraction);
  EXPECT_EQ(ParsePercentRaw("30%%").error, ParseError::kBadUnit);
  EXPECT_EQ(ParsePercentRaw("abc").error, ParseError::kNotANumber);
  EXPECT_EQ(ParsePercentRaw("").error, ParseError::kEmpty);
}

TEST(ParseDuration, Units) {
  EXPECT_EQ(*ParseDuration("5ms"), 5'000'000);
  EXPECT_EQ(*ParseDuration("250us"), 250'000);
  EXPECT_EQ(*ParseDuration("1s"), 1'000'000'000);
  EXPECT_EQ(*ParseDuration("100ns"), 100);
  EXPECT_EQ(*ParseDuration("2m"), 120'000'000'000);
  EXPECT_EQ(*ParseDuration("1h"), 3'600'000'000'000);  // vgpu run --kill-after's upper bound
  EXPECT_EQ(ParseDurationRaw("5").error, ParseError::kBadUnit);
  EXPECT_EQ(ParseDurationRaw("5d").error, ParseError::kBadUnit);
  EXPECT_EQ(ParseDurationRaw("5H").error, ParseError::kBadUnit);
  EXPECT_EQ(ParseDurationRaw("1.5s").error, ParseError::kFraction);
  EXPECT_EQ(ParseDurationRaw("999999999999999999m").error, ParseError::kOverflow);
}

TEST(ParseUnsigned, StrictDigitsOnly) {
  EXPECT_EQ(*ParseUnsigned("42"), 42u);
  EXPECT_FALSE(ParseUnsigned("42k").has_value());
  EXPECT_FALSE(ParseUnsigned("-42").has_value());
  EXPECT_FALSE(ParseUnsigned("4.2").has_value());
}

TEST(FormatBytes, HumanReadable) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(4096), "4.00 KiB");
  EXPECT_EQ(FormatBytes(80ULL << 30), "80.00 GiB");
}

TEST(FormatFixed, DigitsAfterThePoint) {
  EXPECT_EQ(FormatFixed(3.14159, 2), "3.14");
  EXPECT_EQ(FormatFixed(7.2, 0), "7");
  EXPECT_EQ(FormatFixed(-0.5, 2), "-0.50");
  EXPECT_EQ(FormatFixed(12.0, 3), "12.000");
}

// Property: every byte count formatted as plain digits, and as whole MiB with "m", parses back.
TEST(ParseByteSize, RoundTripsPlainAndMiB) {
  uint64_t x = 0x9e3779b97f4a7c15ULL;
  for (int i = 0; i < 10000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    EXPECT_EQ(*ParseByteSize(std::to_string(x)), x);
    uint64_t mib = x >> 24;
    EXPECT_EQ(*ParseByteSize(std::to_string(mib) + "m"), mib << 20);
  }
}

TEST(ParseRate, AcceptsSizesPerSecond) {
  EXPECT_EQ(*ParseRate("10GB/s"), 10'000'000'000ULL);
  EXPECT_EQ(*ParseRate("512MiB/s"), 512ULL << 20);
  EXPECT_EQ(*ParseRate("1.5GB/S"), 1'500'000'000ULL);
  EXPECT_EQ(*ParseRate("4GiB"), 4ULL << 30);
  EXPECT_FALSE(ParseRate("-1GB/s", "--copy-bandwidth").has_value());
  EXPECT_FALSE(ParseRate("10GB/h").has_value());
  EXPECT_FALSE(ParseRate("/s").has_value());
  EXPECT_NE(ParseRate("fast", "--copy-bandwidth").error().message().find("--copy-bandwidth"),
            std::string::npos);
}

TEST(ParseRate, ALowercaseBIsBits) {
  // Link speeds: 10Gb/s is 10^10 bits per second, an eighth of 10GB/s.
  EXPECT_EQ(*ParseRate("10Gb/s"), 1'250'000'000ULL);
  EXPECT_EQ(*ParseRate("10gb/s"), 1'250'000'000ULL);
  EXPECT_EQ(*ParseRate("100Mb/s"), 12'500'000ULL);
  EXPECT_EQ(*ParseRate("1.5Gb"), 187'500'000ULL);
  EXPECT_EQ(*ParseRate("8Kib/s"), 1024ULL);
  EXPECT_EQ(*ParseRate("80b/s"), 10ULL);
  // An uppercase B stays bytes, and so do units without a b.
  EXPECT_EQ(*ParseRate("10GB/s"), 10'000'000'000ULL);
  EXPECT_EQ(*ParseRate("10G/s"), 10ULL << 30);
  EXPECT_EQ(*ParseRate("10Gib/s"), (10ULL << 30) / 8);
  EXPECT_FALSE(ParseRate("1.5b/s").has_value());  // a fraction of a bit
  // Sizes are never bits: a byte size keeps its case-insensitive units.
  EXPECT_EQ(*ParseByteSize("10gb"), 10'000'000'000ULL);
}

}  // namespace
}  // namespace vgpu
