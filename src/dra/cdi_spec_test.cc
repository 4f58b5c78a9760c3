#include "dra/cdi_spec.h"

#include <gtest/gtest.h>

namespace vgpu::dra {
namespace {

using nlohmann::json;

json Spec(const json& edits) {
  return {{"kind", "vgpu.io/gpu"},
          {"devices", json::array({{{"name", "claim-x"}, {"containerEdits", edits}}})}};
}

// Each feature raises the version to the release that added it (the CDI spec's table).
TEST(CdiVersion, IsTheLowestThatHasEveryFeatureUsed) {
  const json mount = {{"hostPath", "/a"}, {"containerPath", "/b"}, {"options", {"ro", "bind"}}};
  EXPECT_EQ(MinimumCdiVersion(Spec({{"env", {"A=1"}}, {"mounts", {mount}}})), "0.3.0");
  json typed = mount;
  typed["type"] = "bind";
  EXPECT_EQ(MinimumCdiVersion(Spec({{"mounts", {typed}}})), "0.4.0");
  EXPECT_EQ(MinimumCdiVersion(Spec({{"deviceNodes", {{{"path", "/dev/x"}}}}})), "0.3.0");
  EXPECT_EQ(
      MinimumCdiVersion(Spec({{"deviceNodes", {{{"path", "/dev/x"}, {"hostPath", "/dev/y"}}}}})),
      "0.5.0");
  json digit = Spec(json::object());
  digit["devices"][0]["name"] = "0-claim";
  EXPECT_EQ(MinimumCdiVersion(digit), "0.5.0");
  json annotated = Spec(json::object());
  annotated["devices"][0]["annotations"] = {{"a", "b"}};
  EXPECT_EQ(MinimumCdiVersion(annotated), "0.6.0");
  json spec_annotated = Spec(json::object());
  spec_annotated["annotations"] = {{"a", "b"}};
  EXPECT_EQ(MinimumCdiVersion(spec_annotated), "0.6.0");
  json dotted = Spec(json::object());
  dotted["kind"] = "vgpu.io/gpu.v2";
  EXPECT_EQ(MinimumCdiVersion(dotted), "0.6.0");
  EXPECT_EQ(MinimumCdiVersion(Spec({{"additionalGids", {5}}})), "0.7.0");
  EXPECT_EQ(MinimumCdiVersion(Spec({{"intelRdt", {{"closID", "c"}}}})), "0.7.0");
  // Spec-level edits count as well, and the highest feature wins.
  json both = Spec({{"deviceNodes", {{{"path", "/dev/x"}, {"hostPath", "/dev/y"}}}}});
  both["containerEdits"] = {{"mounts", {typed}}};
  EXPECT_EQ(MinimumCdiVersion(both), "0.5.0");
}

// The driver's specs are 0.3.0, which every CDI runtime reads: a software slice (env, bind
// mounts) and a MIG device (device nodes at their host paths: no hostPath). A node at another
// path than the host's needs hostPath, 0.5.0.
TEST(CdiVersion, OfTheDriversSpecs) {
  node::ContainerAllocation software;
  software.envs["NVIDIA_VISIBLE_DEVICES"] = "GPU-1";
  software.mounts.push_back({"/etc/vgpu/limits", "/var/lib/vgpu/dra/slices/u_claim/limits", true});
  const json s = CdiSpec("u", software);
  EXPECT_EQ(s["cdiVersion"], "0.3.0");
  EXPECT_EQ(s["kind"], kCdiKind);
  EXPECT_EQ(s["devices"][0]["name"], "claim-u");
  EXPECT_FALSE(s["devices"][0]["containerEdits"].contains("deviceNodes"));
  node::ContainerAllocation mig = software;
  mig.devices.push_back({"/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap21", "rw"});
  const json m = CdiSpec("u", mig);
  EXPECT_EQ(m["cdiVersion"], "0.3.0");
  EXPECT_EQ(m["devices"][0]["containerEdits"]["deviceNodes"][0],
            json({{"path", "/dev/nvidia-caps/nvidia-cap21"}, {"permissions", "rw"}}));
  node::ContainerAllocation moved = software;
  moved.devices.push_back({"/dev/nvidia0", "/dev/nvidia3", "rw"});
  const json v = CdiSpec("u", moved);
  EXPECT_EQ(v["cdiVersion"], "0.5.0");
  EXPECT_EQ(v["devices"][0]["containerEdits"]["deviceNodes"][0]["hostPath"], "/dev/nvidia3");
}

}  // namespace
}  // namespace vgpu::dra
