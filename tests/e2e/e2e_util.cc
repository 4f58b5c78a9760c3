#include "e2e_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace vgpu::e2e {

uint64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof addr;
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  close(fd);
  return port;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::map<std::string, std::string> Lines(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    size_t sp = line.find(' ');
    if (sp != std::string::npos) m[line.substr(0, sp)] = line.substr(sp + 1);
  }
  return m;
}

double ShareOf(const std::string& path, uint64_t from, uint64_t to) {
  FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) return -1;
  uint64_t call, start, end, busy = 0;
  while (std::fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64, &call, &start, &end) == 3) {
    uint64_t s = std::max(start, from), e = std::min(end, to);
    if (e > s) busy += e - s;
  }
  std::fclose(f);
  return 100.0 * static_cast<double>(busy) / static_cast<double>(to - from);
}

std::vector<std::string> SimGpuRuntimeEnv(const std::string& simgpu_dir, const std::string& root) {
  return {"LD_LIBRARY_PATH=" + simgpu_dir,
          "VGPU_REAL_LIBCUDA=" + simgpu_dir + "/libcuda.so.1",
          "VGPU_REAL_LIBNVML=" + simgpu_dir + "/libnvidia-ml.so.1",
          "VGPU_SIMGPU_CONFIG=" + root + "/devices.conf",
          "VGPU_SIMGPU_STATE=" + root + "/simgpu.state",
          "VGPU_SIMGPU_LOG_LEVEL=1",
          "LIBCUDA_LOG_LEVEL=1"};
}

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& args,
                                     const std::vector<std::string>& env, std::string log)
    : log_(std::move(log)) {
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

}  // namespace vgpu::e2e
