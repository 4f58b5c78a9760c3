// Timing budget (ctest label "bench", run serially): 40 pods for one node, bound at once through
// the extender and a local HTTPS API server, all succeed within 5 seconds. HAMi's per-node lock
// made the same burst take 15-30 minutes (HAMi#1367).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "harness.h"

namespace vgpu::k8s::testing {
namespace {

TEST(BindTiming, FortyPodsForOneNodeWithinFiveSeconds) {
  FakeApiServer api;
  api.PutNode(
      MakeNode("node-0", {{kInventoryAnnotation, InventoryJson("node-0", 8, "A100", 81920)}}));
  std::vector<Json> pods;
  for (int i = 0; i < 40; ++i) {
    pods.push_back(GpuPod("ml", "infer-" + std::to_string(i), 1, 20, 16000));
    api.PutPod(pods.back());
  }
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  std::atomic<int> ok{0};
  std::vector<std::thread> binds;
  const auto t0 = std::chrono::steady_clock::now();
  for (const Json& pod : pods) {
    binds.emplace_back([&, pod] {
      auto [s, b] = h.Post("bind", BindBody(pod, "node-0"));
      if (s == 200 && b["Error"] == "") ++ok;
    });
  }
  for (auto& t : binds) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("40 pods bound to one node in %.3f s\n", secs);
  EXPECT_EQ(ok.load(), 40);
  EXPECT_LT(secs, 5.0);
}

}  // namespace
}  // namespace vgpu::k8s::testing
