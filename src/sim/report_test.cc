#include "sim/report.h"
#include <algorithm>

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "sched/registry.h"
#include "sim/options.h"
#include "sim/published.h"
#include "sim/svg_chart.h"

namespace vgpu::sim {
namespace {

std::vector<PolicyRuns> TwoRuns() {
  PolicyRuns r;
  r.policy = "fgd";
  for (uint64_t seed : {42, 43}) {
    SeedResult s;
    s.seed = seed;
    for (int x = 0; x <= 130; ++x) {
      const double alloc = x <= 95 ? x : 95.0 + (seed == 42 ? 0.1 : 0.3);
      s.levels.push_back(LevelValue{x, alloc, 50.0});
    }
    r.seeds.push_back(s);
  }
  return {r};
}

TEST(Report, CsvHasTheContractColumns) {
  const std::string csv = CsvText(TwoRuns());
  EXPECT_EQ(csv.rfind("policy,seed,arrived_pct,allocated_pct,unallocated_pct,frag_rate_pct\n", 0),
            0u);
  EXPECT_NE(csv.find("fgd,42,100,95.10,4.90,50.00\n"), std::string::npos);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + 2 * 131);
}

TEST(Report, TableShowsMeanSdAndPublishedDelta) {
  const std::string path = "/tmp/vgpu-report-test-" + std::to_string(getpid()) + ".csv";
  std::ofstream(path) << "workload,policy,stat_over_10_seeds,arrived_90pct,arrived_100pct\n"
                         "trace_x,06-FGD,mean,10.0,4.77\n"
                         "trace_x,06-FGD,median,10.0,4.75\n"
                         "trace_x,06-FGD,stdev,0.02,0.11\n";
  auto pub = PublishedResults::Load(path);
  ASSERT_TRUE(pub.has_value()) << pub.error().message();
  EXPECT_NEAR(pub->Find("trace_x", "fgd", 100)->sd, 0.11, 1e-12);
  EXPECT_FALSE(pub->Find("trace_x", "fgd", 95).has_value());
  std::vector<PolicySummary> sums = {Aggregate(TwoRuns()[0])};
  ReportInfo info;
  info.trace = "trace_x";
  info.seeds = {42, 43};
  info.published = &*pub;
  const std::string table = FormatTable(sums, info);
  EXPECT_NE(table.find("4.80±0.14"), std::string::npos) << table;  // mean of 4.9 and 4.7
  EXPECT_NE(table.find("4.77"), std::string::npos);
  EXPECT_NE(table.find("+0.03"), std::string::npos);
  const std::string json = FormatJson(sums, info);
  EXPECT_NE(json.find("\"published_unallocated_mean\": 4.77"), std::string::npos) << json;
  info.trace = "other";
  EXPECT_EQ(FormatTable(sums, info).find("pub@100"), std::string::npos);
}

TEST(Report, PublishedNamesAndErrors) {
  EXPECT_EQ(PublishedResults::PolicyName("03-GpuClustering"), "clustering");
  EXPECT_EQ(PublishedResults::PolicyName("04-GpuPacking"), "packing");
  EXPECT_EQ(PublishedResults::PolicyName("05-BestFit"), "bestfit");
  const std::string path = "/tmp/vgpu-report-bad-" + std::to_string(getpid()) + ".csv";
  std::ofstream(path) << "workload,policy,stat_over_10_seeds,arrived_100pct\nt,06-FGD,mean,x\n";
  auto bad = PublishedResults::Load(path);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find(":2: column 'arrived_100pct' (4)"), std::string::npos);
}

TEST(Report, SvgIsAWellFormedChart) {
  std::vector<PolicySummary> sums = {Aggregate(TwoRuns()[0])};
  ChartOptions opt;
  opt.title = "a <title> & more";
  const std::string svg = RenderChart(sums, opt);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_NE(svg.find("<svg xmlns=\"http://www.w3.org/2000/svg\""), std::string::npos);
  EXPECT_NE(svg.find("a &lt;title&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("fgd (4.80%)"), std::string::npos);
  EXPECT_EQ(std::count(svg.begin(), svg.end(), '<'), std::count(svg.begin(), svg.end(), '>'));
  EXPECT_NE(svg.rfind("</svg>"), std::string::npos);
}

TEST(Options, Seeds) {
  EXPECT_EQ(*ParseSeedList("42-44"), (std::vector<uint64_t>{42, 43, 44}));
  EXPECT_EQ(*ParseSeedList("7,3,7"), (std::vector<uint64_t>{7, 3}));
  EXPECT_EQ(*ParseSeedList(" 1-2 ,5"), (std::vector<uint64_t>{1, 2, 5}));
  for (const char* bad : {"", "abc", "5-3", "1-", "-3", "1,,2", "0-99999"}) {
    EXPECT_FALSE(ParseSeedList(bad).has_value()) << bad;
  }
  EXPECT_EQ(FormatSeeds({42, 43, 44}), "42-44");
  EXPECT_EQ(FormatSeeds({42, 50}), "42,50");
}

TEST(Options, PoliciesAndOptions) {
  const auto& reg = sched::BuiltinPolicies();
  EXPECT_EQ(*ParsePolicyList("fgd,bestfit,fgd", reg), (std::vector<std::string>{"fgd", "bestfit"}));
  // `all` runs each policy once: `default` stands in for the policy it names.
  std::vector<std::string> all = *ParsePolicyList("all", reg);
  EXPECT_EQ(all.size(), reg.Names().size() - 1);
  EXPECT_NE(std::find(all.begin(), all.end(), "default"), all.end());
  EXPECT_EQ(std::find(all.begin(), all.end(), *reg.Resolve("default")), all.end());
  auto bad = ParsePolicyList("fgd,tetris", reg);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("'tetris'"), std::string::npos);
  EXPECT_FALSE(ParsePolicyList("fgd,", reg).has_value());
  std::map<std::string, std::map<std::string, std::string>> opts;
  EXPECT_TRUE(ParsePolicyOption("fgd-online:tolerance=0.1", &opts).ok());
  EXPECT_EQ(opts["fgd-online"]["tolerance"], "0.1");
  EXPECT_FALSE(ParsePolicyOption("tolerance=0.1", &opts).ok());
  EXPECT_FALSE(ParsePolicyOption("fgd:=1", &opts).ok());
}

}  // namespace
}  // namespace vgpu::sim
