#include "k8s/api/encoding.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

TEST(Base64, RoundTripsAllLengths) {
  std::string s;
  for (int i = 0; i < 40; ++i) {
    auto back = Base64Decode(Base64Encode(s));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, s);
    s.push_back(static_cast<char>(i * 37));
  }
}

TEST(Base64, KnownValuesAndWhitespace) {
  EXPECT_EQ(Base64Encode("hello"), "aGVsbG8=");
  EXPECT_EQ(*Base64Decode("aGVs\nbG8="), "hello");
  EXPECT_EQ(*Base64Decode("aGVsbG8"), "hello");  // padding optional
}

TEST(Base64, RejectsGarbageWithOffset) {
  auto r = Base64Decode("aGV*bG8=");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("offset 3"), std::string::npos);
  EXPECT_FALSE(Base64Decode("aG==bG8=").has_value());  // data after padding
}

TEST(UrlEncode, EscapesSelectorCharacters) {
  EXPECT_EQ(UrlEncode("gpu=on,zone!=a"), "gpu%3Don%2Czone%21%3Da");
  EXPECT_EQ(UrlEncode("a-b_c.d~"), "a-b_c.d~");
}

TEST(ReadWholeFile, DevicesAndDirectoriesAreRefused) {
  for (const char* path : {"/dev/zero", "/dev/null", "/tmp"}) {
    auto r = ReadWholeFile(path);
    ASSERT_FALSE(r.has_value()) << path;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(r.error().message().find(path), std::string::npos);
  }
}

TEST(ReadWholeFile, MissingFileIsNotFound) {
  auto r = ReadWholeFile("/nonexistent/vgpu/file");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kNotFound);
}

}  // namespace
}  // namespace vgpu::k8s
