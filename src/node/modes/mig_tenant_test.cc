#include "node/modes/mig_tenant.h"

#include <gtest/gtest.h>

namespace vgpu::node {
namespace {

SliceRecord Slice(const std::string& name, const std::string& pod, const std::string& uuid) {
  SliceRecord r;
  r.name = name;
  r.spec.pod_uid = pod;
  SliceDevice d;
  d.uuid = uuid;
  r.spec.devices.push_back(d);
  return r;
}

TEST(MigTenantTest, TheInstanceIsFoundByItsIds) {
  std::vector<device::MigInstance> instances(3);
  instances[0].uuid = "MIG-a";
  instances[0].gi_id = 1;
  instances[0].ci_id = 0;
  instances[1].uuid = "MIG-b";
  instances[1].gi_id = 7;
  instances[1].ci_id = 0;
  instances[2].gi_id = 8;  // a GPU instance without a compute instance
  EXPECT_EQ(MigInstanceUuid(instances, 7, 0), "MIG-b");
  EXPECT_EQ(MigInstanceUuid(instances, 1, device::HealthEvent::kNoInstance), "MIG-a");
  EXPECT_EQ(MigInstanceUuid(instances, 1, 1), "");
  EXPECT_EQ(MigInstanceUuid(instances, 8, 0), "");
  EXPECT_EQ(MigInstanceUuid(instances, 9, 0), "");
}

TEST(MigTenantTest, OnlyTheSoleTenantOfAnInstanceIsNamed) {
  std::vector<SliceRecord> slices = {
      Slice("p1_main", "p1", "MIG-a"), Slice("p2_main", "p2", "MIG-b"),
      Slice("p3_main", "p3", "MIG-b"), Slice("p4_main", "p4", "GPU-x")};
  std::string why;
  EXPECT_EQ(OnlyTenantOfMigInstance(slices, nullptr, "MIG-a", &why).value_or(""), "p1_main");
  // Two software slices inside one instance: neither is charged.
  EXPECT_FALSE(OnlyTenantOfMigInstance(slices, nullptr, "MIG-b", &why).has_value());
  EXPECT_EQ(why, "2 tenants share the instance");
  EXPECT_FALSE(OnlyTenantOfMigInstance(slices, nullptr, "MIG-c", &why).has_value());
  EXPECT_EQ(why, "no tenant uses the instance");
  EXPECT_FALSE(OnlyTenantOfMigInstance(slices, nullptr, "", &why).has_value());
  // The MIG manager's claim must name one pod too.
  std::vector<MigClaim> claims(1);
  claims[0].uuid = "MIG-a";
  claims[0].pods = {"p1"};
  EXPECT_EQ(OnlyTenantOfMigInstance(slices, &claims, "MIG-a", &why).value_or(""), "p1_main");
  claims[0].pods = {"p1", "p9"};  // a pod whose slice is not made yet shares it
  EXPECT_FALSE(OnlyTenantOfMigInstance(slices, &claims, "MIG-a", &why).has_value());
  EXPECT_EQ(why, "2 pods share the instance");
}

}  // namespace
}  // namespace vgpu::node
