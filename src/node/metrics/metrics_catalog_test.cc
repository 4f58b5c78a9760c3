// The metric catalog (node/metrics/metrics_catalog.def) against docs/node.md: every family the node
// can export is named there, the names are unique and follow Prometheus' conventions (counters end
// in _total, gauges do not) except where another exporter's names are copied.
#include "node/metrics/metrics_catalog.h"

#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

namespace vgpu::node {
namespace {

std::string ReadDoc(const std::string& name) {
  std::ifstream in(std::string(VGPU_SOURCE_DIR) + "/docs/" + name);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MetricsCatalogTest, EveryFamilyIsDocumentedInNodeMd) {
  const std::string doc = ReadDoc("node.md");
  ASSERT_FALSE(doc.empty()) << "docs/node.md not read from " << VGPU_SOURCE_DIR;
  ASSERT_GE(AllMetricFamilies().size(), 100u);
  for (const MetricDef& d : AllMetricFamilies()) {
    const std::string name = d.name;
    // As code: `name`, or `name{labels}`.
    const bool documented = doc.find("`" + name + "`") != std::string::npos ||
                            doc.find("`" + name + "{") != std::string::npos;
    EXPECT_TRUE(documented) << name << " is exported but not documented in docs/node.md";
  }
}

TEST(MetricsCatalogTest, NamesAreUniqueAndFollowTheConventions) {
  std::set<std::string> seen;
  const std::regex snake("[a-z][a-z0-9_]*");
  for (const MetricDef& d : AllMetricFamilies()) {
    const std::string name = d.name;
    EXPECT_TRUE(seen.insert(name).second) << name << " twice";
    EXPECT_FALSE(std::string(d.help).empty()) << name;
    if (name.rfind("DCGM_FI_", 0) == 0) continue;  // dcgm-exporter's names and types
    EXPECT_TRUE(std::regex_match(name, snake)) << name;
    const bool total = name.size() > 6 && name.substr(name.size() - 6) == "_total";
    if (d.type == MetricType::kCounter) {
      EXPECT_TRUE(total) << name << " is a counter";
    } else if (d.type == MetricType::kGauge) {
      EXPECT_FALSE(total) << name << " is a gauge";
    }
  }
}

}  // namespace
}  // namespace vgpu::node
