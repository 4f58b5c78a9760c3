// End-to-end scheduling through the extender's HTTP verbs against the fake API server: many
// concurrent kube-scheduler clients never double-book a GPU, 40 pods for one node bind in
// seconds, a restarted scheduler rebuilds from pod annotations, watches keep the state current,
// undecided bindings expire only when the API server confirms the pod is unbound.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <thread>

#include "harness.h"
#include "support/wait_for.h"

namespace vgpu::k8s::testing {
namespace {

using vgpu::testing::WaitFor;

using namespace std::chrono_literals;

// Checks, from what the API server holds, that no GPU carries more than its compute, memory or
// units. `capacity` maps GPU UUID to memory MiB. Returns the number of bound GPU pods.
int CheckNoDoubleBooking(const FakeApiServer& api, const std::map<std::string, int64_t>& capacity,
                         int units) {
  std::map<std::string, std::tuple<int64_t, int64_t, int>> load;  // uuid -> milli, memory, pods
  int bound = 0;
  for (const Json& pod : api.Pods()) {
    const std::string text = AnnotationOf(pod, kAssignedGpusAnnotation);
    if (text.empty() || !pod["spec"].contains("nodeName")) continue;
    auto a = ParseAssignment(text);
    EXPECT_TRUE(a.has_value());
    if (!a) continue;
    EXPECT_EQ(a->node, pod["spec"]["nodeName"].get<std::string>());
    ++bound;
    std::set<std::string> gpus;
    for (const auto& c : a->containers) {
      for (const auto& g : c.gpus) gpus.insert(g.uuid);
    }
    for (const std::string& uuid : gpus) {
      auto& [milli, mem, pods] = load[uuid];
      milli += a->reserved_milli;
      mem += a->reserved_memory_mib;
      ++pods;
    }
  }
  for (const auto& [uuid, l] : load) {
    const auto& [milli, mem, pods] = l;
    EXPECT_LE(milli, 1000) << uuid;
    EXPECT_LE(mem, capacity.at(uuid)) << uuid;
    EXPECT_LE(pods, units) << uuid;
  }
  return bound;
}

std::map<std::string, int64_t> AddNodes(FakeApiServer& api, int nodes, int gpus, int64_t mem,
                                        int units = 10, const std::string& prefix = "node-") {
  std::map<std::string, int64_t> capacity;
  for (int n = 0; n < nodes; ++n) {
    const std::string name = prefix + std::to_string(n);
    api.PutNode(
        MakeNode(name, {{kInventoryAnnotation, InventoryJson(name, gpus, "A100", mem, units)}}));
    for (int g = 0; g < gpus; ++g) capacity["GPU-" + name + "-" + std::to_string(g)] = mem;
  }
  return capacity;
}

// One kube-scheduler cycle for `pod`: filter, prioritize, pick the best score, bind.
// Returns the node bound to, or "" when nothing fits or the bind lost a race.
std::string Schedule(ExtenderHarness& h, const Json& pod, const std::vector<std::string>& nodes) {
  auto [fs, f] = h.Post("filter", ArgsBody(pod, nodes));
  EXPECT_EQ(fs, 200);
  if (fs != 200 || f["NodeNames"].empty()) return "";
  std::vector<std::string> feasible = f["NodeNames"].get<std::vector<std::string>>();
  auto [ps, p] = h.Post("prioritize", ArgsBody(pod, feasible));
  EXPECT_EQ(ps, 200);
  std::string best = feasible[0];
  int best_score = -1;
  for (const Json& hp : p) {
    if (hp["Score"].get<int>() > best_score) {
      best_score = hp["Score"].get<int>();
      best = hp["Host"].get<std::string>();
    }
  }
  auto [bs, b] = h.Post("bind", BindBody(pod, best));
  EXPECT_EQ(bs, 200);
  return b["Error"] == "" ? best : "";
}

TEST(Scheduling, SixtyFourConcurrentClientsNeverDoubleBook) {
  FakeApiServer api;
  const auto capacity = AddNodes(api, 8, 8, 40960, 6);
  std::vector<std::string> nodes;
  for (int n = 0; n < 8; ++n) nodes.push_back("node-" + std::to_string(n));
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  constexpr int kClients = 64, kPodsEach = 6;
  std::vector<Json> pods;
  for (int c = 0; c < kClients; ++c) {
    for (int i = 0; i < kPodsEach; ++i) {
      const int shape = (c * 7 + i) % 5;
      Json pod =
          GpuPod("team-" + std::to_string(c % 4), "p" + std::to_string(c) + "-" + std::to_string(i),
                 shape == 4 ? 2 : 1, 10 + shape * 15, 4000 + shape * 3000);
      api.PutPod(pod);
      pods.push_back(pod);
    }
  }
  std::atomic<int> bound{0}, failed{0};
  std::vector<std::thread> clients;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < kClients; ++c) {
    clients.emplace_back([&, c] {
      for (int i = 0; i < kPodsEach; ++i) {
        const Json& pod = pods[static_cast<size_t>(c * kPodsEach + i)];
        (Schedule(h, pod, nodes).empty() ? failed : bound)++;
      }
    });
  }
  for (auto& t : clients) t.join();
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("64 clients: %d bound, %d not placed, %.2f s\n", bound.load(), failed.load(), secs);
  EXPECT_EQ(bound + failed, kClients * kPodsEach);
  EXPECT_GT(bound.load(), 100);
  int64_t used = 0;
  for (const auto& u : h.state().Usage()) used += u.milli_used;
  std::printf("GPU compute reserved: %.1f%%\n", used / 640.0);
  EXPECT_GT(used, 64000 * 8 / 10);  // the cluster was filled, not left fragmented
  EXPECT_EQ(CheckNoDoubleBooking(api, capacity, 6), bound.load());
  EXPECT_EQ(api.bindings(), bound.load());
  ASSERT_TRUE(WaitFor([&] { return h.state().counts().pods_bound == static_cast<size_t>(bound); }));
  EXPECT_TRUE(h.state().CheckConsistency().ok());
  EXPECT_EQ(h.state().counts().conflicts, 0u);
}

TEST(Scheduling, FortyPodsForOneNodeBindInSeconds) {
  FakeApiServer api;
  const auto capacity = AddNodes(api, 1, 8, 81920);
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  std::vector<Json> pods;
  for (int i = 0; i < 40; ++i) {
    pods.push_back(GpuPod("ml", "infer-" + std::to_string(i), 1, 20, 16000));
    api.PutPod(pods.back());
  }
  // kube-scheduler runs binding cycles concurrently: all 40 binds arrive at once.
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
  EXPECT_EQ(ok.load(), 40);  // the time bound is checked by k8s_bind_timing_test (label bench)
  EXPECT_EQ(CheckNoDoubleBooking(api, capacity, 10), 40);
  // Eight GPUs x 5 pods of 20%: full; the 41st does not fit.
  Json extra = GpuPod("ml", "extra", 1, 20, 16000);
  api.PutPod(extra);
  auto [fs, f] = h.Post("filter", ArgsBody(extra, {"node-0"}));
  EXPECT_TRUE(f["NodeNames"].empty());
  EXPECT_NE(f["FailedNodes"]["node-0"].get<std::string>().find("insufficient free GPU"),
            std::string::npos);
}

TEST(Scheduling, FortyPodsFilteredOneAfterAnotherWhileEarlierBindsAreInFlight) {
  // kube-scheduler's scheduling cycle (filter, prioritize) runs for one pod after another while
  // the binds of the earlier pods are in flight. One node with two H100s has room for 20 pods of
  // 10% and 3000 MiB; narrow mode holds each pod's share at its filter.
  FakeApiServer api;
  api.PutNode(MakeNode(
      "h100", {{kInventoryAnnotation, InventoryJson("h100", 2, "NVIDIA H100 80GB HBM3", 81559)}}));
  std::map<std::string, int64_t> capacity = {{"GPU-h100-0", 81559}, {"GPU-h100-1", 81559}};
  StateOptions narrow;
  narrow.filter_mode = FilterMode::kNarrow;
  ExtenderHarness h(&api, narrow);
  ASSERT_TRUE(h.Start().ok());
  std::vector<Json> pods;
  for (int i = 0; i < 40; ++i) {
    pods.push_back(GpuPod("ml", "slice-" + std::to_string(i), 1, 10, 3000));
    api.PutPod(pods.back());
  }
  std::atomic<int> bound{0}, refused{0};
  std::vector<std::thread> binds;
  int feasible = 0;
  for (const Json& pod : pods) {
    auto [fs, f] = h.Post("filter", ArgsBody(pod, {"h100", "cpu-node"}));
    ASSERT_EQ(fs, 200);
    if (f["NodeNames"].empty()) continue;
    ++feasible;
    h.Post("prioritize", ArgsBody(pod, f["NodeNames"].get<std::vector<std::string>>()));
    binds.emplace_back([&, pod] {
      auto [s, b] = h.Post("bind", BindBody(pod, "h100"));
      (s == 200 && b["Error"] == "" ? bound : refused)++;
    });
  }
  for (auto& t : binds) t.join();
  EXPECT_EQ(feasible, 20);
  EXPECT_EQ(bound.load(), 20);
  EXPECT_EQ(refused.load(), 0);
  EXPECT_EQ(CheckNoDoubleBooking(api, capacity, 10), 20);
  EXPECT_TRUE(h.state().CheckConsistency().ok());
}

TEST(Scheduling, RestartRebuildsFromAnnotationsWithoutDoubleBooking) {
  FakeApiServer api;
  const auto capacity = AddNodes(api, 2, 2, 40960);
  const std::vector<std::string> nodes = {"node-0", "node-1"};
  std::vector<Json> first_pods;
  {
    ExtenderHarness h(&api);
    ASSERT_TRUE(h.Start().ok());
    for (int i = 0; i < 6; ++i) {
      first_pods.push_back(GpuPod("ml", "a" + std::to_string(i), 1, 50, 10000));
      api.PutPod(first_pods.back());
      EXPECT_FALSE(Schedule(h, first_pods.back(), nodes).empty());
    }
  }  // the scheduler stops ("crashes"); its memory is gone
  // A decision recorded but never bound (a crash between the annotation and the binding).
  Json orphan = GpuPod("ml", "orphan", 1, 50, 10000);
  PodAssignment a;
  for (const auto& [uuid, mem] : capacity) {
    a.node = uuid.substr(4, 6);  // "GPU-node-1-1" -> "node-1"
    a.reserved_milli = 500;
    a.reserved_memory_mib = 10000;
    a.containers = {{"main", false, -1, {{uuid, uuid.back() - '0', 500, 10000, 50}}}};
  }
  orphan["metadata"]["annotations"] = {
      {kAssignedNodeAnnotation, a.node},
      {kAssignedGpusAnnotation, FormatAssignment(a)},
      {kAssignedAtAnnotation, FormatTimestamp(std::chrono::system_clock::now())}};
  api.PutPod(orphan);

  ExtenderHarness h2(&api);
  ASSERT_TRUE(h2.Start().ok());
  PlacementState::Counts c = h2.state().counts();
  EXPECT_EQ(c.pods_bound, 6u);
  EXPECT_EQ(c.pods_assumed, 1u);
  EXPECT_EQ(c.conflicts, 0u);
  // 4 GPUs x 2 halves = 8 slots; 7 are taken: exactly one more fits.
  int placed = 0;
  for (int i = 0; i < 3; ++i) {
    Json pod = GpuPod("ml", "b" + std::to_string(i), 1, 50, 10000);
    api.PutPod(pod);
    placed += Schedule(h2, pod, nodes).empty() ? 0 : 1;
  }
  EXPECT_EQ(placed, 1);
  EXPECT_EQ(CheckNoDoubleBooking(api, capacity, 10), 7);
  EXPECT_TRUE(h2.state().CheckConsistency().ok());
}

TEST(Scheduling, WatchesKeepTheStateCurrent) {
  FakeApiServer api;
  AddNodes(api, 1, 1, 40960);
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  Json p1 = GpuPod("ml", "p1", 1, 100, 0);
  api.PutPod(p1);
  ASSERT_EQ(Schedule(h, p1, {"node-0"}), "node-0");
  Json p2 = GpuPod("ml", "p2", 1, 100, 0);
  api.PutPod(p2);
  EXPECT_EQ(Schedule(h, p2, {"node-0"}), "");  // the GPU is taken
  // p1 finishes: the pod watch frees its GPU.
  Json done = api.GetPod("ml", "p1");
  done["status"]["phase"] = "Succeeded";
  api.PutPod(done);
  ASSERT_TRUE(WaitFor([&] { return h.state().counts().pods_bound == 0; }));
  EXPECT_EQ(Schedule(h, p2, {"node-0"}), "node-0");
  // The GPU turns unhealthy: the node watch takes it out of new decisions.
  NodeInventory inv = *ParseInventory(InventoryJson("node-0", 1, "A100", 40960));
  inv.gpus[0].healthy = false;
  api.PutNode(MakeNode("node-0", {{kInventoryAnnotation, FormatInventory(inv)}}));
  Json p3 = GpuPod("ml", "p3", 1, 10, 100);
  api.PutPod(p3);
  ASSERT_TRUE(WaitFor([&] {
    return h.Post("filter", ArgsBody(p3, {"node-0"})).second["FailedAndUnresolvableNodes"].size() ==
           1;
  }));
  // p2 is deleted: counted no more.
  api.DeletePod("ml", "p2");
  ASSERT_TRUE(WaitFor([&] { return h.state().counts().pods_bound == 0; }));
  // A new node appears.
  AddNodes(api, 1, 2, 40960, 10, "new-");
  ASSERT_TRUE(WaitFor([&] { return h.state().counts().nodes == 2; }));
  EXPECT_EQ(Schedule(h, p3, {"node-0", "new-0"}), "new-0");
}

TEST(Scheduling, UnboundDecisionsExpireOnlyWhenTheApiServerAgrees) {
  FakeApiServer api;
  AddNodes(api, 1, 1, 40960);
  StateOptions so;
  so.assume_ttl = 300ms;
  ServiceOptions svo;
  svo.check_interval = 100ms;
  ExtenderHarness h(&api, so, svo);
  ASSERT_TRUE(h.Start().ok());
  // Pod A: its binding fails at the API server with 503s until the client gives up: the outcome
  // is unknown, so its GPU stays reserved until the checker asks.
  Json a = GpuPod("ml", "a", 1, 100, 0);
  api.PutPod(a);
  Json other = GpuPod("ml", "other", 1, 100, 0);
  api.PutPod(other);
  ASSERT_EQ(h.Post("filter", ArgsBody(a, {"node-0"})).second["NodeNames"].size(), 1u);
  ASSERT_EQ(h.Post("filter", ArgsBody(other, {"node-0"})).second["NodeNames"].size(), 1u);
  api.FailNext(100, 503, "POST");
  api.FailNext(100, 503, "GET");
  auto [s, b] = h.Post("bind", BindBody(a, "node-0"));
  EXPECT_NE(b["Error"].get<std::string>().find("503"), std::string::npos) << b.dump();
  EXPECT_EQ(h.state().counts().pods_assumed, 1u);
  // While the API server is down the reservation is held, past its TTL.
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(h.state().counts().pods_assumed, 1u);
  EXPECT_NE(h.Post("bind", BindBody(other, "node-0")).second["Error"], "");
  // The API server comes back; it says A is unbound: the GPU is released.
  api.ClearFaults();
  ASSERT_TRUE(WaitFor([&] { return h.state().counts().pods_assumed == 0; }, 20s));
  EXPECT_GE(h.state().counts().expired, 1u);
  // The stale decision is taken off the pod, so nothing acts on it later.
  ASSERT_TRUE(WaitFor(
      [&] { return AnnotationOf(api.GetPod("ml", "a"), kAssignedGpusAnnotation).empty(); }));
  EXPECT_TRUE(AnnotationOf(api.GetPod("ml", "a"), kAssignedNodeAnnotation).empty());
  EXPECT_EQ(Schedule(h, other, {"node-0"}), "node-0");
  // A bound pod with an old decision never expires.
  std::this_thread::sleep_for(600ms);
  EXPECT_EQ(h.state().counts().pods_bound, 1u);
}

TEST(Scheduling, BindConflictsAreSettledByAskingWhereThePodIs) {
  FakeApiServer api;
  AddNodes(api, 2, 1, 40960);
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  // Already bound to the chosen node (an earlier attempt got through): success.
  Json p = GpuPod("ml", "p", 1, 50, 1000);
  p["spec"]["nodeName"] = "node-0";
  api.PutPod(p);
  EXPECT_EQ(h.Post("bind", BindBody(p, "node-0")).second["Error"], "");
  // Bound elsewhere meanwhile: error, and the GPUs are released.
  Json q = GpuPod("ml", "q", 1, 100, 0);
  q["spec"]["nodeName"] = "node-0";
  api.PutPod(q);
  auto [s, b] = h.Post("bind", BindBody(q, "node-1"));
  EXPECT_NE(b["Error"].get<std::string>().find("already assigned"), std::string::npos) << b.dump();
  Json r = GpuPod("ml", "r", 1, 100, 0);
  api.PutPod(r);
  EXPECT_EQ(Schedule(h, r, {"node-1"}), "node-1");  // node-1's GPU was not left reserved
  // The pod was replaced (new UID) between filter and bind: refused.
  Json old = GpuPod("ml", "s", 1, 10, 100);
  Json replaced = old;
  replaced["metadata"]["uid"] = "new-uid";
  api.PutPod(replaced);
  EXPECT_NE(
      h.Post("bind", BindBody(old, "node-0")).second["Error"].get<std::string>().find("replaced"),
      std::string::npos);
}

TEST(Scheduling, ARetryOnAnotherNodeFirstSettlesTheEarlierBind) {
  FakeApiServer api;
  AddNodes(api, 2, 1, 40960);
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  for (bool bound_meanwhile : {false, true}) {
    SCOPED_TRACE(bound_meanwhile ? "the first binding went through" : "it did not");
    const std::string name = bound_meanwhile ? "b" : "a";
    Json pod = GpuPod("ml", name, 1, 100, 0);
    api.PutPod(pod);
    ASSERT_EQ(h.Post("filter", ArgsBody(pod, {"node-0", "node-1"})).first, 200);
    // The binding to node-0 gets no answer: the outcome is unknown, the GPU stays held.
    api.FailNext(100, 503, "POST");
    api.FailNext(100, 503, "GET");
    EXPECT_NE(h.Post("bind", BindBody(pod, "node-0")).second["Error"], "");
    api.ClearFaults();
    if (bound_meanwhile) {
      Json bound = api.GetPod("ml", name);
      bound["spec"]["nodeName"] = "node-0";
      api.PutPod(bound);
    }
    // kube-scheduler tries again, on node-1.
    auto [s, b] = h.Post("bind", BindBody(pod, "node-1"));
    if (bound_meanwhile) {
      EXPECT_NE(b["Error"].get<std::string>().find("already bound to node-0"), std::string::npos)
          << b.dump();
      ASSERT_TRUE(WaitFor([&] { return h.state().counts().pods_bound == 2; }));
    } else {
      EXPECT_EQ(b["Error"], "") << b.dump();
      EXPECT_EQ(api.GetPod("ml", name)["spec"]["nodeName"], "node-1");
    }
    EXPECT_TRUE(h.state().CheckConsistency().ok());
  }
  // Both GPUs are held: pod a on node-1, pod b on node-0; nothing else fits.
  int64_t used = 0;
  for (const auto& u : h.state().Usage()) used += u.milli_used;
  EXPECT_EQ(used, 2000);
}

TEST(Scheduling, HamiPodsAreCountedAfterMigration) {
  FakeApiServer api;
  AddNodes(api, 1, 2, 24576);
  Json hami = GpuPod("ml", "from-hami", 1, 0, 0);
  hami["spec"]["nodeName"] = "node-0";
  hami["metadata"]["annotations"] = {{kHamiAllocatedAnnotation, "GPU-node-0-0,NVIDIA,24576,100:;"},
                                     {kHamiNodeAnnotation, "node-0"}};
  api.PutPod(hami);
  ExtenderHarness h(&api);
  ASSERT_TRUE(h.Start().ok());
  EXPECT_EQ(h.state().counts().pods_bound, 1u);
  Json p = GpuPod("ml", "new", 1, 100, 0);
  api.PutPod(p);
  ASSERT_EQ(Schedule(h, p, {"node-0"}), "node-0");
  auto a = ParseAssignment(AnnotationOf(api.GetPod("ml", "new"), kAssignedGpusAnnotation));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->containers[0].gpus[0].uuid, "GPU-node-0-1");  // GPU 0 is HAMi's pod's
}

}  // namespace
}  // namespace vgpu::k8s::testing
