#include "spawn.h"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

extern char** environ;

namespace vgpu::bench {
namespace {

std::string NameOf(const char* entry) {
  const char* eq = std::strchr(entry, '=');
  return eq == nullptr ? std::string(entry) : std::string(entry, eq - entry);
}

bool Dropped(const std::string& name, const std::vector<std::string>& drop,
             const std::vector<std::string>& drop_prefixes) {
  for (const std::string& d : drop) {
    if (name == d) return true;
  }
  for (const std::string& p : drop_prefixes) {
    if (name.compare(0, p.size(), p) == 0) return true;
  }
  return false;
}

}  // namespace

int RunProgram(const std::vector<std::string>& argv, const std::vector<std::string>& drop,
               const std::vector<std::string>& drop_prefixes, const std::vector<std::string>& add,
               std::string* out) {
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    if (!Dropped(NameOf(*e), drop, drop_prefixes)) env.emplace_back(*e);
  }
  for (const std::string& a : add) {
    std::string name = NameOf(a.c_str());
    std::erase_if(env, [&](const std::string& e) { return NameOf(e.c_str()) == name; });
    env.push_back(a);
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::vector<std::string> args = argv;
  std::vector<char*> argp;
  for (std::string& a : args) argp.push_back(a.data());
  argp.push_back(nullptr);

  int pipe_fd[2] = {-1, -1};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (out != nullptr) {
    if (pipe(pipe_fd) != 0) {
      std::fprintf(stderr, "bench_intercept: pipe: %s\n", std::strerror(errno));
      posix_spawn_file_actions_destroy(&actions);
      return -1;
    }
    posix_spawn_file_actions_adddup2(&actions, pipe_fd[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_fd[0]);
    posix_spawn_file_actions_addclose(&actions, pipe_fd[1]);
  }
  pid_t pid = -1;
  int rc = posix_spawn(&pid, argp[0], &actions, nullptr, argp.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  if (out != nullptr) close(pipe_fd[1]);
  if (rc != 0) {
    std::fprintf(stderr, "bench_intercept: cannot start %s: %s\n", argp[0], std::strerror(rc));
    if (out != nullptr) close(pipe_fd[0]);
    return -1;
  }
  if (out != nullptr) {
    char buf[4096];
    ssize_t n = 0;
    while ((n = read(pipe_fd[0], buf, sizeof(buf))) != 0) {
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) break;
      out->append(buf, static_cast<size_t>(n));
    }
    close(pipe_fd[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return -1;
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace vgpu::bench
