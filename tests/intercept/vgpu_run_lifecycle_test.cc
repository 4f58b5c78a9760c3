// The life cycle of a `vgpu run` slice, on the simulated GPU: signals reach every process of the
// slice, nothing of it outlives the grace period, the exit status follows 128 + signal, the
// slice is removed last; a slice whose `vgpu run` was killed is shown stale by `vgpu top` and
// removed by `vgpu gc` only once no process uses it.
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "shm/proc_identity.h"
#include "support/wait_for.h"
#include "vgpu_cli_fixture.h"

namespace vgpu {
namespace {

using testing::ChildProcess;
using testing::NowMs;

constexpr uint64_t kMiB = 1ULL << 20;

bool Gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

// Waits up to `ms` for `pid` to vanish (a process reaped by someone else).
bool GoneWithin(pid_t pid, int ms) {
  return vgpu::testing::WaitFor([&] { return Gone(pid); }, std::chrono::milliseconds(ms),
                                std::chrono::milliseconds(10));
}

class RunLifecycleTest : public testing::VgpuCliTest {
 protected:
  std::string Worker(const std::string& args) const { return Quote(WORKER_PATH) + " " + args; }
  // Starts `vgpu run --sim --memory 1GiB --kill-after 300ms EXTRA... -- sh -c SCRIPT`.
  std::unique_ptr<ChildProcess> Start(const std::string& script,
                                      const std::vector<std::string>& extra = {}) {
    std::vector<std::string> argv = {VGPU_BIN, "run",          "--sim", "--memory",
                                     "1GiB",   "--kill-after", "300ms"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    for (const char* a : {"--", "sh", "-c"}) argv.push_back(a);
    argv.push_back(script);
    return std::make_unique<ChildProcess>(argv, env_);
  }
  // Reads `n` "ready PID" lines.
  static std::vector<pid_t> ReadyPids(ChildProcess& p, int n) {
    std::vector<pid_t> pids;
    for (int i = 0; i < n; ++i) {
      std::string line = p.ReadLine();
      EXPECT_EQ(line.rfind("ready ", 0), 0u) << line;
      if (line.rfind("ready ", 0) != 0) break;
      pids.push_back(std::atoi(line.c_str() + 6));
    }
    return pids;
  }
};

TEST_F(RunLifecycleTest, SignalsEndForegroundAndBackgroundChildrenWithinTheGracePeriod) {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    SCOPED_TRACE(strsignal(sig));
    // Two background holders (one ignores SIGTERM and must be killed) and a foreground one.
    std::string script = Worker("park " + std::to_string(100 * kMiB)) + " & " +
                         Worker("park " + std::to_string(100 * kMiB) + " ignore-term") + " & " +
                         Worker("park " + std::to_string(50 * kMiB)) + "; wait";
    auto run = Start(script);
    std::vector<pid_t> pids = ReadyPids(*run, 3);
    ASSERT_EQ(pids.size(), 3u);
    ASSERT_EQ(SliceCount(), 1u);
    double start = NowMs();
    run->Kill(sig);
    EXPECT_EQ(run->Wait(10000), 128 + sig);
    double took = NowMs() - start;
    for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << "pid " << pid << " outlived vgpu run";
    EXPECT_EQ(SliceCount(), 0u) << "the slice is removed once its processes are gone";
    EXPECT_LT(took, 5000) << "SIGKILL follows the 300 ms grace period";
  }
}

TEST_F(RunLifecycleTest, WhatTheCommandLeavesBehindIsEndedWithIt) {
  // A background holder, and one that left the process group (setsid): both end with the
  // command, which exits with its own status.
  if (access("/usr/bin/setsid", X_OK) != 0) GTEST_SKIP() << "no setsid";
  std::string script = Worker("park " + std::to_string(10 * kMiB)) + " & /usr/bin/setsid " +
                       Worker("park " + std::to_string(10 * kMiB) + " ignore-term") +
                       " & sleep 0.3; exit 5";
  auto run = Start(script);
  std::vector<pid_t> pids = ReadyPids(*run, 2);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_EQ(run->Wait(10000), 5);
  for (pid_t pid : pids) EXPECT_TRUE(Gone(pid)) << "pid " << pid;
  EXPECT_EQ(SliceCount(), 0u);
}

TEST_F(RunLifecycleTest, ProcessesHoldingTheSliceOutsideTheCommandAreEndedToo) {
  // The command prints the slice's environment; a process the test starts with it joins the
  // slice without being a descendant of vgpu run.
  auto run = Start(
      "echo \"$LD_PRELOAD|$VGPU_LIMITS_FILE|$CUDA_DEVICE_MEMORY_SHARED_CACHE|$LD_LIBRARY_PATH|"
      "$VGPU_REAL_LIBCUDA|$VGPU_REAL_LIBNVML\"; exec sleep 60");
  std::stringstream line(run->ReadLine());
  std::vector<std::string> v;
  for (std::string part; std::getline(line, part, '|');) v.push_back(part);
  ASSERT_EQ(v.size(), 6u);
  std::vector<std::string> env = env_;
  for (const std::string& e :
       {"LD_PRELOAD=" + v[0], "VGPU_LIMITS_FILE=" + v[1], "CUDA_DEVICE_MEMORY_SHARED_CACHE=" + v[2],
        "LD_LIBRARY_PATH=" + v[3], "VGPU_REAL_LIBCUDA=" + v[4], "VGPU_REAL_LIBNVML=" + v[5]}) {
    env.push_back(e);
  }
  ChildProcess outsider({WORKER_PATH, "park", std::to_string(64 * kMiB)}, env);
  ASSERT_EQ(outsider.ReadLine().rfind("ready ", 0), 0u);
  run->Kill(SIGTERM);
  EXPECT_EQ(run->Wait(10000), 128 + SIGTERM);
  EXPECT_EQ(outsider.Wait(5000), 128 + SIGTERM) << "the slice's holder must be ended";
  EXPECT_EQ(SliceCount(), 0u);
}

// A shell script on a terminal of its own (a pseudo-terminal whose master side the test holds),
// as a user would run vgpu run interactively.
class Terminal {
 public:
  Terminal(const std::string& script, const std::vector<std::string>& env) {
    master_ = posix_openpt(O_RDWR | O_NOCTTY);
    if (master_ < 0 || grantpt(master_) != 0 || unlockpt(master_) != 0) return;
    std::string slave = ptsname(master_);
    std::vector<std::string> vars;
    for (char** e = environ; *e != nullptr; ++e) vars.push_back(*e);
    vars.insert(vars.end(), env.begin(), env.end());
    std::vector<char*> envp;
    for (std::string& v : vars) envp.push_back(v.data());
    envp.push_back(nullptr);
    pid_ = fork();
    if (pid_ == 0) {
      setsid();
      int fd = open(slave.c_str(), O_RDWR);  // becomes the controlling terminal
      if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) != 0) _exit(126);
      for (int i = 0; i < 3; ++i) dup2(fd, i);
      execle("/bin/sh", "sh", "-c", script.c_str(), nullptr, envp.data());
      _exit(127);
    }
  }
  ~Terminal() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (master_ >= 0) close(master_);
  }
  bool ok() const { return master_ >= 0 && pid_ > 0; }
  // Reads until `text` has appeared (true) or 10 s have passed.
  bool WaitFor(const std::string& text) {
    double until = NowMs() + 10000;
    while (out_.find(text) == std::string::npos && NowMs() < until) {
      pollfd p{master_, POLLIN, 0};
      if (poll(&p, 1, 50) <= 0) continue;
      char buf[512];
      ssize_t n = read(master_, buf, sizeof buf);
      if (n <= 0) break;  // EIO: the terminal is closed
      out_.append(buf, static_cast<size_t>(n));
    }
    return out_.find(text) != std::string::npos;
  }
  void Type(const std::string& keys) {
    ASSERT_EQ(write(master_, keys.data(), keys.size()), static_cast<ssize_t>(keys.size()));
  }
  const std::string& output() const { return out_; }

 private:
  int master_ = -1;
  pid_t pid_ = -1;
  std::string out_;
};

TEST_F(RunLifecycleTest, OnATerminalTheCommandReadsInputAndCtrlCReachesIt) {
  // The command is the terminal's foreground job: it reads what is typed (a background group
  // would be stopped by SIGTTIN), Ctrl-C ends it (and not the shell around vgpu run), and the
  // terminal goes back to the shell afterwards.
  std::string v = Quote(VGPU_BIN);
  Terminal t(v + " run -- sh -c 'echo started; read x; echo \"got $x\"'; echo \"rc1=$?\"; " + v +
                 " run -- sh -c 'echo started2; exec sleep 30'; echo \"rc2=$?\"; "
                 "echo \"stat $(cat /proc/$$/stat)\"; echo end",
             env_);
  ASSERT_TRUE(t.ok());
  ASSERT_TRUE(t.WaitFor("started\r\n")) << t.output();
  t.Type("hello\n");
  ASSERT_TRUE(t.WaitFor("rc1=")) << t.output();
  EXPECT_NE(t.output().find("got hello"), std::string::npos) << t.output();
  EXPECT_NE(t.output().find("rc1=0"), std::string::npos) << t.output();
  ASSERT_TRUE(t.WaitFor("started2")) << t.output();
  t.Type("\x03");
  ASSERT_TRUE(t.WaitFor("end")) << t.output();
  EXPECT_NE(t.output().find("rc2=130"), std::string::npos) << t.output();
  // /proc/<shell>/stat: field 5 is its process group, field 8 the terminal's foreground group.
  std::string stat = t.output().substr(t.output().find("stat "));
  std::istringstream fields(stat.substr(stat.rfind(')') + 1));
  std::string state, ppid, pgrp, session, tty, tpgid;
  fields >> state >> ppid >> pgrp >> session >> tty >> tpgid;
  EXPECT_EQ(tpgid, pgrp) << "the terminal must be the shell's again: " << stat;
}

TEST_F(RunLifecycleTest, KillAfterIsValidatedAndDocumented) {
  int code = -1;
  EXPECT_NE(Vgpu({"run", "--help"}, &code).find("--kill-after"), std::string::npos);
  EXPECT_EQ(code, 0);
  Vgpu({"run", "--kill-after", "5", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("--kill-after"), std::string::npos) << Err();
  Vgpu({"run", "--kill-after", "61m", "--", "true"}, &code);
  EXPECT_EQ(code, 2);
  EXPECT_NE(Err().find("at most 1h"), std::string::npos) << Err();
  Vgpu({"run", "--kill-after", "0s", "--", "sh", "-c", "exit 4"}, &code);
  EXPECT_EQ(code, 4);
}

TEST_F(RunLifecycleTest, StaleSliceIsShownAndCollectedOnlyOnceUnused) {
  // vgpu run killed with SIGKILL cannot clean up: its holder keeps running, outside any slice
  // that a running vgpu run owns.
  std::vector<std::string> argv = {VGPU_BIN,
                                   "run",
                                   "--sim",
                                   "--memory",
                                   "1GiB",
                                   "--name",
                                   "orphan",
                                   "--",
                                   WORKER_PATH,
                                   "park",
                                   std::to_string(100 * kMiB)};
  ChildProcess run(argv, env_);
  std::string ready = run.ReadLine();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  pid_t holder = std::atoi(ready.c_str() + 6);
  run.Kill(SIGKILL);
  EXPECT_EQ(run.Wait(), 128 + SIGKILL);
  ASSERT_FALSE(Gone(holder));
  ASSERT_EQ(SliceCount(), 1u);

  int code = -1;
  std::string text = Vgpu({"top", "--once"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(text.find("[stale]"), std::string::npos) << text;
  EXPECT_NE(text.find("pid " + std::to_string(holder)), std::string::npos) << text;
  EXPECT_NE(text.find("(stale) "), std::string::npos) << text;
  std::string json = Vgpu({"top", "--once", "--json"}, &code);
  size_t proc = json.find("{\"pid\":" + std::to_string(holder) + ",\"alive\":true,");
  ASSERT_NE(proc, std::string::npos) << json;
  std::string entry = json.substr(proc, json.find('}', proc) - proc);
  EXPECT_NE(entry.find(",\"stale\":true"), std::string::npos) << entry;

  std::string gc = Vgpu({"gc"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(gc.find("kept orphan-"), std::string::npos) << gc;
  EXPECT_NE(gc.find(std::to_string(holder) + " still hold memory"), std::string::npos) << gc;
  EXPECT_EQ(SliceCount(), 1u);

  kill(holder, SIGKILL);
  ASSERT_TRUE(GoneWithin(holder, 5000));
  gc = Vgpu({"gc", "--dry-run"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(gc.find("would remove orphan-"), std::string::npos) << gc;
  EXPECT_EQ(SliceCount(), 1u);
  gc = Vgpu({"gc"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(gc.find("removed orphan-"), std::string::npos) << gc;
  EXPECT_EQ(SliceCount(), 0u);
  gc = Vgpu({"gc"}, &code);
  EXPECT_NE(gc.find("no stale slices"), std::string::npos) << gc;
}

TEST_F(RunLifecycleTest, GcKeepsSlicesUsedWithoutMemoryAndJudgesOwnersByStartTime) {
  // A member that never allocated has no slot, but has the region mapped.
  std::vector<std::string> argv = {VGPU_BIN, "run", "--sim",     "--memory", "1GiB", "--name",
                                   "mapped", "--",  WORKER_PATH, "park",     "0"};
  ChildProcess run(argv, env_);
  std::string ready = run.ReadLine();
  ASSERT_EQ(ready.rfind("ready ", 0), 0u) << ready;
  pid_t member = std::atoi(ready.c_str() + 6);
  run.Kill(SIGKILL);
  run.Wait();
  int code = -1;
  std::string gc = Vgpu({"gc"}, &code);
  EXPECT_NE(gc.find(std::to_string(member) + " still use its region"), std::string::npos) << gc;
  EXPECT_EQ(SliceCount(), 1u);
  kill(member, SIGKILL);
  ASSERT_TRUE(GoneWithin(member, 5000));
  Vgpu({"gc"}, &code);
  EXPECT_EQ(SliceCount(), 0u);

  // An owner pid that now names another process (this test, with another start time) is gone;
  // the owner with the right start time is alive and its slice is left alone.
  namespace fs = std::filesystem;
  shm::ProcIdentity me = shm::CurrentProcIdentity();
  for (const char* name : {"reused", "owned"}) {
    fs::create_directories(dir_ + "/state/slices/" + name);
    std::ofstream(dir_ + "/state/slices/" + name + "/meta")
        << "creator_pid=" << me.pid << "\ncreator_start_time="
        << (std::string(name) == "reused" ? me.start_time + 1 : me.start_time)
        << "\ncreator_pid_ns=" << me.pid_ns << "\ncommand=x\n";
  }
  gc = Vgpu({"gc"}, &code);
  EXPECT_EQ(code, 0);
  EXPECT_NE(gc.find("removed reused"), std::string::npos) << gc;
  EXPECT_EQ(gc.find("owned"), std::string::npos) << gc;
  EXPECT_TRUE(fs::exists(dir_ + "/state/slices/owned"));
  EXPECT_FALSE(fs::exists(dir_ + "/state/slices/reused"));

  EXPECT_NE(Vgpu({"gc", "--help"}, &code).find("--dry-run"), std::string::npos);
  EXPECT_EQ(code, 0);
  Vgpu({"gc", "--bogus"}, &code);
  EXPECT_EQ(code, 2);
}

}  // namespace
}  // namespace vgpu
