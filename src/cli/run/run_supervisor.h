// Running the command of `vgpu run` so that nothing of it outlives its slice.
//
// RunSupervised() starts the command in a process group of its own and makes `vgpu run` a child
// subreaper (PR_SET_CHILD_SUBREAPER), so every process the command starts, even one that left
// the group, stays a descendant that `vgpu run` can find and reap. Then:
//   - SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to `vgpu run` are passed on to the whole group
//     (signals `vgpu run` inherited as ignored are left alone), and the grace period starts;
//   - when the command itself ends, what is left of the slice (the group, the orphaned
//     descendants, and any other live process holding memory in the slice's region) is sent
//     SIGTERM, and the grace period starts if it has not already;
//   - when the grace period is over, everything left is sent SIGKILL;
//   - RunSupervised() returns when no process of the slice is left (or, if some survive SIGKILL
//     for kKillWait, with them listed in `survivors`; the slice must then be left in place).
// Interactive use: when `vgpu run` is the terminal's foreground process group, the command's
// group becomes the foreground group, so Ctrl-C and Ctrl-Z reach the command; when the command
// stops, `vgpu run` takes the terminal back and stops too, and gives the terminal back when the
// shell continues it. At the end the terminal's foreground group and modes are restored.
//
// Exit status: the command's, 128 + signal when a signal ended it, 127 when it could not be
// started (with a message on stderr), 1 on a system error.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace vgpu::cli {

inline constexpr int64_t kDefaultKillAfterNs = 10LL * 1000 * 1000 * 1000;
// How long processes sent SIGKILL may take to go before they are reported as survivors.
inline constexpr int64_t kKillWaitNs = 5LL * 1000 * 1000 * 1000;

struct SuperviseOptions {
  std::vector<std::string> command;             // argv; command[0] is looked up on PATH
  std::vector<std::string> env;                 // the whole environment of the command
  int64_t kill_after_ns = kDefaultKillAfterNs;  // grace period before SIGKILL
  std::string region_path;  // the slice's accounting region ("" for none): its live holders
                            // are ended with the command
};

struct SuperviseResult {
  int exit_status = 1;
  std::vector<pid_t> survivors;  // processes of the slice still alive after SIGKILL
};

SuperviseResult RunSupervised(const SuperviseOptions& options);

}  // namespace vgpu::cli
