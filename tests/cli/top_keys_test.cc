// `vgpu top`'s live view on a terminal (a pseudo-terminal here): it shows its keys, quits on q,
// and puts the terminal back as it found it, also when SIGINT or SIGTERM ends it.
#include <gtest/gtest.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

namespace vgpu {
namespace {

class TopOnATerminal : public ::testing::Test {
 protected:
  void SetUp() override {
    state_ = "/tmp/vgpu-top-keys-" + std::to_string(getpid());
    std::filesystem::create_directories(state_);
    pid_ = forkpty(&master_, nullptr, nullptr, nullptr);
    ASSERT_GE(pid_, 0);
    if (pid_ == 0) {
      setenv("VGPU_STATE_DIR", state_.c_str(), 1);
      execl(VGPU_BIN, VGPU_BIN, "top", "--interval", "0.2", "--slice-dir", "none",
            static_cast<char*>(nullptr));
      _exit(127);
    }
  }
  void TearDown() override {
    if (pid_ > 0 && !exited_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
    std::filesystem::remove_all(state_);
  }
  // Reads the terminal until `text` appears or `seconds` pass; true if it appeared.
  bool WaitForOutput(const std::string& text, double seconds) {
    auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (std::chrono::steady_clock::now() < until) {
      if (output_.find(text) != std::string::npos) return true;
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[4096];
      ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) break;
      output_.append(buf, static_cast<size_t>(n));
    }
    return output_.find(text) != std::string::npos;
  }
  // Waits up to 5 s for vgpu top to end; its exit code, or -1 if it did not.
  int WaitForExit() {
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      WaitForOutput("\x01never", 0.05);  // keep draining the terminal
      usleep(50 * 1000);
    }
    return -1;
  }
  // The terminal's line mode, as vgpu top's side sees it.
  tcflag_t LocalFlags() {
    termios t{};
    EXPECT_EQ(tcgetattr(master_, &t), 0);
    return t.c_lflag & (ICANON | ECHO | ISIG);
  }
  // Checks the live view took the terminal over (keys read at once, no echo), then returns the
  // original flags.
  tcflag_t ExpectLiveView() {
    EXPECT_TRUE(WaitForOutput("keys: q quit", 10)) << output_;
    EXPECT_EQ(LocalFlags() & (ICANON | ECHO), 0u) << "the live view reads keys at once";
    EXPECT_TRUE(WaitForOutput("\033[?1049h", 1)) << "alternate screen";
    return ICANON | ECHO | ISIG;
  }
  void ExpectRestored(tcflag_t flags) {
    EXPECT_EQ(LocalFlags(), flags) << "terminal modes not restored";
    EXPECT_TRUE(WaitForOutput("\033[?25h\033[?1049l", 1)) << "cursor and screen not restored";
  }

  std::string state_, output_;
  int master_ = -1;
  pid_t pid_ = -1;
  bool exited_ = false;
};

TEST_F(TopOnATerminal, QuitsOnQAndRestoresTheTerminal) {
  const tcflag_t before = LocalFlags();
  ASSERT_EQ(before, ICANON | ECHO | ISIG);
  ExpectLiveView();
  ASSERT_EQ(write(master_, "x", 1), 1);  // other keys do nothing
  ASSERT_EQ(write(master_, "q", 1), 1);
  EXPECT_EQ(WaitForExit(), 0) << output_;
  ExpectRestored(before);
}

class TopOnATerminalSignal : public TopOnATerminal, public ::testing::WithParamInterface<int> {};

TEST_P(TopOnATerminalSignal, RestoresTheTerminal) {
  const tcflag_t before = LocalFlags();
  ExpectLiveView();
  kill(pid_, GetParam());
  EXPECT_EQ(WaitForExit(), 0);
  ExpectRestored(before);
}

INSTANTIATE_TEST_SUITE_P(Signals, TopOnATerminalSignal,
                         ::testing::Values(SIGINT, SIGTERM, SIGHUP, SIGQUIT));

}  // namespace
}  // namespace vgpu
