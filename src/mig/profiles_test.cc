#include "mig/profiles.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace vgpu::mig {
namespace {

TEST(MigProfiles, EveryTableIsWellFormed) {
  ASSERT_EQ(AllModels().size(), 8u);
  std::set<std::string_view> keys, all_names;
  for (const ModelTable& m : AllModels()) {
    SCOPED_TRACE(std::string(m.key));
    EXPECT_TRUE(keys.insert(m.key).second);
    EXPECT_FALSE(m.source.empty());
    ASSERT_NE(m.gpu, nullptr);
    EXPECT_EQ(m.key, m.gpu->mig_table);
    EXPECT_FALSE(m.gpu->nvml_names.empty());
    EXPECT_FALSE(m.gpu->pci_device_ids.empty());
    for (std::string_view n : m.gpu->nvml_names) EXPECT_TRUE(all_names.insert(n).second) << n;
    if (m.gpu->sim) {
      EXPECT_TRUE(all_names.insert(m.gpu->sim->name).second) << m.gpu->sim->name;
    }
    EXPECT_LE(m.memory_slices, kMemorySlices);
    EXPECT_LE(m.compute_slices, kComputeSlices);
    EXPECT_LE(m.max_instances, kMaxInstances);
    std::set<int> ids;
    std::set<std::string_view> names;
    int me = 0, whole = 0;
    for (const Profile& p : m.profiles) {
      SCOPED_TRACE(std::string(p.name));
      EXPECT_TRUE(ids.insert(p.profile_id).second);
      EXPECT_TRUE(names.insert(p.name).second);
      EXPECT_GE(p.memory_slices, 1);
      EXPECT_LE(p.memory_slices, m.memory_slices);
      EXPECT_GE(p.compute_slices, 1);
      EXPECT_LE(p.compute_slices, m.compute_slices);
      EXPECT_GT(p.sm_count, 0);
      EXPECT_LE(p.sm_count, m.gpu->sm_count);
      EXPECT_GT(p.memory_mib, 0);
      EXPECT_LT(p.memory_mib, m.gpu->memory_mib);
      EXPECT_EQ(p.memory_mib % 64, 0) << "nvidia-smi's two decimals name a 1/16 GiB multiple";
      EXPECT_GE(p.max_count, 1);
      EXPECT_LE(p.max_count, m.max_instances);
      ASSERT_FALSE(p.Starts().empty());
      for (int s : p.Starts()) {
        EXPECT_LE(s + p.memory_slices, m.memory_slices) << "placement runs past the last slice";
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
      whole += p.memory_slices == m.memory_slices ? 1 : 0;
      EXPECT_EQ(m.Find(p.name), &p);
      EXPECT_EQ(m.FindById(p.profile_id), &p);
      EXPECT_EQ(m.IndexOf(p.name), m.IndexOf(&p));
    }
    EXPECT_GE(me, 1);
    EXPECT_EQ(whole, 1);
    EXPECT_GT(m.EngineBudget().copy, 0);
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

// Sizes as NVML reports them: the smallest published `nvidia-smi mig -lgip` figure, GiB x 1024
// (profiles_tables.cc names each source).
TEST(MigProfiles, SizesAreTheSmallestPublishedNvidiaSmiFigures) {
  struct Row {
    std::string_view model, profile;
    int64_t mib;
    int sms;
  };
  const Row rows[] = {
      {"A30", "1g.6gb", 5952, 14},          {"A30", "2g.12gb+me", 11968, 28},
      {"A30", "4g.24gb", 24000, 56},        {"A100-40GB", "1g.5gb", 4864, 14},
      {"A100-40GB", "2g.10gb", 9856, 28},   {"A100-40GB", "7g.40gb", 40192, 98},
      {"A100-80GB", "1g.10gb", 9728, 14},   {"A100-80GB", "7g.80gb", 80640, 98},
      {"H100-80GB", "3g.40gb", 40448, 60},  {"H100-80GB", "7g.80gb", 81152, 132},
      {"H100-PCIe", "1g.20gb", 20096, 14},  {"H100-PCIe", "7g.80gb", 81152, 114},
      {"H100-NVL", "1g.12gb", 10880, 16},   {"H100-NVL", "3g.47gb", 47232, 60},
      {"H100-NVL", "7g.94gb", 94848, 132},  {"H200", "1g.18gb", 16384, 16},
      {"H200", "2g.35gb", 33024, 32},       {"H200", "7g.141gb", 143104, 132},
      {"GH200-96GB", "1g.12gb", 11264, 16}, {"GH200-96GB", "7g.96gb", 95232, 132},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(std::string(r.model) + " " + std::string(r.profile));
    const ModelTable* m = ModelByKey(r.model);
    ASSERT_NE(m, nullptr);
    const Profile* p = m->Find(r.profile);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->memory_mib, r.mib);
    EXPECT_EQ(p->sm_count, r.sms);
  }
  // The A30: 4 slices, its own profile ids, one JPEG and OFA engine in all.
  const ModelTable* a30 = ModelByKey("A30");
  EXPECT_EQ(a30->memory_slices, 4);
  EXPECT_EQ(a30->max_instances, 4);
  EXPECT_EQ(a30->Find("1g.6gb")->profile_id, 14);
  EXPECT_EQ(a30->Find("2g.12gb")->Starts(), (std::vector<int>{0, 2}));
  EXPECT_EQ(a30->EngineBudget().ofa, 1);
  // H200 geometry from -lgip; its placements are H100's (unconfirmed).
  const ModelTable* h200 = ModelByKey("H200");
  EXPECT_FALSE(h200->placements_confirmed);
  EXPECT_EQ(h200->Find("3g.71gb")->profile_id, 9);
  EXPECT_EQ(h200->Find("3g.71gb")->Starts(), (std::vector<int>{0, 4}));
  EXPECT_EQ(h200->Find("1g.35gb")->Starts(), (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(h200->Find("1g.18gb+me")->nvml_index, 0x7);
  EXPECT_EQ(h200->Find("7g.141gb")->Starts(), std::vector<int>{0});
}

TEST(MigProfiles, FittingProfilesAreSmallestFirstWithoutMediaExtensions) {
  const ModelTable* h200 = ModelByKey("H200");
  ASSERT_NE(h200, nullptr);
  std::vector<std::string> names;
  for (int q : h200->Fitting(h200->Find("1g.18gb")->memory_mib)) {
    names.emplace_back(h200->profiles[q].name);
  }
  // 1g.18gb first, its +me twin never; of two profiles with the same memory, the one with fewer
  // compute slices first (1g.35gb before 2g.35gb).
  ASSERT_GE(names.size(), 4u);
  EXPECT_EQ(names[0], "1g.18gb");
  EXPECT_EQ(names[1], "1g.35gb");
  EXPECT_EQ(names[2], "2g.35gb");
  EXPECT_EQ(names.back(), "7g.141gb");
  for (const std::string& n : names) EXPECT_EQ(n.find("+me"), std::string::npos) << n;
  for (size_t i = 1; i < names.size(); ++i) {
    EXPECT_LE(h200->Find(names[i - 1])->memory_mib, h200->Find(names[i])->memory_mib);
  }
  // Exactly the whole GPU's memory fits only the whole GPU; one MiB more fits nothing.
  const int64_t whole = h200->Find("7g.141gb")->memory_mib;
  EXPECT_EQ(h200->Fitting(whole).size(), 1u);
  EXPECT_TRUE(h200->Fitting(whole + 1).empty());
  size_t plain = 0;
  for (const Profile& p : h200->profiles) plain += p.media_extensions ? 0 : 1;
  EXPECT_EQ(h200->Fitting(0).size(), plain);
}

TEST(MigProfiles, IdentificationIsExact) {
  auto key = [](std::string_view name, int64_t mib, uint32_t pci = 0) -> std::string {
    const ModelMatch m = IdentifyModel({name, mib, pci});
    return m.table ? std::string(m.table->key) : "none";
  };
  // The GH200's own table, not the H200's.
  EXPECT_EQ(key("NVIDIA GH200 480GB", 97871), "GH200-96GB");
  EXPECT_EQ(key("NVIDIA GH200 480GB", 97871, 0x234210DE), "GH200-96GB");
  EXPECT_EQ(IdentifyModel({"NVIDIA GH200 480GB", 97871, 0}).table->profiles.front().name,
            "1g.12gb");
  // The PCIe card's table (114 SMs), not the SXM5 card's.
  EXPECT_EQ(key("NVIDIA H100 PCIe", 81559), "H100-PCIe");
  EXPECT_EQ(ModelByKey("H100-PCIe")->gpu->sm_count, 114);
  EXPECT_EQ(key("NVIDIA H100 80GB HBM3", 81559, 0x233010DE), "H100-80GB");
  EXPECT_EQ(key("NVIDIA H100 NVL", 95830), "H100-NVL");
  EXPECT_EQ(key("NVIDIA H200", 143771), "H200");
  EXPECT_EQ(key("NVIDIA A100-SXM4-40GB", 40536), "A100-40GB");
  EXPECT_EQ(key("A100-SXM4-40GB", 40960), "A100-40GB");  // older drivers: no "NVIDIA " prefix
  EXPECT_EQ(key("NVIDIA A100 80GB PCIe", 81920), "A100-80GB");
  EXPECT_EQ(key("NVIDIA A30", 24258), "A30");
  EXPECT_EQ(key("vgpu simulated H200 (140 GiB)", 143771, 0x233510DE), "H200");
  EXPECT_EQ(key("vgpu simulated H100 (80 GiB)", 81920, 0x233010DE), "H100-80GB");
  // Never a neighbour's table.
  EXPECT_EQ(key("NVIDIA H100", 95830), "none");               // the SXM5 94GB card
  EXPECT_EQ(key("NVIDIA H200", 81559), "none");               // another memory: another model
  EXPECT_EQ(key("NVIDIA H200", 0), "none");                   // memory unknown
  EXPECT_EQ(key("NVIDIA H200", 143771, 0x233B10DE), "none");  // another PCI device
  EXPECT_EQ(key("NVIDIA H200 NVL", 143771), "none");
  EXPECT_EQ(key("H200-SXM5", 143771), "none");
  EXPECT_EQ(key("NVIDIA GH200 144G HBM3e", 146944), "none");
  EXPECT_EQ(key("vgpu simulated H100 (8 GiB)", 8192, 0x233010DE), "none");
  EXPECT_EQ(key("Tesla T4", 15360), "none");
  // One clear reason.
  const ModelMatch gh144 = IdentifyModel({"NVIDIA GH200 144G HBM3e", 146944, 0x234810DE});
  EXPECT_NE(gh144.why.find("vgpu has no MIG table for the NVIDIA GH200 144G HBM3e"),
            std::string::npos)
      << gh144.why;
  EXPECT_NE(gh144.why.find("3g, 4g and 7g sizes are not documented"), std::string::npos);
  EXPECT_NE(gh144.why.find("no MIG offers"), std::string::npos);
  const ModelMatch h200 = IdentifyModel({"NVIDIA H200", 81559, 0});
  EXPECT_EQ(h200.why,
            "\"NVIDIA H200\" with 81559 MiB: the H200 table is for 143771 MiB (within 3%); another "
            "memory size is another model, without a table: no MIG offers");
  EXPECT_NE(IdentifyModel({"NVIDIA L4", 23034, 0}).why.find("not a MIG model"), std::string::npos);
}

TEST(MigProfiles, LookupByKeyOrExactName) {
  EXPECT_EQ(ModelByKey("h200")->key, "H200");
  EXPECT_EQ(ModelByKey("H100"), nullptr);  // no shorthand: SXM5, PCIe or NVL?
  EXPECT_EQ(ModelByKey("T4"), nullptr);
  EXPECT_EQ((*LookupModel("NVIDIA GH200 480GB"))->key, "GH200-96GB");
  EXPECT_EQ((*LookupModel("NVIDIA H100 PCIe"))->key, "H100-PCIe");
  EXPECT_EQ((*LookupModel("A100-80GB"))->key, "A100-80GB");
  auto b200 = LookupModel("NVIDIA B200");
  ASSERT_FALSE(b200);
  EXPECT_EQ(b200.error().code(), StatusCode::kNotFound);
  EXPECT_NE(b200.error().message().find("mig-parted#166"), std::string::npos);
  auto h100 = LookupModel("H100");
  ASSERT_FALSE(h100);
  EXPECT_NE(h100.error().message().find("known: A30, A100-40GB, A100-80GB, H100-80GB, H100-PCIe"),
            std::string::npos)
      << h100.error().message();
}

// src/hw's table of GPU models and these tables agree: every model with a mig_table has exactly
// that table, over that model; every MIG-capable model without one is an untabled model; and the
// other models are neither.
TEST(MigProfiles, EveryMigCapableModelOfHwHasItsTableOrItsReason) {
  size_t tabled = 0, untabled = 0;
  for (const hw::GpuModel& g : hw::AllGpuModels()) {
    SCOPED_TRACE(std::string(g.key));
    const bool listed_untabled = std::any_of(UntabledModels().begin(), UntabledModels().end(),
                                             [&](const UntabledModel& u) { return u.gpu == &g; });
    if (!g.mig_table.empty()) {
      const ModelTable* t = ModelByKey(g.mig_table);
      ASSERT_NE(t, nullptr);
      EXPECT_EQ(t->gpu, &g);
      EXPECT_EQ(t->key, g.mig_table);
      EXPECT_FALSE(listed_untabled);
      ++tabled;
    } else if (g.mig_capable) {
      EXPECT_TRUE(listed_untabled) << "a MIG-capable model without a table needs its reason";
      ++untabled;
    } else {
      EXPECT_FALSE(listed_untabled);
      EXPECT_EQ(ModelByKey(g.key), nullptr);
    }
  }
  EXPECT_EQ(tabled, AllModels().size());
  EXPECT_EQ(untabled, UntabledModels().size());
  for (const UntabledModel& u : UntabledModels()) {
    ASSERT_NE(u.gpu, nullptr);
    EXPECT_TRUE(u.gpu->mig_capable);
    EXPECT_TRUE(u.gpu->mig_table.empty());
    EXPECT_FALSE(u.why.empty());
  }
}

TEST(MigProfiles, OwnedTableKeepsTheReportedGeometry) {
  const ModelTable& h200 = *ModelByKey("H200");
  std::vector<ReportedProfile> reported;
  for (const Profile& p : h200.profiles) {
    reported.push_back({p.profile_id, std::string(p.name), p.memory_slices, p.compute_slices,
                        p.sm_count, p.memory_mib, p.max_count, p.Starts(), p.engines});
  }
  const OwnedTable owned(std::move(reported));
  const ModelTable& t = owned.table();
  EXPECT_EQ(t.memory_slices, 8);
  EXPECT_EQ(t.compute_slices, 7);
  EXPECT_EQ(t.max_instances, 7);
  ASSERT_EQ(t.profiles.size(), h200.profiles.size());
  for (size_t i = 0; i < t.profiles.size(); ++i) {
    EXPECT_EQ(t.profiles[i].name, h200.profiles[i].name);
    EXPECT_EQ(t.profiles[i].start_mask, h200.profiles[i].start_mask);
    EXPECT_EQ(t.profiles[i].media_extensions, h200.profiles[i].media_extensions);
  }
  EXPECT_EQ(t.EngineBudget().ofa, 1);
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
