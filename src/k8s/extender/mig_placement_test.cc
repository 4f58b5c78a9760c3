#include "k8s/extender/mig_placement.h"

#include <gtest/gtest.h>

namespace vgpu::k8s {
namespace {

InventoryGpu Gpu(int index, GpuMode mode, std::vector<InventoryMigInstance> mig = {}) {
  InventoryGpu g{"GPU-" + std::to_string(index), index, "NVIDIA H200", 143771, 10, true, 0, {}};
  g.mode = mode;
  g.mig = std::move(mig);
  return g;
}

PodAssignment Holding(const std::string& gpu, AssignedMig m) {
  PodAssignment a;
  a.node = "n";
  a.containers.push_back({"main", false, -1, {{gpu, 0, 1000, 1, 100, m}}});
  return a;
}

MigRequest Mem(int64_t gib) { return {"", gib * 1024, std::nullopt}; }

TEST(MigPlacement, DynamicGpuGetsTheSmallestFittingProfile) {
  NodeInventory node;
  node.gpus.push_back(Gpu(0, GpuMode::kMigDynamic));
  std::vector<PodAssignment> on_node;
  auto a = ChooseMig(node, on_node, Mem(10));
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  EXPECT_EQ(a->mig.profile, "1g.18gb");
  EXPECT_TRUE(a->mig.uuid.empty());
  EXPECT_EQ(a->memory_mib, 10 * 1024);  // a software slice inside the instance
  on_node.push_back(Holding("GPU-0", a->mig));
  auto b = ChooseMig(node, on_node, Mem(30));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->mig.profile, "1g.35gb");  // 33024 MiB, the smallest (memory, slices) >= 30 GiB
  on_node.push_back(Holding("GPU-0", b->mig));
  auto c = ChooseMig(node, on_node, Mem(69));
  ASSERT_TRUE(c.has_value()) << c.error().ToString();
  EXPECT_EQ(c->mig.profile, "3g.71gb");
  EXPECT_EQ(c->memory_mib, 69 * 1024);
  // The three do not overlap.
  mig::Layout l{mig::ModelByKey("H200"), {}};
  for (const auto& x : {*a, *b, *c}) {
    ASSERT_TRUE(mig::Add(&l, {l.table->IndexOf(x.mig.profile), x.mig.start}).ok())
        << mig::FormatLayout(l) << " + " << x.mig.profile << "@" << x.mig.start;
  }
  on_node.push_back(Holding("GPU-0", c->mig));
  // 70 GiB is more than a 3g.71gb's 69.5 GiB; the 7g does not fit any more.
  auto d = ChooseMig(node, on_node, Mem(70));
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().code(), StatusCode::kResourceExhausted);
  EXPECT_NE(d.error().message().find("no fitting MIG profile has a free placement"),
            std::string::npos)
      << d.error().message();
}

// The table is the exact model's: a GH200 gets its own sizes (1g.12gb is 11264 MiB, not the
// H200's 1g.18gb), an H100 NVL its published ones, and a model vgpu has no table for
// (the 94GB SXM5 "NVIDIA H100", a GH200 144G) no MIG offer at all, with the reason.
TEST(MigPlacement, OnlyTheExactModelsTableMakesOffers) {
  auto one = [](const std::string& model, int64_t memory_mib) {
    NodeInventory node;
    InventoryGpu g{"GPU-0", 0, model, memory_mib, 10, true, 0, {}};
    g.mode = GpuMode::kMigDynamic;
    node.gpus.push_back(g);
    return node;
  };
  auto gh200 = ChooseMig(one("NVIDIA GH200 480GB", 97871), {}, Mem(11));  // 11264 MiB
  ASSERT_TRUE(gh200.has_value()) << gh200.error().ToString();
  EXPECT_EQ(gh200->mig.profile, "1g.12gb");
  auto more = ChooseMig(one("NVIDIA GH200 480GB", 97871), {}, {"", 11300, std::nullopt});
  ASSERT_TRUE(more.has_value());
  EXPECT_EQ(more->mig.profile, "1g.24gb");
  auto nvl = ChooseMig(one("NVIDIA H100 NVL", 95830), {}, {"", 11000, std::nullopt});
  ASSERT_TRUE(nvl.has_value());
  EXPECT_EQ(nvl->mig.profile, "1g.24gb");  // its 1g.12gb has 10880 MiB, not the nominal 11776
  auto pcie =
      ChooseMig(one("NVIDIA H100 PCIe", 81559), {}, {"3g.40gb", std::nullopt, std::nullopt});
  ASSERT_TRUE(pcie.has_value()) << pcie.error().ToString();
  for (const auto& [model, mib] : {std::pair<std::string, int64_t>{"NVIDIA H100", 95830},
                                   {"NVIDIA GH200 144G HBM3e", 146944},
                                   {"NVIDIA H200", 95830}}) {
    auto none = ChooseMig(one(model, mib), {}, Mem(10));
    ASSERT_FALSE(none.has_value()) << model;
    EXPECT_EQ(none.error().code(), StatusCode::kResourceExhausted);
    EXPECT_NE(none.error().message().find("no MIG offers"), std::string::npos)
        << none.error().message();
  }
}

TEST(MigPlacement, StaticGpuHandsOutFreeInstancesByNameOrMemory) {
  NodeInventory node;
  node.gpus.push_back(Gpu(
      0, GpuMode::kMig,
      {{"3g.71gb", 0, "MIG-a", 9}, {"1g.18gb", 4, "MIG-b", 19}, {"1g.18gb+me", 5, "MIG-c", 20}}));
  std::vector<PodAssignment> on_node;
  auto a = ChooseMig(node, on_node, {"1g.18gb", std::nullopt, std::nullopt});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->mig.uuid, "MIG-b");
  EXPECT_EQ(a->memory_mib, 16384);
  on_node.push_back(Holding("GPU-0", a->mig));
  auto again = ChooseMig(node, on_node, {"1g.18gb", std::nullopt, std::nullopt});
  ASSERT_FALSE(again.has_value());
  EXPECT_NE(again.error().message().find("no free 1g.18gb instance"), std::string::npos);
  // NVIDIA's resource spelling of +me.
  ASSERT_EQ(MigProfileOfResource("nvidia.com/mig-1g.18gb.me"), "1g.18gb.me");
  EXPECT_EQ(MigProfileOfResource("nvidia.com/gpu"), std::nullopt);
  auto me = ChooseMig(node, on_node, {"1g.18gb.me", std::nullopt, std::nullopt});
  ASSERT_TRUE(me.has_value());
  EXPECT_EQ(me->mig.uuid, "MIG-c");
  auto big = ChooseMig(node, on_node, Mem(40));
  ASSERT_TRUE(big.has_value());
  EXPECT_EQ(big->mig.uuid, "MIG-a");
  EXPECT_EQ(big->mig.start, 0);
}

TEST(MigPlacement, OtherModesAreNeverMigCandidatesAndStaticBeatsDynamic) {
  NodeInventory node;
  node.gpus.push_back(Gpu(0, GpuMode::kShared));
  node.gpus.push_back(Gpu(1, GpuMode::kMps));
  auto none = ChooseMig(node, {}, Mem(10));
  ASSERT_FALSE(none.has_value());
  EXPECT_NE(none.error().message().find("no MIG GPU"), std::string::npos);
  node.gpus.push_back(Gpu(2, GpuMode::kMigDynamic));
  node.gpus.push_back(Gpu(3, GpuMode::kMig, {{"1g.18gb", 0, "MIG-x", 19}}));
  auto a = ChooseMig(node, {}, Mem(10));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->gpu_index, 3);  // an existing instance strands nothing
  EXPECT_EQ(a->mig.uuid, "MIG-x");
  // Unhealthy and excluded GPUs are skipped.
  node.gpus[3].healthy = false;
  PodGpuRequest pod;
  pod.nouse_uuids = {"GPU-2"};
  auto b = ChooseMig(node, {}, Mem(10), &pod);
  ASSERT_FALSE(b.has_value());
  EXPECT_EQ(ChooseMig(node, {}, {"", std::nullopt, std::nullopt}).error().code(),
            StatusCode::kInvalidArgument);
  EXPECT_EQ(ChooseMig(node, {}, {"9g.1gb", std::nullopt, std::nullopt}).error().code(),
            StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace vgpu::k8s
