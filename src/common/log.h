// Logging: printf-style messages to standard error, one write(2) per message.
//
// Contract:
// - Levels follow HAMi-core's LIBCUDA_LOG_LEVEL numbering: 0 silent, 1 errors, 2 warnings (the
//   default), 3 info, 4 debug. SetLogLevel() changes the threshold at any time.
// - A message is written whole, however long (an inventory of many GPUs as JSON). Up to 1 KiB it
//   is formatted in a stack buffer; a longer one is formatted again into an anonymous mapping
//   (mmap, not the heap) that is unmapped after the write. Should that mapping fail, the first
//   1 KiB is written followed by " [cut: N bytes]". No heap allocation, no locks, no exceptions,
//   so it is safe inside the interception library and in signal-free hot paths. Each message is
//   one write(2): messages from several threads never interleave within a line (a pipe keeps
//   that promise up to PIPE_BUF, 4 KiB, per write).
// - The tag (default "vgpu") names the component in each line: "[vgpu WARN] ...".
#pragma once

#include <sys/mman.h>
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
  constexpr size_t kStack = 1024;
  char buf[kStack + 64 + 32];
  int n = std::snprintf(buf, 64, "[%s %s] ", log_internal::g_tag.load(),
                        kNames[static_cast<int>(level)]);
  if (n < 0) return;
  if (n > 63) n = 63;  // a tag longer than the prefix's room is cut
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int m = std::vsnprintf(buf + n, kStack, format, args);
  va_end(args);
  if (m < 0) {
    va_end(again);
    return;
  }
  const int fd = log_internal::g_fd.load();
  if (static_cast<size_t>(m) < kStack) {
    va_end(again);
    size_t len = static_cast<size_t>(n) + static_cast<size_t>(m);
    buf[len++] = '\n';
    ssize_t ignored = ::write(fd, buf, len);
    (void)ignored;
    return;
  }
  // Longer than the stack buffer: format the whole message into a mapping of its size.
  const size_t total = static_cast<size_t>(n) + static_cast<size_t>(m) + 1;
  void* mem =
      ::mmap(nullptr, total + 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem != MAP_FAILED) {
    char* big = static_cast<char*>(mem);
    std::memcpy(big, buf, static_cast<size_t>(n));
    std::vsnprintf(big + n, static_cast<size_t>(m) + 1, format, again);
    va_end(again);
    big[total - 1] = '\n';
    ssize_t ignored = ::write(fd, big, total);
    (void)ignored;
    ::munmap(mem, total + 1);
    return;
  }
  va_end(again);
  size_t len = static_cast<size_t>(n) + kStack - 1;
  len += static_cast<size_t>(
      std::snprintf(buf + len, 32, " [cut: %zu bytes]", static_cast<size_t>(m) - (kStack - 1)));
  buf[len++] = '\n';
  ssize_t ignored = ::write(fd, buf, len);
  (void)ignored;
}

}  // namespace vgpu

#define VGPU_LOG_ERROR(...) ::vgpu::Logf(::vgpu::LogLevel::kError, __VA_ARGS__)
#define VGPU_LOG_WARN(...) ::vgpu::Logf(::vgpu::LogLevel::kWarn, __VA_ARGS__)
#define VGPU_LOG_INFO(...) ::vgpu::Logf(::vgpu::LogLevel::kInfo, __VA_ARGS__)
#define VGPU_LOG_DEBUG(...) ::vgpu::Logf(::vgpu::LogLevel::kDebug, __VA_ARGS__)
