// Test helpers for the `vgpu bench ... --json` commands: run one and parse its report, find a
// tenant in it. Test-only, header-only (gtest and nlohmann-json).
#pragma once

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.h"

namespace vgpu::testing {

// Runs `command_line` (a shell command) expecting exit 0 and a JSON report on stdout; an empty
// object (and a test failure) otherwise.
inline nlohmann::json RunJson(const std::string& command_line) {
  CommandResult r = RunCommand(command_line);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return nlohmann::json::object();
  nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.out;
  return j;
}

// The tenant `name` of a report's "tenants" (a test failure and an empty object when missing).
inline const nlohmann::json& FindTenant(const nlohmann::json& report, const std::string& name) {
  for (const nlohmann::json& t : report["tenants"]) {
    if (t["name"] == name) return t;
  }
  static const nlohmann::json kNone = nlohmann::json::object();
  ADD_FAILURE() << "no tenant " << name;
  return kNone;
}

}  // namespace vgpu::testing
