#include "common/log.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace vgpu {
namespace {

std::string Capture(LogLevel threshold, LogLevel level, const char* msg) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  SetLogFd(fds[1]);
  SetLogLevel(threshold);
  Logf(level, "%s %d", msg, 42);
  SetLogFd(2);
  SetLogLevel(LogLevel::kWarn);
  close(fds[1]);
  char buf[2048];
  ssize_t n = read(fds[0], buf, sizeof(buf));
  close(fds[0]);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

TEST(Log, WritesAtOrBelowThreshold) {
  EXPECT_EQ(Capture(LogLevel::kInfo, LogLevel::kWarn, "hello"), "[vgpu WARN] hello 42\n");
  EXPECT_EQ(Capture(LogLevel::kInfo, LogLevel::kInfo, "x"), "[vgpu INFO] x 42\n");
}

TEST(Log, SuppressesAboveThreshold) {
  EXPECT_EQ(Capture(LogLevel::kWarn, LogLevel::kDebug, "hidden"), "");
  EXPECT_EQ(Capture(LogLevel::kSilent, LogLevel::kError, "hidden"), "");
}

TEST(Log, LongMessagesAreCutNotOverflowed) {
  std::string big(5000, 'x');
  std::string out = Capture(LogLevel::kDebug, LogLevel::kError, big.c_str());
  EXPECT_LE(out.size(), 1024u + 64u + 1u);
  EXPECT_EQ(out.back(), '\n');
}

}  // namespace
}  // namespace vgpu
