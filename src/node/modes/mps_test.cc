// MpsManager with a fake nvidia-cuda-mps-control (a shell script) that records its arguments,
// its environment and the commands it reads.
#include "node/modes/mps.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "device/fake_backend.h"
#include "support/temp_dir.h"

namespace vgpu::node {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class MpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    control_ = dir_ + "/nvidia-cuda-mps-control";
    log_ = dir_ + "/calls";
    std::ofstream(control_)
        << "#!/bin/sh\n"
        << "echo \"args=$* gpu=$CUDA_VISIBLE_DEVICES pipe=$CUDA_MPS_PIPE_DIRECTORY "
           "log=$CUDA_MPS_LOG_DIRECTORY\" >> '"
        << log_ << "'\n"
        << "if [ \"$1\" != -d ]; then while read -r cmd; do echo \"cmd=$cmd\" "
           ">> '"
        << log_ << "'; done; fi\n"
        << "[ -e '" << dir_ << "/fail' ] && exit 3\nexit 0\n";
    chmod(control_.c_str(), 0755);
    fake_.AddDefaultDevices(2);
  }
  vgpu::testing::TempDir tmp_{"vgpu-mps"};
  std::string dir_, control_, log_;
  device::FakeBackend fake_;
};

TEST_F(MpsTest, StartsOneDaemonPerGpuWithItsOwnDirectoriesAndQuits) {
  MpsManager mps({control_, dir_ + "/mps"}, &fake_);
  const std::string gpu = "GPU-aaaa";
  ASSERT_TRUE(mps.Start(1, gpu).ok());
  ASSERT_TRUE(mps.Start(1, gpu).ok());  // once per GPU
  EXPECT_TRUE(mps.Running(gpu));
  struct stat st;
  EXPECT_EQ(stat(mps.PipeDir(gpu).c_str(), &st), 0);
  EXPECT_EQ(stat(mps.LogDir(gpu).c_str(), &st), 0);
  EXPECT_EQ(fake_.compute_mode(1), device::ComputeMode::kExclusiveProcess);
  ASSERT_TRUE(mps.Stop(gpu).ok());
  EXPECT_FALSE(mps.Running(gpu));
  EXPECT_EQ(fake_.compute_mode(1), device::ComputeMode::kDefault);
  std::string p = dir_ + "/mps/" + gpu;
  EXPECT_EQ(ReadAll(log_), "args=-d gpu=" + gpu + " pipe=" + p + "/pipe log=" + p + "/log\n" +
                               "args= gpu=" + gpu + " pipe=" + p + "/pipe log=" + p + "/log\n" +
                               "cmd=quit\n");
  EXPECT_EQ(mps.Stop(gpu).code(), StatusCode::kNotFound);
}

TEST_F(MpsTest, AFailingControlIsReported) {
  std::ofstream(dir_ + "/fail") << "";
  MpsManager mps({control_, dir_ + "/mps"}, &fake_);
  Status s = mps.Start(0, "GPU-bbbb");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("status 3"), std::string::npos) << s.ToString();
  EXPECT_FALSE(mps.Running("GPU-bbbb"));
  MpsManager missing({dir_ + "/nonexistent", dir_ + "/mps"}, &fake_);
  EXPECT_FALSE(missing.Start(0, "GPU-bbbb").ok());
}

TEST_F(MpsTest, ContainerEnvironmentComesFromTheSlice) {
  MpsManager mps({control_, dir_ + "/mps"}, &fake_);
  auto env = mps.ContainerEnv("GPU-aaaa", 0, 30ULL << 30, 25);
  ASSERT_EQ(env.size(), 3u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>("CUDA_MPS_PIPE_DIRECTORY",
                                                         dir_ + "/mps/GPU-aaaa/pipe")));
  EXPECT_EQ(env[1].second, "25");
  EXPECT_EQ(env[2].second, "0=30720M");
  EXPECT_EQ(mps.ContainerEnv("GPU-aaaa", 1, 1ULL << 30, 0)[1].second, "1");  // at least 1%
  EXPECT_EQ(mps.ContainerMounts("GPU-aaaa").size(), 1u);
}

}  // namespace
}  // namespace vgpu::node
