#include "sim/trace.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

namespace vgpu::sim {
namespace {

// Writes `text` to a fresh file under /tmp and returns its path.
std::string TempCsv(const std::string& name, const std::string& text) {
  std::string path = "/tmp/vgpu-trace-test-" + std::to_string(getpid()) + "-" + name;
  std::ofstream(path) << text;
  return path;
}

const char* kNodes =
    "sn,cpu_milli,memory_mib,gpu,model\n"
    "n1,32000,131072,2,T4\n"
    "n2,96000,393216,8,G2\n"
    "cpu1,64000,262144,0,\n";

TEST(Trace, LoadsNodesWithModelsAndMemory) {
  sched::ModelRegistry models;
  auto nodes = LoadNodeList(TempCsv("nodes.csv", kNodes), &models);
  ASSERT_TRUE(nodes.has_value()) << nodes.error().message();
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].gpus.size(), 2u);
  EXPECT_EQ((*nodes)[0].gpus[0].memory_mib, 16384);  // T4
  EXPECT_EQ((*nodes)[1].gpus[0].memory_mib, 0);      // G2: unknown
  EXPECT_TRUE((*nodes)[2].gpus.empty());
  EXPECT_EQ(models.size(), 2u);
}

TEST(Trace, LoadsPodsWithAndWithoutSpecColumn) {
  sched::ModelRegistry models;
  ASSERT_TRUE(LoadNodeList(TempCsv("n.csv", kNodes), &models).has_value());
  auto pods = LoadPodList(TempCsv("p.csv",
                                  "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n"
                                  "p1,6000,12288,1,460,,LS\n"
                                  "p2,8000,30517,0,0,,BE\n"
                                  "p3,4000,100,2,1000,T4|G2,LS\n"),
                          models);
  ASSERT_TRUE(pods.has_value()) << pods.error().message();
  ASSERT_EQ(pods->size(), 3u);
  EXPECT_TRUE((*pods)[0].request.IsSharing());
  EXPECT_TRUE((*pods)[1].request.IsCpuOnly());
  EXPECT_TRUE((*pods)[2].request.models.Allows(*models.Find("G2")));
  auto five = LoadPodList(TempCsv("p5.csv",
                                  "name,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
                                  "p1,6000,12288,8,1000\n"),
                          models);
  ASSERT_TRUE(five.has_value());
  EXPECT_TRUE((*five)[0].request.models.IsAny());
}

// The optional topology column: vgpu.io/topology's value per pod.
TEST(Trace, TopologyColumnRequiresNvlink) {
  sched::ModelRegistry models;
  ASSERT_TRUE(LoadNodeList(TempCsv("n.csv", kNodes), &models).has_value());
  auto pods = LoadPodList(TempCsv("t.csv",
                                  "name,cpu_milli,memory_mib,num_gpu,gpu_milli,topology\n"
                                  "p1,1000,100,2,1000,require-nvlink\n"
                                  "p2,1000,100,2,1000,\n"),
                          models);
  ASSERT_TRUE(pods.has_value()) << pods.error().message();
  EXPECT_TRUE((*pods)[0].request.require_nvlink);
  EXPECT_FALSE((*pods)[1].request.require_nvlink);
  auto bad = LoadPodList(TempCsv("t2.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,topology\n"
                                 "p1,1000,100,2,1000,nvlink\n"),
                         models);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find(":2: column 'topology' (6): vgpu.io/topology: \"nvlink\""),
            std::string::npos)
      << bad.error().message();
  auto one = LoadPodList(TempCsv("t3.csv",
                                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,topology\n"
                                 "p1,1000,100,1,500,require-nvlink\n"),
                         models);
  ASSERT_FALSE(one.has_value());
  EXPECT_NE(one.error().message().find("require-nvlink needs 2 or more GPUs"), std::string::npos);
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expect;  // substring of the message
};

TEST(Trace, PodErrorsNameFileLineAndColumn) {
  sched::ModelRegistry models;
  ASSERT_TRUE(LoadNodeList(TempCsv("n.csv", kNodes), &models).has_value());
  const std::string h = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n";
  const BadCase cases[] = {
      {"missing.csv", "name,cpu_milli,num_gpu,gpu_milli\np,1,1,1\n",
       ":1: missing column 'memory_mib'"},
      {"text.csv",
       "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,2,1,1000,\nq,abc,2,1,1000,\n",
       ":3: column 'cpu_milli' (2): \"abc\" is not an integer"},
      {"negative.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,-5,1,1000,\n",
       ":2: column 'memory_mib' (3): \"-5\" is negative"},
      {"empty.csv", "", "empty file"},
      {"header.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n", "no pods"},
      {"model.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,1,500,T4|H100\n",
       ":2: column 'gpu_spec' (6): unknown GPU model 'H100'"},
      {"share.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,1,0,\n",
       ":2: column 'gpu_milli' (5)"},
      {"toomuch.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1,1,1200,\n",
       ":2: column 'gpu_milli' (5): \"1200\" is outside [0, 1000]"},
      {"fields.csv", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\np,1,1\n",
       ":2: expected 6 fields"},
  };
  for (const BadCase& c : cases) {
    const std::string path = TempCsv(c.name, c.text);
    auto r = LoadPodList(path, models);
    ASSERT_FALSE(r.has_value()) << c.name;
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos)
        << c.name << ": " << r.error().message();
    EXPECT_EQ(r.error().message().rfind(path, 0), 0u) << c.name << ": " << r.error().message();
  }
  EXPECT_EQ(LoadPodList("/nonexistent/pods.csv", models).error().code(), StatusCode::kIoError);
}

TEST(Trace, NodeErrors) {
  sched::ModelRegistry models;
  auto dup = LoadNodeList(
      TempCsv("dup.csv", "sn,cpu_milli,memory_mib,gpu,model\na,1,1,1,T4\na,1,1,1,T4\n"), &models);
  ASSERT_FALSE(dup.has_value());
  EXPECT_NE(dup.error().message().find(":3: column 'sn' (1): duplicate node name"),
            std::string::npos);
  auto nomodel =
      LoadNodeList(TempCsv("nm.csv", "sn,cpu_milli,memory_mib,gpu,model\na,1,1,2,\n"), &models);
  ASSERT_FALSE(nomodel.has_value());
  EXPECT_NE(nomodel.error().message().find("column 'model' (5)"), std::string::npos);
  auto many = LoadNodeList(TempCsv("many.csv", "sn,cpu_milli,memory_mib,gpu,model\na,1,1,65,T4\n"),
                           &models);
  ASSERT_FALSE(many.has_value());
  EXPECT_NE(many.error().message().find("column 'gpu' (4)"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::sim
