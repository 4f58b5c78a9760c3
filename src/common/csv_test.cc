#include "common/csv.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include "common/quote.h"

namespace vgpu {
namespace {

TEST(CsvTable, ParsesHeaderRowsAndLines) {
  auto t = CsvTable::Parse("a,b,c\n1,2,3\r\n\n4,\"x,y\",6\n", "t.csv");
  ASSERT_TRUE(t.has_value()) << t.error().ToString();
  EXPECT_EQ(t->header().size(), 3u);
  ASSERT_EQ(t->num_rows(), 2u);
  EXPECT_EQ(t->Field(0, 2), "3");
  EXPECT_EQ(t->Field(1, 1), "x,y");
  EXPECT_EQ(t->LineOf(0), 2);
  EXPECT_EQ(t->LineOf(1), 4);
  EXPECT_EQ(*t->GetInt(1, 2), 6);
}

TEST(CsvTable, QuotedQuotesAndNewlines) {
  auto t = CsvTable::Parse("a,b\n\"he said \"\"hi\"\"\",\"two\nlines\"\n7,8\n", "q.csv");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->Field(0, 0), "he said \"hi\"");
  EXPECT_EQ(t->Field(0, 1), "two\nlines");
  EXPECT_EQ(t->LineOf(1), 4);
}

TEST(CsvTable, EmptyFileIsAnError) {
  auto t = CsvTable::Parse("", "empty.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("empty.csv"), std::string::npos);
  EXPECT_NE(t.error().message().find("empty file"), std::string::npos);
  EXPECT_FALSE(CsvTable::Parse("\n\n", "blank.csv").has_value());
}

TEST(CsvTable, WrongFieldCountNamesLine) {
  auto t = CsvTable::Parse("a,b\n1,2\n3\n", "f.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("f.csv:3"), std::string::npos) << t.error().message();
}

TEST(CsvTable, UnclosedQuote) {
  auto t = CsvTable::Parse("a,b\n1,\"2\n", "u.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_NE(t.error().message().find("u.csv:2"), std::string::npos);
}

TEST(CsvTable, MissingColumnListsHeader) {
  auto t = CsvTable::Parse("a,b\n1,2\n", "m.csv");
  ASSERT_TRUE(t.has_value());
  auto c = t->RequireColumn("cpu_milli");
  ASSERT_FALSE(c.has_value());
  EXPECT_NE(c.error().message().find("m.csv:1: missing column 'cpu_milli'"), std::string::npos);
  EXPECT_NE(c.error().message().find("a,b"), std::string::npos);
}

TEST(CsvTable, IntegerErrorsNameFileLineColumn) {
  auto t = CsvTable::Parse("x,cpu_milli\n1,abc\n2,-5\n3,99999999999999999999\n4,\n5, 7\n", "p.csv");
  ASSERT_TRUE(t.has_value());
  auto e0 = t->GetInt(0, 1, 0);
  ASSERT_FALSE(e0.has_value());
  EXPECT_EQ(e0.error().message(), "p.csv:2: column 'cpu_milli' (2): \"abc\" is not an integer");
  auto e1 = t->GetInt(1, 1, 0);
  EXPECT_EQ(e1.error().message(), "p.csv:3: column 'cpu_milli' (2): \"-5\" is negative");
  EXPECT_NE(t->GetInt(2, 1).error().message().find("too large"), std::string::npos);
  EXPECT_NE(t->GetInt(3, 1).error().message().find("empty"), std::string::npos);
  EXPECT_EQ(*t->GetIntOr(3, 1, 42), 42);
  EXPECT_FALSE(t->GetInt(4, 1).has_value());
  EXPECT_NE(t->GetInt(1, 1, -10, -6).error().message().find("outside [-10, -6]"),
            std::string::npos);
}

TEST(CsvTable, MissingFileIsIoError) {
  auto t = CsvTable::Load("/nonexistent/dir/file.csv");
  ASSERT_FALSE(t.has_value());
  EXPECT_EQ(t.error().code(), StatusCode::kIoError);
  EXPECT_NE(t.error().message().find("/nonexistent/dir/file.csv"), std::string::npos);
}

TEST(CsvTable, ByteOrderMarkIsSkipped) {
  auto t = CsvTable::Parse("\xEF\xBB\xBFname,cpu\np,1\n", "bom.csv");
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->FindColumn("name"), 0);
  EXPECT_EQ(t->Field(0, 0), "p");
  // Only at the very start: elsewhere the bytes are data.
  auto mid = CsvTable::Parse("name\n\xEF\xBB\xBFp\n", "mid.csv");
  ASSERT_TRUE(mid.has_value());
  EXPECT_EQ(mid->Field(0, 0), "\xEF\xBB\xBFp");
}

TEST(CsvTable, LongFieldsAreCutInMessages) {
  const std::string huge(100000, 'x');
  auto t = CsvTable::Parse("name,cpu\np," + huge + "\n", "long.csv");
  ASSERT_TRUE(t.has_value());
  auto e = t->GetInt(0, 1, 0);
  ASSERT_FALSE(e.has_value());
  const std::string& m = e.error().message();
  EXPECT_LT(m.size(), 200u) << m;
  EXPECT_EQ(m.rfind("long.csv:2: column 'cpu' (2): \"xxxx", 0), 0u) << m;
  EXPECT_NE(m.find("...\" (100000 bytes) is not an integer"), std::string::npos) << m;
  // A caller's own text about a field is cut too, and so is a long header in the column list.
  EXPECT_LT(t->FieldError(0, 1, "bad " + huge).message().size(), 400u);
  auto h = CsvTable::Parse(huge + "\n1\n", "h.csv");
  ASSERT_TRUE(h.has_value());
  EXPECT_LT(h->RequireColumn("name").error().message().size(), 400u);
}

TEST(CsvTable, DevicesAndDirectoriesAreRefused) {
  for (const char* path : {"/dev/zero", "/dev/null", "/tmp"}) {
    auto t = CsvTable::Load(path);
    ASSERT_FALSE(t.has_value()) << path;
    EXPECT_EQ(t.error().code(), StatusCode::kInvalidArgument) << path;
    EXPECT_NE(t.error().message().find(path), std::string::npos) << t.error().message();
  }
}

TEST(CsvTable, ReadsFromAPipe) {
  // `--pods <(generate)` hands over a pipe: it has no size, and is read up to the limit.
  const std::string fifo = "/tmp/vgpu-csv-fifo-" + std::to_string(getpid());
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] { std::ofstream(fifo) << "a,b\n1,2\n"; });
  auto t = CsvTable::Load(fifo);
  writer.join();
  unlink(fifo.c_str());
  ASSERT_TRUE(t.has_value()) << t.error().message();
  EXPECT_EQ(t->num_rows(), 1u);
}

TEST(Quote, CutsLongTextWithoutSplittingACharacter) {
  EXPECT_EQ(Quote("abc"), "\"abc\"");
  EXPECT_EQ(Quote("abcdef", 4), "\"abcd...\" (6 bytes)");
  // "é" is two bytes; a cut inside it backs up to before it.
  EXPECT_EQ(Quote("abc\xC3\xA9z", 4), "\"abc...\" (6 bytes)");
  EXPECT_EQ(Shorten("abcdef", 4), "abcd... (6 bytes)");
  EXPECT_EQ(Shorten("abc", 4), "abc");
}

TEST(CsvTable, StrayQuote) {
  EXPECT_FALSE(CsvTable::Parse("a,b\n1,2\"3\n", "s.csv").has_value());
  EXPECT_FALSE(CsvTable::Parse("a,b\n1,\"2\"3\n", "s.csv").has_value());
}

}  // namespace
}  // namespace vgpu
