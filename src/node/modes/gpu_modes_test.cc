#include "node/modes/gpu_modes.h"

#include <gtest/gtest.h>

namespace vgpu::node {
namespace {

TEST(GpuModes, ParsesEntriesAndTheFirstMatchDecides) {
  auto c = ParseGpuModeConfig(R"(version: v1
gpus:
  - devices: [1]
    mode: mig
    mig-devices:
      "3g.71gb": 1
      "1g.18gb": 2
      "2g.35gb": 0
  - devices: [2, 3]
    model: H200
    mode: mig-dynamic
  - devices: all
    mode: shared
)",
                              "modes.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  ASSERT_EQ(c->entries.size(), 3u);
  const GpuModeEntry* e1 = EntryFor(*c, 1, "H200");
  ASSERT_NE(e1, nullptr);
  EXPECT_EQ(e1->mode, GpuMode::kMig);
  ASSERT_EQ(e1->mig_devices.size(), 2u);  // zero counts are dropped
  EXPECT_EQ(e1->mig_devices[0], (std::pair<std::string, int>("3g.71gb", 1)));
  EXPECT_EQ(EntryFor(*c, 2, "H200")->mode, GpuMode::kMigDynamic);
  EXPECT_EQ(EntryFor(*c, 2, "H100-80GB")->mode, GpuMode::kShared);  // the model filter
  EXPECT_EQ(EntryFor(*c, 0, "")->mode, GpuMode::kShared);
  GpuModeConfig none;
  EXPECT_EQ(EntryFor(none, 0, ""), nullptr);
}

TEST(GpuModes, ErrorsNameTheFileLineAndKey) {
  struct Case {
    const char* yaml;
    const char* want;
  } cases[] = {
      {"version: v2\ngpus: []\n", "version"},
      {"version: v1\ngpus:\n  - devices: all\n    mode: fast\n", "modes.yaml:4:11: gpus[0].mode"},
      {"version: v1\ngpus:\n  - devices: all\n    mode: mig\n", "mig-devices"},
      {"version: v1\ngpus:\n  - devices: all\n    mode: shared\n    mig-devices: {\"1g.18gb\": "
       "1}\n",
       "only for mode mig"},
      {"version: v1\ngpus:\n  - devices: [x]\n    mode: shared\n", "gpus[0].devices"},
      {"version: v1\ngpus:\n  - devices: all\n    mode: mig\n    mig-devices: {\"big\": 1}\n",
       "not a MIG profile"},
      {"version: v1\ngpus:\n  - devices: all\n    mode: mig\n    mig-devices: {\"1g.18gb\": 9}\n",
       "not a count"},
      {"version: v1\ngpus:\n  - devices: all\n    mod: shared\n", "unknown key \"mod\""},
      {"version: v1\ngpus: [\n", "modes.yaml:"},
      {"version: v1\ngpus:\n  - devices: all\n    model: H100\n    mode: mig-dynamic\n",
       "modes.yaml:4:12: gpus[0].model: \"H100\" is not a MIG table key (known: A30, "},
      {"version: v1\ngpus:\n  - devices: all\n    model: NVIDIA H200\n    mode: mig-dynamic\n",
       "is not a MIG table key (use its key H200)"},
  };
  for (const Case& c : cases) {
    auto r = ParseGpuModeConfig(c.yaml, "modes.yaml");
    ASSERT_FALSE(r) << c.yaml;
    EXPECT_EQ(r.error().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.error().message().find(c.want), std::string::npos) << r.error().message();
  }
  EXPECT_EQ(LoadGpuModeConfig("/nonexistent/modes.yaml").error().code(), StatusCode::kNotFound);
}

// A device index the node does not have is an error at its file:line, before anything changes;
// a model key is spelled as the tables spell it.
TEST(GpuModes, UnknownDevicesAreRefusedWhereTheyAreWritten) {
  auto c = ParseGpuModeConfig(R"(version: v1
gpus:
  - devices: [0, 1]
    model: h200
    mode: mig-dynamic
  - devices: [9]
    mode: mig
    mig-devices: {"3g.71gb": 2}
)",
                              "modes.yaml");
  ASSERT_TRUE(c) << c.error().ToString();
  EXPECT_EQ(c->entries[0].model, "H200");
  EXPECT_TRUE(CheckGpuModeDevices(*c, {0, 1, 2, 3, 9}).ok());
  const Status s = CheckGpuModeDevices(*c, {0, 1, 2, 3});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "modes.yaml:6:15: devices: GPU 9 does not exist on this node (its GPUs: 0, 1, 2, 3); "
            "nothing was changed");
  EXPECT_NE(CheckGpuModeDevices(*c, {1}).message().find("modes.yaml:3:15: devices: GPU 0"),
            std::string::npos);
  // `all` names no index.
  auto all = ParseGpuModeConfig("version: v1\ngpus:\n  - devices: all\n    mode: shared\n", "m");
  EXPECT_TRUE(CheckGpuModeDevices(*all, {}).ok());
}

}  // namespace
}  // namespace vgpu::node
