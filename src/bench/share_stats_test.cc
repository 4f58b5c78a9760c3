// Expected shares of the bench (the arbiter's policy as a formula), window statistics, and the
// parsing of slice flags shared by vgpu run and vgpu bench share.
#include "bench/share_stats.h"

#include <gtest/gtest.h>

#include "bench/share.h"
#include "slice/slice_dir.h"

namespace vgpu::bench {
namespace {

TenantPolicy Capped(int max) {
  TenantPolicy p;
  p.max = max;
  return p;
}

TenantPolicy Elastic(int guarantee, int max = 100, int weight = 1) {
  TenantPolicy p;
  p.elastic = true;
  p.guarantee = guarantee;
  p.max = max;
  p.weight = weight;
  return p;
}

TEST(ShareStats, ExpectedSharesFollowThePolicy) {
  auto s = ExpectedShares({Capped(30), Capped(70)});
  EXPECT_NEAR(*s[0], 30, 1e-6);
  EXPECT_NEAR(*s[1], 70, 1e-6);
  s = ExpectedShares({Capped(50)});
  EXPECT_NEAR(*s[0], 50, 1e-6);  // alone at its cap
  s = ExpectedShares({Elastic(30)});
  EXPECT_NEAR(*s[0], 100, 1e-6);
  s = ExpectedShares({Elastic(30), Elastic(70)});
  EXPECT_NEAR(*s[0], 30, 1e-6);
  EXPECT_NEAR(*s[1], 70, 1e-6);
  s = ExpectedShares({Elastic(0, 100, 1), Elastic(0, 100, 3)});
  EXPECT_NEAR(*s[0], 25, 1e-6);
  EXPECT_NEAR(*s[1], 75, 1e-6);
  s = ExpectedShares({Elastic(40), Elastic(0, 100, 20)});
  EXPECT_NEAR(*s[0], 40, 1e-6);
  s = ExpectedShares({Capped(60), Capped(60)});  // over-committed: guarantees scaled
  EXPECT_NEAR(*s[0], 50, 1e-6);
  TenantPolicy high = Elastic(0);
  high.level = 1;
  TenantPolicy low = Elastic(0);
  low.level = 3;
  s = ExpectedShares({high, low});
  EXPECT_NEAR(*s[0], 100, 1e-6);
  EXPECT_NEAR(*s[1], 0, 1e-6);
  high.max = 30;
  s = ExpectedShares({high, low});
  EXPECT_NEAR(*s[1], 70, 1e-6);
  TenantPolicy latency;
  latency.saturating = false;
  s = ExpectedShares({latency, Capped(20)});
  EXPECT_FALSE(s[0].has_value());
  EXPECT_NEAR(*s[1], 20, 1e-6);
}

TEST(ShareStats, WindowsQuantilesAndConvergence) {
  std::vector<KernelRecord> r;
  for (uint64_t t = 0; t < 10; ++t) r.push_back({t * 100, t * 100, t * 100 + 30});
  EXPECT_NEAR(BusyPercent(r, 0, 1000), 30, 1e-9);
  EXPECT_NEAR(BusyPercent(r, 0, 50), 60, 1e-9);
  auto w = WindowPercents(r, 0, 1000, 500, 250);
  ASSERT_EQ(w.size(), 3u);
  EXPECT_NEAR(w[0], 30, 1e-9);
  EXPECT_EQ(Quantile({5, 1, 3, 2, 4}, 0.5), 3u);
  EXPECT_EQ(Quantile({5, 1, 3, 2, 4}, 1.0), 5u);
  EXPECT_EQ(Quantile({}, 0.5), 0u);
  EXPECT_EQ(ConvergedAfter({50, 40, 31, 29, 30}, 30, 3), 2);
  EXPECT_EQ(ConvergedAfter({30, 30}, 30, 3), 0);
  EXPECT_EQ(ConvergedAfter({30, 50}, 30, 3), -1);
}

TEST(SliceSpec, FlagsAreValidatedWithTheirNames) {
  slice::SliceFlags f;
  f.cores = "40";
  f.guarantee = "30";
  f.weight = "3";
  f.priority = "low";
  f.time_slice = "2ms";
  Result<slice::SliceSpec> s = slice::ParseSliceSpec(f);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_EQ(s->cores, 40);
  EXPECT_EQ(s->guarantee, 30);
  EXPECT_TRUE(s->elastic);
  EXPECT_EQ(s->weight, 3);
  EXPECT_EQ(s->priority, shm::kPriorityLow);
  EXPECT_EQ(s->time_slice_ns, 2000000u);
  std::string text = slice::LimitsText(*s, "/d", true, "/s/arbiter", "x");
  EXPECT_NE(text.find("cores=40\n"), std::string::npos);
  EXPECT_NE(text.find("guarantee=30\n"), std::string::npos);
  EXPECT_NE(text.find("mode=elastic\n"), std::string::npos);
  EXPECT_NE(text.find("priority=low\n"), std::string::npos);
  EXPECT_NE(text.find("arbiter_dir=/s/arbiter\n"), std::string::npos);
  f.guarantee = "50";
  EXPECT_NE(slice::ParseSliceSpec(f).error().message().find("--guarantee: \"50\""),
            std::string::npos);
  f = slice::SliceFlags{};
  f.priority = "urgent";
  EXPECT_NE(slice::ParseSliceSpec(f, "tenant a: ").error().message().find("tenant a: --priority"),
            std::string::npos);
  f = slice::SliceFlags{};
  f.weight = "0";
  EXPECT_FALSE(slice::ParseSliceSpec(f).has_value());
  f = slice::SliceFlags{};
  f.time_slice = "10s";
  EXPECT_FALSE(slice::ParseSliceSpec(f).has_value());
  f = slice::SliceFlags{};
  f.latency_slack = "1500us";
  s = slice::ParseSliceSpec(f);
  ASSERT_TRUE(s.has_value()) << s.error().message();
  EXPECT_NE(slice::LimitsText(*s, "/d", true, "/s", "x").find("latency_slack=1500000ns\n"),
            std::string::npos);
  f.latency_slack = "2s";
  EXPECT_NE(slice::ParseSliceSpec(f).error().message().find("--latency-slack: \"2s\""),
            std::string::npos);
}

TEST(SliceSpec, MemoryModeIsWrittenAlwaysAndCheckedOnInput) {
  slice::SliceFlags f;
  Result<slice::SliceSpec> plain = slice::ParseSliceSpec(f);
  ASSERT_TRUE(plain.has_value());
  EXPECT_NE(slice::LimitsText(*plain, "/d", true, "/s", "x").find("memory_mode=strict\n"),
            std::string::npos);
  f.memory = "4GiB";
  f.memory_mode = "spill";
  Result<slice::SliceSpec> spill = slice::ParseSliceSpec(f);
  ASSERT_TRUE(spill.has_value());
  EXPECT_NE(slice::LimitsText(*spill, "/d", true, "/s", "x").find("memory_mode=spill\n"),
            std::string::npos);
  f.memory_mode = "swap";
  EXPECT_NE(slice::ParseSliceSpec(f).error().message().find("--memory-mode: \"swap\""),
            std::string::npos);
  f.memory.clear();
  f.memory_mode = "spill";
  EXPECT_NE(slice::ParseSliceSpec(f).error().message().find("needs a memory limit"),
            std::string::npos);
}

// Every key that --help lists (kShareTenantKeys) is accepted, with the spellings it gives.
TEST(ShareTenant, EveryListedKeyParses) {
  for (const char* spec :
       {"a:max=30", "a:cores=30", "a:guarantee=20", "a:weight=2", "a:priority=high", "a:elastic",
        "a:elastic=true", "a:elastic=false", "a:mode=capped", "a:mode=elastic", "a:time_slice=2ms",
        "a:latency_slack=1ms", "a:kernel=2ms", "a:gap=1ms", "a:start=1s", "a:launch=graph",
        "a:depth=4", "a:sync=4", "a:sync=4,gap=1ms"}) {
    Result<ShareTenant> t = ParseShareTenant(spec);
    EXPECT_TRUE(t.has_value()) << spec << ": " << t.error().message();
  }
  std::string listed = kShareTenantKeys;
  for (const char* key :
       {"max", "cores", "guarantee", "weight", "priority", "elastic", "mode", "time_slice",
        "latency_slack", "kernel", "gap", "start", "launch", "depth", "sync"}) {
    EXPECT_NE(listed.find(key), std::string::npos) << key;
  }
  EXPECT_TRUE(ParseShareTenant("a:elastic=true")->spec.elastic);
  EXPECT_FALSE(ParseShareTenant("a:elastic=false")->spec.elastic);
  EXPECT_EQ(ParseShareTenant("a:latency_slack=1ms")->spec.latency_slack_ns, 1000000);
  Result<ShareTenant> bad = ParseShareTenant("a:elastic=maybe");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("--tenant a: elastic: \"maybe\""), std::string::npos)
      << bad.error().message();
  bad = ParseShareTenant("a:speed=3");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("unknown key (max (or cores)"), std::string::npos);
  bad = ParseShareTenant("a:mode=fast");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("mode: \"fast\""), std::string::npos);
  EXPECT_EQ(ParseShareTenant("a:sync=20")->sync, 20);
  for (const char* spec : {"a:sync=0", "a:sync=2000", "a:sync=x"}) {
    bad = ParseShareTenant(spec);
    ASSERT_FALSE(bad.has_value()) << spec;
    EXPECT_NE(bad.error().message().find("--tenant a: sync"), std::string::npos)
        << bad.error().message();
  }
  bad = ParseShareTenant("a:sync=4,depth=2");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("depth and sync"), std::string::npos);
}

// A launch-then-sync tenant with host time between its bursts can use only its kernels' share of
// its cycle; the expected shares give the rest to the others.
TEST(ShareStats, ATenantThatCannotUseItsShareLeavesTheRestToTheOthers) {
  // 4 kernels of 1 ms per sync, then 1 ms from the last kernel's end to the next burst's call.
  std::vector<KernelRecord> records;
  uint64_t t = 0;
  for (int burst = 0; burst < 3; ++burst) {
    for (int k = 0; k < 4; ++k) {
      records.push_back({t, t + k * 1000000ULL, t + (k + 1) * 1000000ULL});
    }
    t += 5000000;
  }
  std::optional<double> demand = SyncDemand(records, 4);
  ASSERT_TRUE(demand.has_value());
  EXPECT_NEAR(*demand, 100.0 * 12 / 14, 1e-9);  // the last burst has no host time after it
  EXPECT_FALSE(SyncDemand(std::vector<KernelRecord>(records.begin(), records.begin() + 4), 4));
  TenantPolicy a = Elastic(0, 100, 1), b = Elastic(0, 100, 3);
  b.demand = 60;  // cannot use its 75
  auto s = ExpectedShares({a, b});
  EXPECT_NEAR(*s[0], 40, 1e-6);
  EXPECT_NEAR(*s[1], 60, 1e-6);
  a = Elastic(30);
  b = Elastic(70);
  b.demand = 50;  // its guarantee is more than it can use
  s = ExpectedShares({a, b});
  EXPECT_NEAR(*s[0], 50, 1e-6);
  EXPECT_NEAR(*s[1], 50, 1e-6);
}

}  // namespace
}  // namespace vgpu::bench
