#include "cli/run/run_supervisor.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "cli/run/slice_members.h"
#include "common/clock.h"
#include "shm/proc_identity.h"

namespace vgpu::cli {
namespace {

constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
// While the slice is being ended: how often it is looked at again.
constexpr int64_t kPollNs = 20LL * 1000 * 1000;

bool Alive(pid_t pid) { return kill(pid, 0) == 0 || errno == EPERM; }

// The live children of this process: from /proc/self/task/<tid>/children when the kernel has it,
// else by scanning /proc for processes whose parent is this one.
std::vector<pid_t> Children() {
  std::vector<pid_t> out;
  const pid_t self = getpid();
  std::ifstream list("/proc/self/task/" + std::to_string(self) + "/children");
  if (list) {
    for (long pid = 0; list >> pid;) out.push_back(static_cast<pid_t>(pid));
  } else if (DIR* dir = opendir("/proc")) {
    while (dirent* e = readdir(dir)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      if (end == e->d_name || *end != '\0' || pid <= 0) continue;
      shm::StatFields f;
      if (shm::ReadStat(static_cast<pid_t>(pid), &f) && f.ppid == self) {
        out.push_back(static_cast<pid_t>(pid));
      }
    }
    closedir(dir);
  }
  // Zombies are reaped by the caller; they need no signal.
  std::erase_if(out, [](pid_t pid) {
    shm::StatFields f;
    return !shm::ReadStat(pid, &f) || f.state == 'Z' || f.state == 'X';
  });
  return out;
}

// The controlling terminal, when there is one.
struct Terminal {
  int fd = -1;
  bool foreground = false;  // this process's group held it at the start
  bool modes_saved = false;
  termios modes{};
};

Terminal OpenTerminal() {
  Terminal t;
  t.fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
  t.foreground = t.fd >= 0 && tcgetpgrp(t.fd) == getpgrp();
  if (t.foreground) t.modes_saved = tcgetattr(t.fd, &t.modes) == 0;
  return t;
}

// Gives the terminal to `pgid` when this process's group holds it (SIGTTOU is blocked).
void HandTerminal(const Terminal& t, pid_t pgid) {
  if (t.fd >= 0 && tcgetpgrp(t.fd) == getpgrp()) tcsetpgrp(t.fd, pgid);
}

// Takes the terminal back from `pgid`; restores its modes when the command was killed (a
// program killed in raw mode leaves the terminal unusable).
void TakeTerminalBack(const Terminal& t, pid_t pgid, bool restore_modes) {
  if (t.fd < 0 || tcgetpgrp(t.fd) != pgid) return;
  tcsetpgrp(t.fd, getpgrp());
  if (restore_modes && t.modes_saved) tcsetattr(t.fd, TCSADRAIN, &t.modes);
}

// The command stopped (Ctrl-Z): stop with it so the shell sees the job stop; when continued,
// give the terminal back if the shell made this the foreground job, and continue the command.
void StopWithCommand(const Terminal& t, pid_t pgid) {
  if (t.fd < 0) return;  // no job control without a terminal
  TakeTerminalBack(t, pgid, false);
  kill(getpid(), SIGSTOP);
  HandTerminal(t, pgid);
  kill(-pgid, SIGCONT);
}

// Sends `sig` to what is left of the slice: the command's group, the orphans reparented here,
// and the processes holding memory in the region.
// Stopped processes act on SIGTERM only once continued, so SIGCONT follows it.
void SignalSlice(pid_t pgid, const std::string& region_path, int sig) {
  std::vector<pid_t> pids = Children();
  for (pid_t h : RegionHolders(region_path, getpid())) pids.push_back(h);
  for (int s : {sig, SIGCONT}) {
    if (s == SIGCONT && sig == SIGKILL) break;
    kill(-pgid, s);
    for (pid_t pid : pids) kill(pid, s);
  }
}

int ExitStatus(int status) {
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace

SuperviseResult RunSupervised(const SuperviseOptions& o) {
  SuperviseResult result;
  std::vector<std::string> args = o.command, env = o.env;
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);

  // Every signal of interest is blocked and taken with sigtimedwait: no handler races. Signals
  // inherited as ignored stay ignored (a background job of a shell must not react to Ctrl-C).
  sigset_t handled, old_mask;
  sigemptyset(&handled);
  for (int sig : kForwarded) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) == 0 && current.sa_handler != SIG_IGN) {
      sigaddset(&handled, sig);
    }
  }
  sigaddset(&handled, SIGCHLD);
  sigaddset(&handled, SIGTTOU);  // lets tcsetpgrp() work from the background
  sigprocmask(SIG_BLOCK, &handled, &old_mask);
  prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  Terminal tty = OpenTerminal();

  int report[2];
  if (pipe2(report, O_CLOEXEC) != 0) return result;
  std::fflush(nullptr);
  pid_t child = fork();
  if (child < 0) {
    close(report[0]);
    close(report[1]);
    return result;
  }
  if (child == 0) {
    close(report[0]);
    setpgid(0, 0);
    if (tty.foreground) tcsetpgrp(tty.fd, getpid());
    sigprocmask(SIG_SETMASK, &old_mask, nullptr);
    execvpe(argv[0], argv.data(), envp.data());
    int err = errno;
    ssize_t ignored = write(report[1], &err, sizeof err);
    (void)ignored;
    _exit(127);
  }
  // Both sides set the group and the terminal: whichever runs first, the command starts in it.
  setpgid(child, child);
  HandTerminal(tty, child);
  const pid_t pgid = child;
  close(report[1]);
  int exec_error = 0;
  ssize_t n;
  do {
    n = read(report[0], &exec_error, sizeof exec_error);
  } while (n < 0 && errno == EINTR);
  close(report[0]);
  if (n == sizeof exec_error) {
    std::fprintf(stderr, "vgpu run: cannot run %s: %s\n", o.command[0].c_str(),
                 std::strerror(exec_error));
  }

  bool main_done = false;
  int main_status = 0;
  int64_t deadline = -1;  // when what is left gets SIGKILL
  int64_t give_up = -1;   // when processes that survive SIGKILL are reported
  bool term_sent = false, kill_sent = false;
  for (;;) {
    bool no_children = false;
    for (;;) {
      int status = 0;
      pid_t r = waitpid(-1, &status, WNOHANG | WUNTRACED);
      if (r > 0) {
        if (r != child) continue;  // an orphan of the slice, reaped
        if (WIFSTOPPED(status)) {
          StopWithCommand(tty, pgid);
        } else {
          main_done = true;
          main_status = status;
          TakeTerminalBack(tty, pgid, WIFSIGNALED(status));
        }
        continue;
      }
      if (r < 0 && errno == EINTR) continue;
      no_children = r < 0 && errno == ECHILD;
      break;
    }
    const int64_t now = MonotonicClock::Instance().NowNanos();
    if (main_done) {
      bool group = Alive(-pgid);
      bool holders = !RegionHolders(o.region_path, getpid()).empty();
      if (no_children && !group && !holders) break;
      if (!term_sent) {
        SignalSlice(pgid, o.region_path, SIGTERM);
        term_sent = true;
        if (deadline < 0) deadline = now + o.kill_after_ns;
      }
    }
    if (kill_sent) {
      SignalSlice(pgid, o.region_path, SIGKILL);  // orphans reparented since the last round
      if (now >= give_up) {
        result.survivors = Children();
        for (pid_t h : RegionHolders(o.region_path, getpid())) {
          if (std::find(result.survivors.begin(), result.survivors.end(), h) ==
              result.survivors.end()) {
            result.survivors.push_back(h);
          }
        }
        break;
      }
    } else if (deadline >= 0 && now >= deadline) {
      SignalSlice(pgid, o.region_path, SIGKILL);
      kill_sent = true;
      give_up = now + kKillWaitNs;
      continue;
    }
    // Sleep until a signal, the deadline, or the next look at a slice being ended.
    int64_t wait_ns = -1;
    if (term_sent || kill_sent) wait_ns = kPollNs;
    if (!kill_sent && deadline >= 0) {
      int64_t left = std::max<int64_t>(deadline - now, 0);
      wait_ns = wait_ns < 0 ? left : std::min(wait_ns, left);
    }
    siginfo_t info;
    int sig;
    if (wait_ns < 0) {
      sig = sigwaitinfo(&handled, &info);
    } else {
      timespec ts{static_cast<time_t>(wait_ns / 1000000000LL),
                  static_cast<long>(wait_ns % 1000000000LL)};
      sig = sigtimedwait(&handled, &info, &ts);
    }
    if (sig <= 0 || sig == SIGCHLD || sig == SIGTTOU) continue;
    kill(-pgid, sig);
    if (deadline < 0) deadline = MonotonicClock::Instance().NowNanos() + o.kill_after_ns;
  }
  // Signals stay blocked: one arriving now must not end vgpu run before the slice is removed.
  if (n == sizeof exec_error) {
    result.exit_status = 127;
  } else if (main_done) {
    result.exit_status = ExitStatus(main_status);
  } else {
    result.exit_status = 128 + SIGKILL;  // the command itself survived SIGKILL
  }
  if (tty.fd >= 0) close(tty.fd);
  return result;
}

}  // namespace vgpu::cli
