#include "node/metrics_text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "node/process_owner.h"

namespace vgpu::node {
namespace {

TEST(MetricsTextTest, RendersFamiliesContiguously) {
  MetricsBuilder m;
  m.Add("a_bytes", MetricType::kGauge, "A.", {{"x", "1"}}, 5);
  m.Add("b_total", MetricType::kCounter, "B.", {}, 2);
  m.Add("a_bytes", MetricType::kGauge, "A.", {{"x", "2"}}, 0.25);
  EXPECT_EQ(m.Render(),
            "# HELP a_bytes A.\n# TYPE a_bytes gauge\na_bytes{x=\"1\"} 5\na_bytes{x=\"2\"} 0.25\n"
            "# HELP b_total B.\n# TYPE b_total counter\nb_total 2\n");
}

TEST(MetricsTextTest, EscapesAndFormats) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(FormatValue(85899345920.0), "85899345920");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(NAN), "NaN");
  EXPECT_EQ(FormatValue(-INFINITY), "-Inf");
}

TEST(MetricsTextTest, AliasesRenameLabelsAndScale) {
  MetricsBuilder m;
  m.Add("vgpu_x_ratio", MetricType::kGauge, "X.", {{"gpu", "0"}, {"uuid", "U"}}, 0.5);
  m.Alias("vgpu_x_ratio", "hami_x_ratio", "H.", {{"gpu", "device_index"}}, 100);
  m.Alias("missing", "hami_missing", "H.", {});
  std::string out = m.Render();
  EXPECT_NE(out.find("hami_x_ratio{device_index=\"0\",uuid=\"U\"} 50\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("hami_missing"), std::string::npos);
}

TEST(MetricsTextTest, DerivedFamiliesRewriteOrDropSamples) {
  MetricsBuilder m;
  m.Add("vgpu_slices", MetricType::kGauge, "S.", {{"gpu", "0"}}, 2);
  m.Add("vgpu_slices", MetricType::kGauge, "S.", {{"gpu", "1"}}, 0);
  m.Derive("vgpu_slices", "x_shared_count", MetricType::kUntyped, "X.",
           [](const Labels& in, Labels* out, double* v) {
             if (*v == 0) return false;
             *out = {{"device_index", in[0].second}, {"zone", "z"}};
             *v += 1;
             return true;
           });
  m.Derive("vgpu_slices", "x_none", MetricType::kGauge, "N.",
           [](const Labels&, Labels*, double*) { return false; });
  std::string out = m.Render();
  EXPECT_NE(out.find("# TYPE x_shared_count untyped\nx_shared_count{device_index=\"0\",zone=\"z\"} "
                     "3\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("device_index=\"1\""), std::string::npos);
  EXPECT_EQ(out.find("x_none"), std::string::npos);
  ASSERT_NE(m.Find("x_shared_count"), nullptr);
  EXPECT_EQ(m.Find("x_none"), nullptr);
}

TEST(MetricsTextTest, Histogram) {
  Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  MetricsBuilder m;
  h.AddTo(m, "lat_seconds", "L.", {{"n", "a"}});
  std::string out = m.Render();
  EXPECT_NE(out.find("lat_seconds_bucket{n=\"a\",le=\"0.1\"} 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("lat_seconds_bucket{n=\"a\",le=\"1\"} 2\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_bucket{n=\"a\",le=\"+Inf\"} 3\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_sum{n=\"a\"} 5.55\n"), std::string::npos);
  EXPECT_NE(out.find("lat_seconds_count{n=\"a\"} 3\n"), std::string::npos);
}

TEST(ProcessOwnerTest, CgroupForms) {
  // cgroup v2, systemd driver, containerd.
  auto a = ParseCgroupOwner(
      "0::/kubepods.slice/kubepods-burstable.slice/"
      "kubepods-burstable-pod1b2c3d4e_5f60_4a7b_8c9d_0e1f2a3b4c5d.slice/"
      "cri-containerd-9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0.scope\n");
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->pod_uid, "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d");
  EXPECT_EQ(a->container_id, "9f8e7d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39281706f5e4d3c2b1a0");
  // cgroup v1, cgroupfs driver, docker.
  auto b = ParseCgroupOwner(
      "12:memory:/kubepods/besteffort/pod1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d/"
      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\n");
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(b->pod_uid, "1b2c3d4e-5f60-4a7b-8c9d-0e1f2a3b4c5d");
  EXPECT_EQ(b->container_id.size(), 64u);
  EXPECT_FALSE(ParseCgroupOwner("0::/user.slice/user-1000.slice/session-2.scope\n").has_value());
  EXPECT_FALSE(OwnerOfProcess("/nonexistent", 1).has_value());
}

}  // namespace
}  // namespace vgpu::node
