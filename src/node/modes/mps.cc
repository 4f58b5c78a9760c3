#include "node/modes/mps.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "common/log.h"

extern char** environ;

namespace vgpu::node {
namespace {

constexpr int kCommandTimeoutMs = 10000;

}  // namespace

MpsManager::MpsManager(MpsOptions options, device::DeviceBackend* backend)
    : options_(std::move(options)), backend_(backend) {}

std::string MpsManager::PipeDir(const std::string& gpu_uuid) const {
  return options_.root + "/" + gpu_uuid + "/pipe";
}
std::string MpsManager::LogDir(const std::string& gpu_uuid) const {
  return options_.root + "/" + gpu_uuid + "/log";
}

bool MpsManager::Running(const std::string& gpu_uuid) const {
  std::lock_guard<std::mutex> lock(mu_);
  return running_.count(gpu_uuid) > 0;
}

Status MpsManager::RunControl(const std::string& gpu_uuid, const std::vector<std::string>& args,
                              const std::string& stdin_text) {
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string v = *e;
    if (v.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0 || v.rfind("CUDA_MPS_PIPE_DIRECTORY=", 0) == 0 ||
        v.rfind("CUDA_MPS_LOG_DIRECTORY=", 0) == 0) {
      continue;
    }
    env_strings.push_back(v);
  }
  env_strings.push_back("CUDA_VISIBLE_DEVICES=" + gpu_uuid);
  env_strings.push_back("CUDA_MPS_PIPE_DIRECTORY=" + PipeDir(gpu_uuid));
  env_strings.push_back("CUDA_MPS_LOG_DIRECTORY=" + LogDir(gpu_uuid));
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<std::string> argv_strings = {options_.control_binary};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);

  int in[2];
  if (pipe2(in, O_CLOEXEC) != 0) return Status::IoError(std::string("pipe: ") + strerror(errno));
  pid_t pid = fork();
  if (pid < 0) {
    close(in[0]);
    close(in[1]);
    return Status::IoError(std::string("fork: ") + strerror(errno));
  }
  if (pid == 0) {
    dup2(in[0], 0);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(in[0]);
  if (!stdin_text.empty()) {
    // A control that exits without reading must not kill the daemon with SIGPIPE: block it for
    // this thread and discard a pending one.
    sigset_t pipe_set, old;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
    if (write(in[1], stdin_text.data(), stdin_text.size()) !=
        static_cast<ssize_t>(stdin_text.size())) {
      VGPU_LOG_WARN("MPS: writing to %s failed: %s", options_.control_binary.c_str(),
                    strerror(errno));
      timespec zero{0, 0};
      sigtimedwait(&pipe_set, nullptr, &zero);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
  }
  close(in[1]);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kCommandTimeoutMs);
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return Status::IoError(std::string("waitpid: ") + strerror(errno));
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return Status::DeadlineExceeded(options_.control_binary + " did not finish in 10 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::Unavailable(
        options_.control_binary + (args.empty() ? "" : " " + args[0]) + " for GPU " + gpu_uuid +
        " failed (status " +
        std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)) + ")");
  }
  return Status::Ok();
}

Status MpsManager::Start(int gpu_index, const std::string& gpu_uuid) {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_.count(gpu_uuid)) return Status::Ok();
  std::error_code ec;
  for (const std::string& dir : {PipeDir(gpu_uuid), LogDir(gpu_uuid)}) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::IoError("creating " + dir + ": " + ec.message());
  }
  Status mode = backend_->SetComputeMode(gpu_index, device::ComputeMode::kExclusiveProcess);
  if (!mode.ok()) {
    VGPU_LOG_WARN("MPS: GPU %s stays in its compute mode: %s", gpu_uuid.c_str(),
                  mode.ToString().c_str());
  }
  // A control daemon left by an earlier run of the node daemon keeps serving its clients.
  if (std::filesystem::exists(PipeDir(gpu_uuid) + "/control", ec)) {
    running_[gpu_uuid] = gpu_index;
    VGPU_LOG_INFO("MPS: the control daemon for GPU %s runs already", gpu_uuid.c_str());
    return Status::Ok();
  }
  Status started = RunControl(gpu_uuid, {"-d"}, "");
  if (!started.ok()) return started.WithContext("starting the MPS control daemon");
  running_[gpu_uuid] = gpu_index;
  VGPU_LOG_INFO("MPS: control daemon for GPU %s (pipe %s)", gpu_uuid.c_str(),
                PipeDir(gpu_uuid).c_str());
  return Status::Ok();
}

Status MpsManager::Stop(const std::string& gpu_uuid) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = running_.find(gpu_uuid);
  if (it == running_.end()) return Status::NotFound("no MPS control daemon for GPU " + gpu_uuid);
  Status quit = RunControl(gpu_uuid, {}, "quit\n");
  if (!quit.ok()) return quit.WithContext("stopping the MPS control daemon");
  Status mode = backend_->SetComputeMode(it->second, device::ComputeMode::kDefault);
  if (!mode.ok()) VGPU_LOG_WARN("MPS: %s", mode.ToString().c_str());
  running_.erase(it);
  return Status::Ok();
}

std::vector<std::pair<std::string, std::string>> MpsManager::ContainerEnv(
    const std::string& gpu_uuid, int container_index, uint64_t memory_bytes, int cores) const {
  std::vector<std::pair<std::string, std::string>> env;
  env.emplace_back("CUDA_MPS_PIPE_DIRECTORY", PipeDir(gpu_uuid));
  int percent = cores < 1 ? 1 : cores > 100 ? 100 : cores;
  env.emplace_back("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", std::to_string(percent));
  env.emplace_back(
      "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT",
      std::to_string(container_index) + "=" + std::to_string(memory_bytes >> 20) + "M");
  return env;
}

std::vector<MpsMount> MpsManager::ContainerMounts(const std::string& gpu_uuid) const {
  return {{PipeDir(gpu_uuid), PipeDir(gpu_uuid)}};
}

}  // namespace vgpu::node
