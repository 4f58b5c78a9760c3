#include "simgpu/md2.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

namespace vgpu::simgpu {
namespace {

std::string Hex(const Md2Digest& d) {
  std::string s;
  char b[3];
  for (uint8_t v : d) {
    std::snprintf(b, sizeof(b), "%02x", v);
    s += b;
  }
  return s;
}

std::string Md2Of(const std::string& m) {
  Md2 h;
  h.Update(m.data(), m.size());
  return Hex(h.Final());
}

// RFC 1319, appendix A.5.
TEST(Md2, RfcTestSuite) {
  EXPECT_EQ(Md2Of(""), "8350e5a3e24c153df2275c9f80692773");
  EXPECT_EQ(Md2Of("a"), "32ec01ec4a6dac72c0ab96fb34c0b5d1");
  EXPECT_EQ(Md2Of("abc"), "da853b0d3f88d99b30283a69e6ded6bb");
  EXPECT_EQ(Md2Of("message digest"), "ab4f496bfb2a530b219ff33031fe06b0");
  EXPECT_EQ(Md2Of("abcdefghijklmnopqrstuvwxyz"), "4e8ddff3650292ab5a4108c3aa47940b");
  EXPECT_EQ(Md2Of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"),
            "da33def2a42df13975352846c30338cd");
  EXPECT_EQ(
      Md2Of("12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
      "d5976f79d83d3a0dc9806c3c66f3efd8");
}

TEST(Md2, PiecesGiveTheSameDigestAsOneUpdate) {
  Md2 h;
  h.Update("message ", 8);
  h.Update("", 0);
  h.Update("digest", 6);
  EXPECT_EQ(Hex(h.Final()), "ab4f496bfb2a530b219ff33031fe06b0");
}

// HMAC (RFC 2104) with a key of one block: H((K ^ opad) | H((K ^ ipad) | m)).
TEST(Md2, HmacIsTheNestedDigestOfThePaddedKeys) {
  uint8_t key[16];
  for (int i = 0; i < 16; ++i) key[i] = static_cast<uint8_t>(i * 17 + 3);
  const char* a = "the process";
  const char* b = " and its devices";
  Md2Part parts[2] = {{a, std::strlen(a)}, {b, std::strlen(b)}};
  uint8_t ipad[16];
  uint8_t opad[16];
  for (int i = 0; i < 16; ++i) {
    ipad[i] = key[i] ^ 0x36;
    opad[i] = key[i] ^ 0x5c;
  }
  Md2 inner;
  inner.Update(ipad, 16);
  inner.Update("the process and its devices", 27);
  Md2Digest in = inner.Final();
  Md2 outer;
  outer.Update(opad, 16);
  outer.Update(in.data(), in.size());
  EXPECT_EQ(HmacMd2(key, parts, 2), outer.Final());
  key[0] ^= 1;
  EXPECT_NE(HmacMd2(key, parts, 2), outer.Final());
}

}  // namespace
}  // namespace vgpu::simgpu
