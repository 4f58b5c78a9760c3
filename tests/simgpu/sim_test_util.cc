#include "sim_test_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

extern char** environ;

namespace vgpu::simgpu::testing {
namespace {

std::string g_dir;

class SimulatedMachine : public ::testing::Environment {
 public:
  void SetUp() override {
    char tmpl[] = "/tmp/simgpu-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    g_dir = tmpl;
    std::ofstream(g_dir + "/devices.conf")
        << "# test machine\n"
        << "model=h100 memory=8GiB\n"
        << "model=a100 memory=1GiB name=\"vgpu simulated small\"\n";
    setenv("VGPU_SIMGPU_CONFIG", (g_dir + "/devices.conf").c_str(), 1);
    setenv("VGPU_SIMGPU_STATE", (g_dir + "/state").c_str(), 1);
    setenv("VGPU_SIMGPU_LOG_LEVEL", "1", 1);
    unsetenv("CUDA_VISIBLE_DEVICES");
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  }
  void TearDown() override {
    unlink((g_dir + "/state").c_str());
    unlink((g_dir + "/devices.conf").c_str());
    rmdir(g_dir.c_str());
  }
};

[[maybe_unused]] ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new SimulatedMachine);

}  // namespace

const std::string& TestDir() { return g_dir; }

double NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

uint64_t UsedBytes(int ordinal) {
  CUdevice dev;
  CUcontext ctx;
  EXPECT_EQ(cuDeviceGet(&dev, ordinal), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxPushCurrent(ctx), CUDA_SUCCESS);
  size_t free_bytes = 0, total = 0;
  EXPECT_EQ(cuMemGetInfo(&free_bytes, &total), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxPopCurrent(&ctx), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
  return total - free_bytes;
}

Worker::Worker(const std::vector<std::string>& args, const std::vector<std::string>& env) {
  int in[2], out[2];
  if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0) return;
  std::vector<std::string> argv_s = {SIMGPU_WORKER_PATH};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);
  // `env` entries replace inherited ones of the same name.
  std::vector<std::string> env_s(env.begin(), env.end());
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string name = entry.substr(0, entry.find('=') + 1);
    bool replaced = false;
    for (const std::string& mine : env) replaced = replaced || mine.rfind(name, 0) == 0;
    if (!replaced) env_s.push_back(entry);
  }
  std::vector<char*> envp;
  for (std::string& e : env_s) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), envp.data()) != 0) pid_ = -1;
  posix_spawn_file_actions_destroy(&actions);
  close(in[0]);
  close(out[1]);
  in_ = in[1];
  out_ = out[0];
}

Worker::~Worker() {
  CloseStdin();
  if (pid_ > 0 && !exited_) {
    kill(pid_, SIGKILL);
    Wait(5000);
  }
  if (out_ >= 0) close(out_);
}

std::string Worker::ReadLine(int timeout_ms) {
  double deadline = NowMs() + timeout_ms;
  for (;;) {
    size_t nl = buffer_.find('\n');
    if (nl != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      return line;
    }
    int left = static_cast<int>(deadline - NowMs());
    if (left <= 0) return "";
    pollfd p{out_, POLLIN, 0};
    if (poll(&p, 1, left) <= 0) continue;
    char buf[4096];
    ssize_t n = read(out_, buf, sizeof(buf));
    if (n <= 0) return "";
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

void Worker::CloseStdin() {
  if (in_ >= 0) close(in_);
  in_ = -1;
}

void Worker::Kill(int signal) {
  if (pid_ > 0 && !exited_) kill(pid_, signal);
}

int Worker::Wait(int timeout_ms) {
  if (exited_) return status_;
  double deadline = NowMs() + timeout_ms;
  while (NowMs() < deadline) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exited_ = true;
      status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return status_;
    }
    usleep(2000);
  }
  return -1;
}

std::string RunWorker(const std::vector<std::string>& args, const std::vector<std::string>& env,
                      int* exit_code) {
  Worker w(args, env);
  w.CloseStdin();
  std::string out;
  for (std::string line = w.ReadLine(); !line.empty(); line = w.ReadLine()) out += line + "\n";
  int code = w.Wait();
  if (exit_code != nullptr) *exit_code = code;
  return out;
}

ScopedContext::ScopedContext(int ordinal) {
  EXPECT_EQ(cuDeviceGet(&dev_, ordinal), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxPushCurrent(ctx_), CUDA_SUCCESS);
}

ScopedContext::~ScopedContext() {
  CUcontext popped;
  EXPECT_EQ(cuCtxPopCurrent(&popped), CUDA_SUCCESS);
  EXPECT_EQ(cuDevicePrimaryCtxRelease(dev_), CUDA_SUCCESS);
}

}  // namespace vgpu::simgpu::testing
