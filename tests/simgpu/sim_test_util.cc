#include "sim_test_util.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>

#include "support/temp_dir.h"

namespace vgpu::simgpu::testing {
namespace {

std::string g_dir;

class SimulatedMachine : public ::testing::Environment {
 public:
  void SetUp() override {
    dir_.emplace("simgpu-test");
    ASSERT_TRUE(dir_->ok()) << dir_->error();
    g_dir = dir_->path();
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
  // gtest never destroys its environments: the directory goes here.
  void TearDown() override { dir_.reset(); }

 private:
  std::optional<vgpu::testing::TempDir> dir_;
};

[[maybe_unused]] ::testing::Environment* const g_env =
    ::testing::AddGlobalTestEnvironment(new SimulatedMachine);

}  // namespace

const std::string& TestDir() { return g_dir; }

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

namespace {

std::vector<std::string> WorkerArgs(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SIMGPU_WORKER_PATH};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

}  // namespace

Worker::Worker(const std::vector<std::string>& args, const std::vector<std::string>& env)
    : ChildProcess(WorkerArgs(args), env) {}

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
