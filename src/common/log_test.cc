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
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, size_t(n));
  close(fds[0]);
  return out;
}

TEST(Log, WritesAtOrBelowThreshold) {
  EXPECT_EQ(Capture(LogLevel::kInfo, LogLevel::kWarn, "hello"), "[vgpu WARN] hello 42\n");
  EXPECT_EQ(Capture(LogLevel::kInfo, LogLevel::kInfo, "x"), "[vgpu INFO] x 42\n");
}

TEST(Log, SuppressesAboveThreshold) {
  EXPECT_EQ(Capture(LogLevel::kWarn, LogLevel::kDebug, "hidden"), "");
  EXPECT_EQ(Capture(LogLevel::kSilent, LogLevel::kError, "hidden"), "");
}

TEST(Log, LongMessagesAreWrittenWhole) {
  // A 4-GPU inventory as JSON is several KiB: every byte of it reaches the log, in one line.
  // (The pipe holds 64 KiB, so the write completes before Capture reads.)
  for (size_t size : {1020u, 1023u, 1024u, 1025u, 5000u, 40000u}) {
    std::string big(size, 'x');
    big.back() = '}';
    std::string out = Capture(LogLevel::kDebug, LogLevel::kError, big.c_str());
    EXPECT_EQ(out, "[vgpu ERROR] " + big + " 42\n") << size;
  }
}

}  // namespace
}  // namespace vgpu
