#include "mig/profiles.h"

#include <gtest/gtest.h>

#include <set>

namespace vgpu::mig {
namespace {

TEST(MigProfiles, EveryTableIsWellFormed) {
  ASSERT_EQ(AllModels().size(), 5u);
  for (const ModelTable& m : AllModels()) {
    SCOPED_TRACE(std::string(m.key));
    ASSERT_EQ(m.profiles.size(), 7u);
    std::set<int> ids;
    std::set<std::string_view> names;
    int me = 0;
    for (const Profile& p : m.profiles) {
      SCOPED_TRACE(std::string(p.name));
      EXPECT_TRUE(ids.insert(p.profile_id).second);
      EXPECT_TRUE(names.insert(p.name).second);
      EXPECT_GE(p.memory_slices, 1);
      EXPECT_LE(p.memory_slices, kMemorySlices);
      EXPECT_GE(p.compute_slices, 1);
      EXPECT_LE(p.compute_slices, kComputeSlices);
      EXPECT_GT(p.sm_count, 0);
      EXPECT_LE(p.sm_count, m.sm_count);
      EXPECT_GT(p.memory_mib, 0);
      EXPECT_LE(p.memory_mib, m.memory_mib);
      EXPECT_GE(p.max_count, 1);
      EXPECT_LE(p.max_count, kMaxInstances);
      ASSERT_FALSE(p.Starts().empty());
      for (int s : p.Starts()) {
        EXPECT_LE(s + p.memory_slices, kMemorySlices) << "placement runs past slice 7";
        EXPECT_EQ(s % p.memory_slices, 0) << "placements are aligned to their size";
      }
      // The name starts with "<compute slices>g.".
      EXPECT_EQ(p.name.substr(0, 3), std::to_string(p.compute_slices) + "g.");
      EXPECT_EQ(p.media_extensions, p.name.ends_with("+me"));
      if (p.media_extensions) {
        ++me;
        EXPECT_EQ(p.max_count, 1);
        EXPECT_EQ(p.engines.ofa, 1);
      }
      EXPECT_EQ(m.Find(p.name), &p);
      EXPECT_EQ(m.FindById(p.profile_id), &p);
      EXPECT_EQ(m.IndexOf(p.name), m.IndexOf(&p));
    }
    EXPECT_EQ(me, 1);
    // Memory grows with memory slices.
    for (const Profile& a : m.profiles) {
      for (const Profile& b : m.profiles) {
        if (a.memory_slices < b.memory_slices) {
          EXPECT_LT(a.memory_mib, b.memory_mib);
        }
      }
    }
  }
}

// Facts from `nvidia-smi mig -lgip/-lgipp` (docs/mig.md lists the sources).
TEST(MigProfiles, H200MatchesNvidiaSmi) {
  const ModelTable* m = ModelByKey("H200");
  ASSERT_NE(m, nullptr);
  EXPECT_FALSE(m->placements_confirmed);
  const Profile* seven = m->Find("7g.141gb");
  ASSERT_NE(seven, nullptr);
  EXPECT_EQ(seven->profile_id, 0);
  EXPECT_EQ(seven->sm_count, 132);
  EXPECT_EQ(seven->Starts(), std::vector<int>{0});
  EXPECT_EQ(seven->memory_slices, 8);
  const Profile* three = m->Find("3g.71gb");
  ASSERT_NE(three, nullptr);
  EXPECT_EQ(three->profile_id, 9);
  EXPECT_EQ(three->sm_count, 60);
  EXPECT_EQ(three->Starts(), (std::vector<int>{0, 4}));
  EXPECT_EQ(three->memory_slices, 4);
  EXPECT_EQ(three->memory_mib, 71168);  // 69.50 GiB
  const Profile* one = m->Find("1g.18gb");
  EXPECT_EQ(one->profile_id, 19);
  EXPECT_EQ(one->Starts(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(m->Find("1g.35gb")->sm_count, 26);
  EXPECT_EQ(m->Find("1g.35gb")->Starts(), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(m->Find("2g.35gb")->Starts(), (std::vector<int>{0, 2, 4}));
  EXPECT_EQ(m->Find("1g.18gb+me")->profile_id, 20);
  EXPECT_EQ(m->Find("1g.18gb+me")->nvml_index, 0x7);
  EXPECT_EQ(m->Find("4g.71gb")->profile_id, 5);
  EXPECT_EQ(m->Find("2g.35gb")->profile_id, 14);
}

TEST(MigProfiles, H100AndA100Facts) {
  const ModelTable* h = ModelByKey("H100-80GB");
  ASSERT_NE(h, nullptr);
  EXPECT_TRUE(h->placements_confirmed);
  EXPECT_EQ(h->Find("3g.40gb")->memory_mib, 40448);  // the guide's MPS example
  EXPECT_EQ(h->Find("7g.80gb")->sm_count, 132);
  const ModelTable* a = ModelByKey("A100-40GB");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->Find("7g.40gb")->sm_count, 98);
  EXPECT_EQ(a->Find("3g.20gb")->sm_count, 42);
  EXPECT_EQ(a->Find("1g.5gb")->memory_mib, 4864);  // 4.75 GiB
  EXPECT_NE(ModelByKey("A100-80GB")->Find("1g.10gb"), nullptr);
  EXPECT_NE(ModelByKey("H100-94GB")->Find("7g.94gb"), nullptr);
}

TEST(MigProfiles, LookupByKeyAndNvmlName) {
  EXPECT_EQ(ModelByKey("h200")->key, "H200");
  EXPECT_EQ(ModelByKey("H100")->key, "H100-80GB");
  EXPECT_EQ(ModelByKey("T4"), nullptr);
  EXPECT_EQ(ModelByNvmlName("NVIDIA H200")->key, "H200");
  EXPECT_EQ(ModelByNvmlName("NVIDIA H200 NVL")->key, "H200");
  EXPECT_EQ(ModelByNvmlName("NVIDIA H100 80GB HBM3")->key, "H100-80GB");
  EXPECT_EQ(ModelByNvmlName("NVIDIA H100 NVL")->key, "H100-94GB");
  EXPECT_EQ(ModelByNvmlName("NVIDIA A100-SXM4-80GB")->key, "A100-80GB");
  EXPECT_EQ(ModelByNvmlName("A100-SXM4-40GB")->key, "A100-40GB");
  EXPECT_EQ(ModelByNvmlName("H200-SXM5")->key, "H200");
  EXPECT_EQ(ModelByNvmlName("vgpu simulated H200 (140 GiB)")->key, "H200");
  EXPECT_EQ(ModelByNvmlName("vgpu simulated H100 (80 GiB)")->key, "H100-80GB");
  EXPECT_EQ(ModelByNvmlName("Tesla T4"), nullptr);
  EXPECT_EQ(FindModel("NVIDIA H200")->key, "H200");
  EXPECT_EQ(FindModel("A100-80GB")->key, "A100-80GB");
}

TEST(MigProfiles, ResourceNamesFollowNvidiaMixedStrategy) {
  const ModelTable* m = ModelByKey("H200");
  EXPECT_EQ(ResourceNameOf(*m->Find("1g.18gb")), "nvidia.com/mig-1g.18gb");
  EXPECT_EQ(ResourceNameOf(*m->Find("1g.18gb+me")), "nvidia.com/mig-1g.18gb.me");
  EXPECT_EQ(m->Find("1g.18gb.me"), m->Find("1g.18gb+me"));
  EXPECT_EQ(m->Find("1g.18gb.xx"), nullptr);
  EXPECT_EQ(m->Find("5g.99gb"), nullptr);
}

}  // namespace
}  // namespace vgpu::mig
