#include "common/printable.h"

#include <gtest/gtest.h>

#include <string>

namespace vgpu {
namespace {

std::string Escape(std::string_view in, size_t size = 256, size_t max_input = size_t(-1)) {
  char out[2048];
  size_t n = EscapeForDisplay(in, out, size, max_input);
  EXPECT_EQ(n, std::string(out).size());
  return out;
}

TEST(Printable, KeepsPrintableAsciiAndEscapesEverythingElse) {
  EXPECT_EQ(Escape("memory=1GiB # ok"), "memory=1GiB # ok");
  EXPECT_EQ(Escape(std::string_view("a\x1b[2Jb\0c\x7f", 9)), "a\\x1b[2Jb\\x00c\\x7f");
  EXPECT_EQ(Escape("tab\there\r\n"), "tab\\x09here\\x0d\\x0a");
  EXPECT_EQ(Escape("caf\xc3\xa9"), "caf\\xc3\\xa9");
}

TEST(Printable, CutsLongInputAndFullOutput) {
  EXPECT_EQ(Escape("abcdefgh", 256, 3), "abc...");
  EXPECT_EQ(Escape("abc", 256, 3), "abc");
  // 8 bytes of room: the cut keeps "..." and the NUL.
  EXPECT_EQ(Escape("abcdefghij", 8), "abcd...");
  EXPECT_EQ(Escape("abcdefg", 8), "abcdefg");
  EXPECT_EQ(Escape("\x01\x02\x03", 8), "\\x01...");
  char one[1];
  EXPECT_EQ(EscapeForDisplay("abc", one, 1), 0u);
  EXPECT_EQ(one[0], '\0');
}

TEST(Printable, NoOutputByteIsAControlCharacter) {
  std::string all;
  for (int c = 0; c < 256; ++c) all += static_cast<char>(c);
  std::string out = Escape(all, 2048);
  EXPECT_EQ(out.size(), 95 + 161 * 4u);  // 95 printable bytes, 161 escaped
  for (char c : out) {
    unsigned char u = static_cast<unsigned char>(c);
    EXPECT_TRUE(u >= 0x20 && u < 0x7f) << static_cast<int>(u);
  }
}

}  // namespace
}  // namespace vgpu
