#include "support/background_process.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <random>
#include <set>
#include <sstream>
#include <thread>

extern char** environ;

namespace vgpu::testing {

namespace {

// Whether `port` (0 = any) can be bound on loopback now; the bound port in `*bound`.
bool Bindable(int port, int* bound) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  socklen_t len = sizeof addr;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (ok) *bound = ntohs(addr.sin_port);
  close(fd);
  return ok;
}

}  // namespace

int FreePort() {
  // Ports are drawn at random below the kernel's ephemeral range, never twice in one process.
  // Port 0 alone would do for one test at a time, but the kernel readily hands a port that was
  // just released to the next caller, and tests run in parallel: two of them then start their
  // servers on the same port and talk to each other's.
  static std::mutex mu;
  static std::mt19937 rng(
      static_cast<uint32_t>(getpid()) ^
      static_cast<uint32_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  static std::set<int> given;
  std::lock_guard<std::mutex> lock(mu);
  std::uniform_int_distribution<int> pick(20000, 32000);
  for (int attempt = 0; attempt < 200; ++attempt) {
    const int port = pick(rng);
    int bound = 0;
    if (given.count(port) == 0 && Bindable(port, &bound)) {
      given.insert(port);
      return port;
    }
  }
  int bound = 0;
  return Bindable(0, &bound) ? bound : 0;
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& args,
                                     const std::vector<std::string>& env, std::string log)
    : log_(std::move(log)) {
  if (args.empty()) return;
  // Everything the child needs is prepared before fork(): the parent has threads.
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> environment;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    const std::string name = kv.substr(0, kv.find('='));
    bool replaced = false;
    for (const std::string& o : env) replaced = replaced || o.rfind(name + "=", 0) == 0;
    if (!replaced) environment.push_back(kv);
  }
  environment.insert(environment.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (const std::string& kv : environment) envp.push_back(const_cast<char*>(kv.c_str()));
  envp.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    const int fd = ::open(log_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0 || reaped_) return;
  if (Stop(SIGTERM, std::chrono::seconds(2)) == -1) Stop(SIGKILL, std::chrono::seconds(10));
}

bool BackgroundProcess::Running() {
  if (pid_ <= 0 || reaped_) return false;
  if (waitpid(pid_, &status_, WNOHANG) == pid_) reaped_ = true;
  return !reaped_;
}

int BackgroundProcess::Stop(int signal, std::chrono::milliseconds limit) {
  if (pid_ <= 0) return -1;
  if (!reaped_) kill(pid_, signal);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!reaped_ && std::chrono::steady_clock::now() < deadline) {
    if (waitpid(pid_, &status_, WNOHANG) == pid_) {
      reaped_ = true;
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
  if (!reaped_) return -1;
  return WIFEXITED(status_) ? WEXITSTATUS(status_) : 128 + WTERMSIG(status_);
}

std::string BackgroundProcess::Log() const {
  std::ifstream in(log_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace vgpu::testing
