#include "child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>

extern char** environ;

namespace vgpu::testing {

double NowMs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

ChildProcess::ChildProcess(const std::vector<std::string>& args,
                           const std::vector<std::string>& env) {
  std::map<std::string, std::string> vars;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string s(*e);
    size_t eq = s.find('=');
    if (eq != std::string::npos) vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  for (const std::string& s : env) {
    size_t eq = s.find('=');
    if (eq != std::string::npos) vars[s.substr(0, eq)] = s.substr(eq + 1);
  }
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : vars) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = args;
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  in_ = to_child[1];
  out_ = from_child[0];
}

ChildProcess::~ChildProcess() {
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    Wait(5000);
  }
  if (in_ >= 0) close(in_);
  if (out_ >= 0) close(out_);
}

std::string ChildProcess::ReadLine(int timeout_ms) {
  double deadline = NowMs() + timeout_ms;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    double left = deadline - NowMs();
    if (left <= 0 || out_ < 0) return "";
    struct pollfd pfd = {out_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left) + 1) <= 0) return "";
    char buf[4096];
    ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) return "";
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

bool ChildProcess::Write(const std::string& text) {
  return in_ >= 0 && write(in_, text.data(), text.size()) == static_cast<ssize_t>(text.size());
}

void ChildProcess::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

void ChildProcess::Kill(int signal) {
  if (pid_ > 0 && !exited_) kill(pid_, signal);
}

int ChildProcess::Wait(int timeout_ms) {
  if (pid_ <= 0) return -1;
  if (!exited_) {
    double deadline = NowMs() + timeout_ms;
    for (;;) {
      int status = 0;
      pid_t r = waitpid(pid_, &status, WNOHANG);
      if (r == pid_) {
        exited_ = true;
        status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        break;
      }
      if (NowMs() > deadline) return -1;
      usleep(1000);
    }
  }
  return status_;
}

std::string ChildProcess::ReadAll(int timeout_ms) {
  double deadline = NowMs() + timeout_ms;
  while (out_ >= 0) {
    double left = deadline - NowMs();
    if (left <= 0) break;
    struct pollfd pfd = {out_, POLLIN, 0};
    if (poll(&pfd, 1, static_cast<int>(left) + 1) <= 0) break;
    char buf[4096];
    ssize_t n = read(out_, buf, sizeof buf);
    if (n <= 0) break;
    buffer_.append(buf, static_cast<size_t>(n));
  }
  std::string all;
  all.swap(buffer_);
  return all;
}

std::string RunToCompletion(const std::vector<std::string>& args,
                            const std::vector<std::string>& env, int* exit_code) {
  ChildProcess p(args, env);
  p.CloseStdin();
  std::string out = p.ReadAll(60000);
  int code = p.Wait(60000);
  if (exit_code != nullptr) *exit_code = code;
  return out;
}

}  // namespace vgpu::testing
