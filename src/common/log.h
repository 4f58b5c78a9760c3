// Logging: printf-style messages to standard error, one write(2) per message.
//
// Contract:
// - Levels follow HAMi-core's LIBCUDA_LOG_LEVEL numbering: 0 silent, 1 errors, 2 warnings (the
//   default), 3 info, 4 debug. SetLogLevel() changes the threshold at any time.
// - A message longer than 1 KiB is cut. Formatting uses a stack buffer: no heap allocation, no
//   locks, no exceptions, so it is safe inside the interception library and in signal-free hot
//   paths. Messages from several threads never interleave within a line.
// - The tag (default "vgpu") names the component in each line: "[vgpu WARN] ...".
#pragma once

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace vgpu {

enum class LogLevel : int { kSilent = 0, kError = 1, kWarn = 2, kInfo = 3, kDebug = 4 };

namespace log_internal {
inline std::atomic<int> g_level{static_cast<int>(LogLevel::kWarn)};
inline std::atomic<const char*> g_tag{"vgpu"};
inline std::atomic<int> g_fd{2};
}  // namespace log_internal

inline void SetLogLevel(LogLevel level) {
  log_internal::g_level.store(static_cast<int>(level), std::memory_order_relaxed);
}
inline LogLevel GetLogLevel() {
  return static_cast<LogLevel>(log_internal::g_level.load(std::memory_order_relaxed));
}
// `tag` must outlive all logging (use a string literal).
inline void SetLogTag(const char* tag) { log_internal::g_tag.store(tag); }
// Redirects output to `fd` (tests use a pipe). The descriptor is not owned.
inline void SetLogFd(int fd) { log_internal::g_fd.store(fd); }

inline bool LogEnabled(LogLevel level) {
  return static_cast<int>(level) <= log_internal::g_level.load(std::memory_order_relaxed);
}

__attribute__((format(printf, 2, 3))) inline void Logf(LogLevel level, const char* format, ...) {
  if (!LogEnabled(level)) return;
  static constexpr const char* kNames[] = {"", "ERROR", "WARN", "INFO", "DEBUG"};
  char buf[1024 + 64];
  int n = std::snprintf(buf, 64, "[%s %s] ", log_internal::g_tag.load(),
                        kNames[static_cast<int>(level)]);
  if (n < 0) return;
  va_list args;
  va_start(args, format);
  int m = std::vsnprintf(buf + n, 1024, format, args);
  va_end(args);
  if (m < 0) return;
  size_t len = static_cast<size_t>(n) + (m < 1024 ? static_cast<size_t>(m) : 1023);
  buf[len++] = '\n';
  ssize_t ignored = ::write(log_internal::g_fd.load(), buf, len);
  (void)ignored;
}

}  // namespace vgpu

#define VGPU_LOG_ERROR(...) ::vgpu::Logf(::vgpu::LogLevel::kError, __VA_ARGS__)
#define VGPU_LOG_WARN(...) ::vgpu::Logf(::vgpu::LogLevel::kWarn, __VA_ARGS__)
#define VGPU_LOG_INFO(...) ::vgpu::Logf(::vgpu::LogLevel::kInfo, __VA_ARGS__)
#define VGPU_LOG_DEBUG(...) ::vgpu::Logf(::vgpu::LogLevel::kDebug, __VA_ARGS__)
