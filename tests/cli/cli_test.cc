#include <gtest/gtest.h>

#include <string>

#include "run_command.h"

namespace vgpu {
namespace {

using testing::RunCommand;

const std::string kVgpu = VGPU_BIN;

TEST(Cli, NoArgumentsIsBadInput) {
  auto r = RunCommand(kVgpu);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("Usage"), std::string::npos);
}

TEST(Cli, HelpListsCommands) {
  auto r = RunCommand(kVgpu + " --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("version"), std::string::npos);
}

TEST(Cli, UnknownCommandIsBadInput) {
  auto r = RunCommand(kVgpu + " frobnicate");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, VersionAndItsHelp) {
  auto r = RunCommand(kVgpu + " version");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out.rfind("vgpu ", 0), 0u);
  EXPECT_EQ(RunCommand(kVgpu + " version --help").exit_code, 0);
  auto bad = RunCommand(kVgpu + " version --bogus");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--bogus"), std::string::npos);
}

}  // namespace
}  // namespace vgpu
