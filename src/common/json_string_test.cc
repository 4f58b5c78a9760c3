#include "common/json_string.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace vgpu {
namespace {

TEST(JsonString, AppendsEscapedStrings) {
  std::string out;
  AppendJsonString(&out, "plain");
  AppendJsonString(&out, "q\"b\\n\n\x01");
  EXPECT_EQ(out, R"("plain""q\"b\\n\n\u0001")");
  EXPECT_EQ(JsonString("tab\there\r"), R"("tab\there\r")");
  EXPECT_EQ(JsonString(""), R"("")");
}

// The fast check looks at eight bytes at a time: a byte that needs escaping is found at every
// position and string length, and bytes that need none (ASCII, DEL, UTF-8's 0x80 and above) are
// copied as they are.
TEST(JsonString, EscapesAtEveryPositionAndLength) {
  const std::string specials("\"\\\x1f\x01\n\0", 6);
  for (size_t len = 1; len <= 20; ++len) {
    for (size_t at = 0; at < len; ++at) {
      for (char c : specials) {
        std::string s(len, 'x');
        s[at] = c;
        std::string out;
        AppendJsonString(&out, s);
        EXPECT_EQ(out, nlohmann::json(s).dump()) << "length " << len << " position " << at;
      }
    }
    for (const char* fill : {"a", "\xc3\xa9", "\x7f", "\xff", " "}) {
      std::string plain;
      while (plain.size() < len) plain += fill;
      plain.resize(len);
      std::string out;
      AppendJsonString(&out, plain);
      EXPECT_EQ(out, '"' + plain + '"') << "length " << len;
    }
  }
}

}  // namespace
}  // namespace vgpu
