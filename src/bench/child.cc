#include "bench/child.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "common/clock.h"

namespace vgpu::bench {

bool Saw(Child& c, const char* word) {
  char buf[256];
  for (;;) {
    ssize_t n = read(c.out, buf, sizeof buf);
    if (n <= 0) break;
    c.seen.append(buf, static_cast<size_t>(n));
  }
  return c.seen.find(word) != std::string::npos;
}

Result<Child> SpawnChild(std::vector<std::string> args, std::vector<std::string> env,
                         const std::string& out_file, const std::string& err_file) {
  Child c;
  c.out_file = out_file;
  c.err_file = err_file;
  int in_pipe[2], out_pipe[2];
  if (pipe2(in_pipe, O_CLOEXEC) != 0) {
    return Status::IoError("pipe: " + std::string(std::strerror(errno)));
  }
  if (pipe2(out_pipe, O_CLOEXEC) != 0) {
    close(in_pipe[0]);
    close(in_pipe[1]);
    return Status::IoError("pipe: " + std::string(std::strerror(errno)));
  }
  std::vector<char*> argv, envp;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::fflush(nullptr);
  c.pid = fork();
  if (c.pid < 0) return Status::IoError("fork: " + std::string(std::strerror(errno)));
  if (c.pid == 0) {
    dup2(in_pipe[0], 0);
    dup2(out_pipe[1], 1);
    int err = open(c.err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (err >= 0) dup2(err, 2);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(in_pipe[0]);
  close(out_pipe[1]);
  c.in = in_pipe[1];
  c.out = out_pipe[0];
  fcntl(c.out, F_SETFL, O_NONBLOCK);
  return c;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

uint64_t MonotonicNs() { return static_cast<uint64_t>(MonotonicClock::Instance().NowNanos()); }

}  // namespace vgpu::bench
