// A test fixture for running the `vgpu` command on the simulated GPU: a private state
// directory, simulated devices (an 8 GiB H100) and helpers to run `vgpu` and read its output.
// Test-only.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "child_process.h"
#include "sanitizer_env.h"
#include "support/temp_dir.h"

namespace vgpu::testing {

class VgpuCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
    std::ofstream(dir_ + "/devices.conf") << "model=h100 memory=8GiB\n";
    env_ = {"VGPU_STATE_DIR=" + dir_ + "/state", "VGPU_SIMGPU_CONFIG=" + dir_ + "/devices.conf",
            "VGPU_SIMGPU_STATE=" + dir_ + "/simgpu.state", "VGPU_SIMGPU_LOG_LEVEL=1",
            "LIBCUDA_LOG_LEVEL=1"};
    // An asan build of libvgpu.so needs the ASan runtime loaded first in every process (vgpu run
    // keeps sanitizer runtimes ahead of libvgpu.so).
    if (*kSanitizerRuntime != '\0') env_.push_back("LD_PRELOAD=" + PreloadList(""));
  }

  // Runs `vgpu ARGS` to completion; returns stdout, sets the exit code. stderr goes to the log
  // file `err` (read with Err()).
  std::string Vgpu(std::vector<std::string> args, int* code) {
    std::vector<std::string> argv = {"/bin/sh", "-c", Quote(VGPU_BIN)};
    for (const std::string& a : args) argv[2] += " " + Quote(a);
    argv[2] += " 2>" + dir_ + "/err";
    return RunToCompletion(argv, env_, code);
  }
  std::string Err() const {
    std::ifstream in(dir_ + "/err");
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }
  static std::string Quote(const std::string& s) {
    std::string q = "'";
    for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
  }
  size_t SliceCount() const {
    std::error_code ec;
    size_t n = 0;
    for (auto& e : std::filesystem::directory_iterator(dir_ + "/state/slices", ec)) {
      (void)e;
      ++n;
    }
    return n;
  }

  TempDir tmp_{"vgpu-cli"};
  std::string dir_;
  std::vector<std::string> env_;
};

}  // namespace vgpu::testing
