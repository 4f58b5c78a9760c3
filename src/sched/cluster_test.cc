#include "sched/cluster.h"

#include <gtest/gtest.h>

#include "sched/test_util.h"

namespace vgpu::sched {
namespace {

using testing::MakeNode;
using testing::On;
using testing::Pod;

TEST(ModelRegistry, InternsParsesAndFormats) {
  ModelRegistry m;
  EXPECT_EQ(*m.Intern("T4"), 0);
  EXPECT_EQ(*m.Intern("P100"), 1);
  EXPECT_EQ(*m.Intern("T4"), 0);
  EXPECT_FALSE(m.Intern("").has_value());
  EXPECT_FALSE(m.Intern("A|B").has_value());
  ModelSet any = *m.ParseSet("");
  EXPECT_TRUE(any.IsAny());
  EXPECT_TRUE(any.Allows(1));
  ModelSet s = *m.ParseSet("T4|P100|T4");
  EXPECT_TRUE(s.Allows(0));
  EXPECT_TRUE(s.Allows(1));
  EXPECT_EQ(m.Format(s), "P100|T4");
  auto bad = m.ParseSet("T4|H100");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.error().message().find("'H100'"), std::string::npos);
  EXPECT_FALSE(m.ParseSet("T4||P100").has_value());
}

TEST(Cluster, AddNodeValidates) {
  Cluster c;
  EXPECT_TRUE(c.AddNode(MakeNode("a", 1000, 1000, 2)).has_value());
  EXPECT_EQ(c.AddNode(MakeNode("a", 1000, 1000, 2)).error().code(), StatusCode::kAlreadyExists);
  EXPECT_FALSE(c.AddNode(MakeNode("", 1000, 1000, 2)).has_value());
  EXPECT_FALSE(c.AddNode(MakeNode("b", -1, 1000, 2)).has_value());
  EXPECT_FALSE(c.AddNode(MakeNode("c", 1, 1, kMaxGpusPerNode + 1)).has_value());
  EXPECT_EQ(c.num_nodes(), 1u);
  EXPECT_EQ(*c.FindNode("a"), 0u);
  EXPECT_EQ(c.total_gpu_milli(), 2000);
}

TEST(Cluster, FitsChecksEveryResource) {
  Cluster c;
  NodeSpec spec = MakeNode("n", 8000, 16000, 2, /*model=*/0, /*gpu_mem=*/16384);
  spec.gpus[1].model = 1;
  NodeId n = *c.AddNode(spec);
  EXPECT_TRUE(c.Fits(Pod(8000, 2, 1000, 16000), n));
  EXPECT_FALSE(c.Fits(Pod(8001), n));               // CPU
  EXPECT_FALSE(c.Fits(Pod(1000, 0, 0, 16001), n));  // memory
  EXPECT_FALSE(c.Fits(Pod(1000, 3, 1000), n));      // GPU count
  PodRequest only_model1 = Pod(1000, 2, 500);
  only_model1.models = ModelSet::Of(1);
  EXPECT_FALSE(c.Fits(only_model1, n));  // only one GPU of model 1
  only_model1.num_gpus = 1;
  EXPECT_TRUE(c.Fits(only_model1, n));
  PodRequest gpumem = Pod(1000, 1, 100);
  gpumem.gpu_memory_mib = 16384;
  EXPECT_TRUE(c.Fits(gpumem, n));
  gpumem.gpu_memory_mib = 16385;
  EXPECT_FALSE(c.Fits(gpumem, n));
}

TEST(Cluster, ReserveNeverOverAllocatesAndUnreserveRestores) {
  Cluster c;
  NodeId n = *c.AddNode(MakeNode("n", 8000, 16000, 2));
  const uint32_t v0 = c.version(n);
  ASSERT_TRUE(c.Reserve(1, Pod(4000, 1, 600, 1000), On(n, {0})).ok());
  EXPECT_EQ(c.cpu_free(n), 4000);
  EXPECT_EQ(c.memory_free(n), 15000);
  EXPECT_EQ(c.gpus(n)[0].free_milli, 400);
  EXPECT_EQ(c.gpu_free_milli(n), 1400);
  EXPECT_EQ(c.full_free_gpus(n), 1);
  EXPECT_EQ(c.allocated_gpu_milli(), 600);
  EXPECT_GT(c.version(n), v0);

  // Each over-allocation is refused and changes nothing.
  const uint32_t v1 = c.version(n);
  EXPECT_EQ(c.Reserve(2, Pod(1000, 1, 500), On(n, {0})).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.Reserve(2, Pod(4001), On(n, {})).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.Reserve(2, Pod(1, 0, 0, 15001), On(n, {})).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.Reserve(2, Pod(1, 1, 500), On(n, {0, 1})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Reserve(2, Pod(1, 1, 500), On(n, {5})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.Reserve(1, Pod(1), On(n, {})).code(), StatusCode::kAlreadyExists);
  EXPECT_EQ(c.Reserve(2, Pod(1), On(7, {})).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(c.version(n), v1);
  EXPECT_EQ(c.cpu_free(n), 4000);
  EXPECT_EQ(c.gpus(n)[0].free_milli, 400);

  EXPECT_TRUE(c.Unreserve(1));
  EXPECT_FALSE(c.Unreserve(1));  // idempotent
  EXPECT_EQ(c.cpu_free(n), 8000);
  EXPECT_EQ(c.memory_free(n), 16000);
  EXPECT_EQ(c.gpu_free_milli(n), 2000);
  EXPECT_EQ(c.full_free_gpus(n), 2);
  EXPECT_EQ(c.allocated_gpu_milli(), 0);
  EXPECT_EQ(c.num_reservations(), 0u);
}

TEST(Cluster, GpuMemoryIsChargedAsStatedOrByShare) {
  Cluster c;
  NodeId n = *c.AddNode(MakeNode("n", 8000, 16000, 1, 0, /*gpu_mem=*/16000));
  ASSERT_TRUE(c.Reserve(1, Pod(0, 1, 250), On(n, {0})).ok());  // 1/4 of 16000
  EXPECT_EQ(c.gpus(n)[0].memory_free_mib, 12000);
  PodRequest stated = Pod(0, 1, 100);
  stated.gpu_memory_mib = 12000;
  ASSERT_TRUE(c.Reserve(2, stated, On(n, {0})).ok());
  EXPECT_EQ(c.gpus(n)[0].memory_free_mib, 0);
  stated.gpu_memory_mib = 1;
  EXPECT_EQ(c.Reserve(3, stated, On(n, {0})).code(), StatusCode::kResourceExhausted);
  EXPECT_TRUE(c.Unreserve(2));
  EXPECT_TRUE(c.Unreserve(1));
  EXPECT_EQ(c.gpus(n)[0].memory_free_mib, 16000);
}

TEST(Cluster, SlotLimitAndClasses) {
  Cluster c;
  NodeId n = *c.AddNode(MakeNode("n", 100000, 100000, 2));
  FitOptions two;
  two.max_pods_per_gpu = 2;
  ASSERT_TRUE(c.Reserve(1, Pod(1, 1, 100), On(n, {0}), two).ok());
  ASSERT_TRUE(c.Reserve(2, Pod(1, 1, 100), On(n, {0}), two).ok());
  EXPECT_EQ(c.Reserve(3, Pod(1, 1, 100), On(n, {0}), two).code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(c.CountFittingGpus(Pod(1, 1, 100), n, two), 1);
  EXPECT_EQ(c.PodsOfClass(n, 0), 2);
  EXPECT_EQ(c.NumClasses(n), 1);
  ASSERT_TRUE(c.Reserve(4, Pod(1, 1, 1000), On(n, {1})).ok());
  ASSERT_TRUE(c.Reserve(5, Pod(1), On(n, {})).ok());  // CPU-only: no class
  EXPECT_EQ(c.NumClasses(n), 2);
  EXPECT_EQ(c.PodsOfClass(n, 1), 1);
  c.Unreserve(4);
  EXPECT_EQ(c.NumClasses(n), 1);
}

TEST(Types, ValidateRequest) {
  EXPECT_TRUE(ValidateRequest(Pod(1, 2, 1000)).ok());
  EXPECT_FALSE(ValidateRequest(Pod(-1)).ok());
  EXPECT_FALSE(ValidateRequest(Pod(1, 1, 0)).ok());
  EXPECT_FALSE(ValidateRequest(Pod(1, 0, 10)).ok());
  EXPECT_FALSE(ValidateRequest(Pod(1, 1, 1001)).ok());
  EXPECT_FALSE(ValidateRequest(Pod(1, 65, 1000)).ok());
  EXPECT_EQ(GpuIndices(0b1010), (std::vector<int>{1, 3}));
}

}  // namespace
}  // namespace vgpu::sched
