// The fixture of the `vgpu sim` command-line tests (sim_cli_test, replay_cli_test): a private
// directory for the trace files a test writes, `vgpu sim` runs, and the check of a bad-input
// exit.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/run_command.h"

namespace vgpu {

class SimCliFixture : public ::testing::Test {
 protected:
  // `name` tells the directory apart: /tmp/vgpu-<name>-<pid>.
  explicit SimCliFixture(const std::string& name)
      : dir_("/tmp/vgpu-" + name + "-" + std::to_string(getpid())) {}

  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // Writes `text` to dir_/name; returns the path.
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }
  testing::CommandResult Sim(const std::string& args) {
    return testing::RunCommand(std::string(VGPU_BIN) + " sim --quiet --threads 2 " + args);
  }
  // Expects exit 2 and `message` on stderr (and no internal error).
  void ExpectBadInput(const std::string& args, const std::string& message) {
    auto r = Sim(args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << args << "\nstderr: " << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  }

  std::string dir_, nodes_, pods_;
};

}  // namespace vgpu
