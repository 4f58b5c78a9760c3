#include "simgpu/driver/request_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>

#include "common/log.h"

namespace vgpu::simgpu::driver {
namespace {

// The log file's descriptor: -1 when VGPU_SIMGPU_REQUEST_LOG is unset or cannot be opened.
int LogFd() {
  static const int fd = [] {
    const char* path = std::getenv("VGPU_SIMGPU_REQUEST_LOG");
    if (path == nullptr || path[0] == '\0') return -1;
    int f = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (f < 0) VGPU_LOG_WARN("VGPU_SIMGPU_REQUEST_LOG=%s: cannot open; requests not logged", path);
    return f;
  }();
  return fd;
}

}  // namespace

bool RequestLogEnabled() { return LogFd() >= 0 || LogEnabled(LogLevel::kDebug); }

void LogRequest(const char* format, ...) {
  if (!RequestLogEnabled()) return;
  char buf[1024];
  va_list args;
  va_start(args, format);
  int n = std::vsnprintf(buf, sizeof(buf) - 1, format, args);
  va_end(args);
  if (n < 0) return;
  size_t len = static_cast<size_t>(n) < sizeof(buf) - 1 ? static_cast<size_t>(n) : sizeof(buf) - 2;
  VGPU_LOG_DEBUG("request: %.*s", static_cast<int>(len), buf);
  if (int fd = LogFd(); fd >= 0) {
    buf[len++] = '\n';
    ssize_t ignored = ::write(fd, buf, len);
    (void)ignored;
  }
}

}  // namespace vgpu::simgpu::driver
