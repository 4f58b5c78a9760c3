// TopKeys: the keyboard and screen of `vgpu top`'s live view.
//
// When standard input is a terminal, the constructor turns off its line buffering and echo (one
// key press is read at once and not shown; Ctrl-C still sends SIGINT). When standard output is a
// terminal, the view is drawn on the alternate screen with the cursor hidden. The destructor
// puts both back exactly as they were, so the terminal is restored however the view ends: on
// 'q', or after SIGINT / SIGTERM / SIGHUP / SIGQUIT, whose handlers only set the loop's stop flag
// (a waiting WaitForKey returns at once on a signal). Not thread-safe; one per process.
#pragma once

#include <termios.h>

namespace vgpu::cli {

class TopKeys {
 public:
  TopKeys();
  ~TopKeys();
  TopKeys(const TopKeys&) = delete;
  TopKeys& operator=(const TopKeys&) = delete;

  // True when keys are read (standard input is a terminal).
  bool reads_keys() const { return keys_; }
  // Waits up to `timeout_ms` for a key press and returns it; 0 when none came, a signal
  // arrived, or keys are not read (then it just sleeps).
  int WaitForKey(int timeout_ms);

 private:
  bool keys_ = false;    // stdin's mode was changed (saved_ holds the original)
  bool screen_ = false;  // the alternate screen is on
  bool input_gone_ = false;
  termios saved_{};
};

// The key help line of the live view.
const char* TopKeyHelp(bool reads_keys);

}  // namespace vgpu::cli
