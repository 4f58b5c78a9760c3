#include "node/metrics/metrics_text.h"

#include <gtest/gtest.h>

#include <cmath>

#include "node/metrics/process_owner.h"

namespace vgpu::node {
namespace {

constexpr MetricDef kA{"a_bytes", MetricType::kGauge, "A."};
constexpr MetricDef kB{"b_total", MetricType::kCounter, "B."};

TEST(MetricsTextTest, RendersFamiliesContiguously) {
  MetricsBuilder m;
  m.Add(kA, {{"x", "1"}}, 5);
  m.Add(kB, {}, 2);
  m.Add(kA, {{"x", "2"}}, 0.25);
  EXPECT_EQ(m.Render(),
            "# HELP a_bytes A.\n# TYPE a_bytes gauge\na_bytes{x=\"1\"} 5\na_bytes{x=\"2\"} 0.25\n"
            "# HELP b_total B.\n# TYPE b_total counter\nb_total 2\n");
  EXPECT_EQ(m.Names(), (std::vector<std::string>{"a_bytes", "b_total"}));
}

TEST(MetricsTextTest, EscapesAndFormats) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(FormatValue(85899345920.0), "85899345920");
  EXPECT_EQ(FormatValue(0.1), "0.1");
  EXPECT_EQ(FormatValue(NAN), "NaN");
  EXPECT_EQ(FormatValue(-INFINITY), "-Inf");
}

// Derived families rewrite or drop samples; two sources deriving into one family make one
// contiguous family (dcgm-exporter's DCGM_FI_DEV_GPU_UTIL per GPU and per pod).
TEST(MetricsTextTest, DerivedFamiliesRewriteOrDropSamples) {
  constexpr MetricDef kSlices{"x_slices", MetricType::kGauge, "S."};
  constexpr MetricDef kOther{"x_other", MetricType::kGauge, "O."};
  constexpr MetricDef kShared{"x_shared_count", MetricType::kUntyped, "X."};
  constexpr MetricDef kNone{"x_none", MetricType::kGauge, "N."};
  MetricsBuilder m;
  m.Add(kSlices, {{"gpu", "0"}}, 2);
  m.Add(kSlices, {{"gpu", "1"}}, 0);
  m.Add(kOther, {{"gpu", "7"}}, 4);
  auto rewrite = [](const Labels& in, Labels* out, double* v) {
    if (*v == 0) return false;
    *out = {{"device_index", in[0].second}, {"zone", "z"}};
    *v += 1;
    return true;
  };
  m.Derive(kSlices, kShared, rewrite);
  m.Derive(kOther, kShared, rewrite);
  m.Derive(kSlices, kNone, [](const Labels&, Labels*, double*) { return false; });
  std::string out = m.Render();
  EXPECT_NE(out.find("# TYPE x_shared_count untyped\nx_shared_count{device_index=\"0\",zone=\"z\"} "
                     "3\nx_shared_count{device_index=\"7\",zone=\"z\"} 5\n"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("device_index=\"1\""), std::string::npos);
  EXPECT_EQ(out.find("x_none"), std::string::npos);
  ASSERT_NE(m.Find(kShared), nullptr);
  EXPECT_EQ(m.Find(kNone), nullptr);
}

TEST(MetricsTextTest, Histogram) {
  constexpr MetricDef kLat{"lat_seconds", MetricType::kHistogram, "L."};
  Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  MetricsBuilder m;
  h.AddTo(m, kLat, {{"n", "a"}});
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
