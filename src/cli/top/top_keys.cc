#include "cli/top/top_keys.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace vgpu::cli {

TopKeys::TopKeys() {
  if (isatty(0) == 1 && tcgetattr(0, &saved_) == 0) {
    termios raw = saved_;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    keys_ = tcsetattr(0, TCSANOW, &raw) == 0;
  }
  if (isatty(1) == 1) {
    // Alternate screen, cursor hidden.
    ssize_t n = write(1, "\033[?1049h\033[?25l", 14);
    screen_ = n == 14;
  }
}

TopKeys::~TopKeys() {
  if (screen_) {
    ssize_t n = write(1, "\033[?25h\033[?1049l", 14);
    (void)n;
  }
  if (keys_) tcsetattr(0, TCSANOW, &saved_);
}

int TopKeys::WaitForKey(int timeout_ms) {
  if (!keys_ || input_gone_) {
    std::this_thread::sleep_for(std::chrono::milliseconds(timeout_ms));
    return 0;
  }
  pollfd p{0, POLLIN, 0};
  if (poll(&p, 1, timeout_ms) <= 0) return 0;  // timeout, or a signal (EINTR)
  unsigned char c = 0;
  if (read(0, &c, 1) != 1) {
    // End of input or an error (the terminal went away): no more keys will come.
    input_gone_ = true;
    return 0;
  }
  return c;
}

const char* TopKeyHelp(bool reads_keys) {
  return reads_keys ? "keys: q quit   r refresh now   (Ctrl-C quits too)\n" : "Ctrl-C quits\n";
}

}  // namespace vgpu::cli
