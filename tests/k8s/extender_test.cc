// The extender answers request bodies shaped exactly like kube-scheduler's (fixtures/), in both
// node-list and node-name forms; bad input gets a clear error or an unschedulable reason; HTTPS;
// /metrics passes promtool.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "harness.h"
#include "k8s/api/tls.h"
#include "support/temp_dir.h"

namespace vgpu::k8s::testing {
namespace {

class ExtenderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const Json& n : Fixture("nodes.json")) api_.PutNode(n);
    api_.PutPod(Fixture("pod_train.json"));
    h_ = std::make_unique<ExtenderHarness>(&api_);
    ASSERT_TRUE(h_->Start().ok());
  }
  FakeApiServer api_;
  std::unique_ptr<ExtenderHarness> h_;
};

TEST_F(ExtenderTest, FilterWithNodeNames) {
  auto [status, body] = h_->Post("filter", Fixture("filter_node_names.json").dump());
  ASSERT_EQ(status, 200);
  EXPECT_TRUE(body["Nodes"].is_null());
  EXPECT_EQ(body["NodeNames"], Json({"gpu-node-1", "gpu-node-2"}));  // all feasible, not one
  EXPECT_EQ(body["Error"], "");
  EXPECT_TRUE(body["FailedNodes"].empty());
  const Json& un = body["FailedAndUnresolvableNodes"];
  ASSERT_EQ(un.size(), 2u);
  EXPECT_NE(un["gpu-node-3"].get<std::string>().find("of an allowed model"), std::string::npos)
      << un.dump();
  EXPECT_NE(un["cpu-node-1"].get<std::string>().find("no GPU inventory"), std::string::npos);
}

TEST_F(ExtenderTest, FilterWithNodeObjects) {
  auto [status, body] = h_->Post("filter", Fixture("filter_nodes.json").dump());
  ASSERT_EQ(status, 200);
  EXPECT_TRUE(body["NodeNames"].is_null());
  ASSERT_TRUE(body["Nodes"]["items"].is_array());
  ASSERT_EQ(body["Nodes"]["items"].size(), 2u);
  EXPECT_EQ(body["Nodes"]["items"][0]["metadata"]["name"], "gpu-node-1");
  EXPECT_EQ(body["Nodes"]["items"][1]["status"]["capacity"]["nvidia.com/gpu"], "80");
  EXPECT_EQ(body["FailedAndUnresolvableNodes"].size(), 2u);
}

TEST_F(ExtenderTest, PrioritizeGivesTheEnginesChoiceTenAndNarrowAnswersItAlone) {
  auto [status, body] = h_->Post("prioritize", Fixture("prioritize_node_names.json").dump());
  ASSERT_EQ(status, 200);
  ASSERT_EQ(body.size(), 2u);
  // Two empty, equal nodes: one gets 10 (the tie-break), the other 9.
  const int a = body[0]["Score"], b = body[1]["Score"];
  EXPECT_EQ(std::max(a, b), 10);
  EXPECT_EQ(std::min(a, b), 9);
  const std::string choice = body[a == 10 ? 0 : 1]["Host"];

  StateOptions narrow;
  narrow.filter_mode = FilterMode::kNarrow;
  ExtenderHarness n(&api_, narrow);
  ASSERT_TRUE(n.Start().ok());
  auto [fs, f] = n.Post("filter", Fixture("filter_node_names.json").dump());
  ASSERT_EQ(fs, 200);
  EXPECT_EQ(f["NodeNames"], Json({choice}));
  const Json& un = f["FailedAndUnresolvableNodes"];
  ASSERT_EQ(un.size(), 3u);  // the other feasible node, narrowed, and the two that never fit
  for (const auto& [node, why] : un.items()) {
    if (node != "gpu-node-3" && node != "cpu-node-1") {
      EXPECT_NE(why.get<std::string>().find("another node fits the pod better"), std::string::npos);
    }
  }
  EXPECT_NE(n.RenderMetrics().find("vgpu_scheduler_filtered_nodes_total{result=\"narrowed\"} 1"),
            std::string::npos);
  EXPECT_EQ(n.state().counts().pods_held, 1u);
  auto [bs, bound] = n.Post("bind", BindBody(Fixture("pod_train.json"), choice));
  ASSERT_EQ(bs, 200);
  EXPECT_EQ(bound["Error"], "");
  EXPECT_EQ(api_.GetPod("ml", "train-0")["spec"]["nodeName"], choice);
  EXPECT_EQ(n.state().counts().pods_held, 0u);
}

// Replicas (the same spec and annotations, another name and UID) share one parse of the request
// but keep their own identity: each holds its own node in narrow mode and binds as itself; a pod
// whose annotations differ is judged on its own.
TEST_F(ExtenderTest, ReplicasShareTheRequestButNotTheIdentity) {
  const Json fx = Fixture("filter_node_names.json");
  Json replica = fx["Pod"];
  replica["metadata"]["name"] = "train-1";
  replica["metadata"]["uid"] = "6f1d2c3a-0000-4f7d-a1c2-3e4f5a6b7c8d";
  Json h100 = fx["Pod"];
  h100["metadata"]["name"] = "train-h100";
  h100["metadata"]["uid"] = "6f1d2c3a-1111-4f7d-a1c2-3e4f5a6b7c8d";
  h100["metadata"]["annotations"]["nvidia.com/use-gputype"] = "H100";
  for (const Json& p : {replica, h100}) api_.PutPod(p);
  StateOptions narrow;
  narrow.filter_mode = FilterMode::kNarrow;
  ExtenderHarness n(&api_, narrow);
  ASSERT_TRUE(n.Start().ok());
  const auto filter = [&](const Json& pod) {
    Json body = fx;
    body["Pod"] = pod;
    auto [status, answer] = n.Post("filter", body.dump());
    EXPECT_EQ(status, 200);
    return answer;
  };
  const Json first = filter(fx["Pod"]);
  const Json second = filter(replica);
  ASSERT_EQ(first["NodeNames"].size(), 1u);
  ASSERT_EQ(second["NodeNames"].size(), 1u);
  EXPECT_EQ(n.state().counts().pods_held, 2u);  // one hold per UID
  // The same spec asking for H100s only fits no node of the fixture (A100s and T4s).
  EXPECT_TRUE(filter(h100)["NodeNames"].empty());
  const std::string node = second["NodeNames"][0];
  auto [bs, bound] = n.Post("bind", BindBody(replica, node));
  ASSERT_EQ(bs, 200);
  EXPECT_EQ(bound["Error"], "");
  EXPECT_EQ(api_.GetPod("ml", "train-1")["spec"]["nodeName"], node);
  EXPECT_FALSE(api_.GetPod("ml", "train-0")["spec"].contains("nodeName"));
}

TEST_F(ExtenderTest, LowercaseKeysAreAcceptedLikeGo) {
  const Json fx = Fixture("filter_node_names.json");
  const Json lower = {{"pod", fx["Pod"]}, {"nodenames", fx["NodeNames"]}};
  auto [status, body] = h_->Post("filter", lower.dump());
  ASSERT_EQ(status, 200);
  EXPECT_EQ(body["NodeNames"].size(), 2u);
}

TEST_F(ExtenderTest, PrioritizeScoresZeroToTen) {
  // Make the nodes differ: one pod already on gpu-node-1.
  Json other = GpuPod("ml", "other", 1, 50, 30000);
  api_.PutPod(other);
  ASSERT_EQ(h_->Post("bind", BindBody(other, "gpu-node-1")).second["Error"], "");
  auto [status, body] = h_->Post("prioritize", Fixture("prioritize_node_names.json").dump());
  ASSERT_EQ(status, 200);
  ASSERT_TRUE(body.is_array());
  ASSERT_EQ(body.size(), 2u);
  for (const Json& hp : body) {
    EXPECT_TRUE(hp["Host"].is_string());
    EXPECT_GE(hp["Score"].get<int>(), 0);
    EXPECT_LE(hp["Score"].get<int>(), kMaxExtenderPriority);
  }
  EXPECT_EQ(body[0]["Host"], "gpu-node-1");
}

TEST_F(ExtenderTest, BindRecordsTheDecisionThenBinds) {
  ASSERT_EQ(h_->Post("filter", Fixture("filter_node_names.json").dump()).first, 200);
  auto [status, body] = h_->Post("bind", Fixture("bind.json").dump());
  ASSERT_EQ(status, 200);
  EXPECT_EQ(body, Json({{"Error", ""}}));
  const Json pod = api_.GetPod("ml", "train-0");
  EXPECT_EQ(pod["spec"]["nodeName"], "gpu-node-2");
  EXPECT_EQ(AnnotationOf(pod, kAssignedNodeAnnotation), "gpu-node-2");
  EXPECT_TRUE(ParseTimestamp(AnnotationOf(pod, kAssignedAtAnnotation)).has_value());
  auto a = ParseAssignment(AnnotationOf(pod, kAssignedGpusAnnotation));
  ASSERT_TRUE(a.has_value()) << a.error().ToString();
  ASSERT_EQ(a->containers.size(), 1u);
  EXPECT_EQ(a->containers[0].name, "trainer");
  ASSERT_EQ(a->containers[0].gpus.size(), 1u);
  const AssignedGpu& g = a->containers[0].gpus[0];
  EXPECT_EQ(g.uuid.rfind("GPU-b-", 0), 0u);
  EXPECT_EQ(g.milli, 300);
  EXPECT_EQ(g.memory_mib, 20000);
  EXPECT_EQ(g.cores, 30);
  EXPECT_EQ(api_.bindings(), 1);
  // The decision was recorded before the binding.
  EXPECT_EQ(h_->metrics().binds[static_cast<size_t>(BindOutcome::kBound)].load(), 1u);
}

TEST_F(ExtenderTest, BadInputGetsClearAnswers) {
  const auto filter = [&](const Json& pod) {
    return h_->Post("filter", ArgsBody(pod, {"gpu-node-1", "gpu-node-2"}));
  };
  auto [s1, b1] = h_->Post("filter", "{\"Pod\": {\"metadata\": ");
  EXPECT_EQ(s1, 400);
  EXPECT_NE(b1["Error"].get<std::string>().find("malformed JSON at byte"), std::string::npos);
  EXPECT_EQ(h_->Post("filter", "[]").first, 400);
  EXPECT_EQ(h_->Post("filter", R"({"NodeNames":["a"]})").first, 400);
  EXPECT_EQ(h_->Post("filter", R"({"Pod":{}})").first, 400);
  EXPECT_EQ(h_->Post("prioritize", "nope").first, 400);
  EXPECT_EQ(h_->Post("bind", R"({"PodName":"x"})").first, 400);

  auto [s2, b2] = h_->Post("filter", Fixture("filter_bad_cores.json").dump());
  ASSERT_EQ(s2, 200);
  EXPECT_TRUE(b2["NodeNames"].empty());
  EXPECT_EQ(b2["FailedAndUnresolvableNodes"].size(), 4u);
  EXPECT_EQ(b2["FailedAndUnresolvableNodes"]["gpu-node-1"],
            "vgpu: invalid GPU request: container 'trainer': nvidia.com/gpucores=101 is outside "
            "1..100");

  const std::pair<Json, std::string> cases[] = {
      {GpuPod("ml", "zero-cores", 1, 0, 100), ""},  // filled in below
      {GpuPod("ml", "huge", 1, 10, 999999), "asks 999999 MiB per GPU"},
      {GpuPod("ml", "many", 65, 10, 100), "nvidia.com/gpu=65 is outside 0..64"},
      {GpuPod("ml", "too-many-here", 9, 10, 100), "fewer than 9"},
  };
  for (const auto& [pod, want] : cases) {
    if (want.empty()) continue;
    auto [s, b] = filter(pod);
    ASSERT_EQ(s, 200);
    EXPECT_TRUE(b["NodeNames"].empty()) << MetaString(pod, "name");
    EXPECT_NE(b["FailedAndUnresolvableNodes"]["gpu-node-1"].get<std::string>().find(want),
              std::string::npos)
        << b.dump();
  }
  Json zero = GpuPod("ml", "zero", 1, 0, 100);
  zero["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpucores"] = "0";
  EXPECT_NE(filter(zero).second["FailedAndUnresolvableNodes"]["gpu-node-2"].get<std::string>().find(
                "nvidia.com/gpucores=0 is outside 1..100"),
            std::string::npos);
  Json negative = GpuPod("ml", "neg", 1, 10, 100);
  negative["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpumem"] = "-100";
  EXPECT_NE(filter(negative).second.dump().find("nvidia.com/gpumem=-100 is outside"),
            std::string::npos);
  Json unknown = GpuPod("ml", "unknown", 1, 10, 100);
  unknown["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu-memory"] = "1";
  EXPECT_NE(filter(unknown).second.dump().find("unknown resource nvidia.com/gpu-memory"),
            std::string::npos);
  Json garbage = GpuPod("ml", "garbage", 1, 10, 100);
  garbage["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "lots";
  EXPECT_NE(filter(garbage).second.dump().find("'lots' is not a quantity"), std::string::npos);
  garbage["spec"]["containers"] = "not a list";
  EXPECT_NE(filter(garbage).second.dump().find("spec.containers is not a list"), std::string::npos);

  // Binding a pod nobody knows, and to a node without GPUs.
  auto [s3, b3] =
      h_->Post("bind", R"({"PodName":"ghost","PodNamespace":"ml","Node":"gpu-node-1"})");
  EXPECT_EQ(s3, 200);
  EXPECT_NE(b3["Error"].get<std::string>().find("cannot read pod ml/ghost"), std::string::npos);
  Json train = Fixture("pod_train.json");
  auto [s4, b4] = h_->Post("bind", BindBody(train, "cpu-node-1"));
  EXPECT_NE(b4["Error"].get<std::string>().find("no vgpu GPU inventory"), std::string::npos);
  EXPECT_TRUE(api_.GetPod("ml", "train-0")["spec"]["nodeName"].is_null());
  // The server is still up and right.
  EXPECT_EQ(h_->Post("filter", Fixture("filter_node_names.json").dump()).second["NodeNames"].size(),
            2u);
  EXPECT_EQ(h_->Get("/filter").first, 405);
  EXPECT_EQ(h_->Get("/nowhere").first, 404);
}

TEST_F(ExtenderTest, HealthAndReadiness) {
  EXPECT_EQ(h_->Get("/healthz").first, 200);
  EXPECT_EQ(h_->Get("/readyz").first, 200);
  h_->extender().set_ready(false);
  EXPECT_EQ(h_->Get("/readyz").first, 503);
  auto [s, b] = h_->Post("filter", Fixture("filter_node_names.json").dump());
  EXPECT_EQ(s, 200);
  EXPECT_NE(b["Error"].get<std::string>().find("starting"), std::string::npos);
  EXPECT_EQ(h_->Post("prioritize", Fixture("filter_node_names.json").dump()).first, 503);
  h_->extender().set_ready(true);
}

TEST_F(ExtenderTest, MetricsPassPromtool) {
  h_->Post("filter", Fixture("filter_node_names.json").dump());
  h_->Post("prioritize", Fixture("prioritize_node_names.json").dump());
  h_->Post("bind", Fixture("bind.json").dump());
  auto [status, text] = h_->Get("/metrics");
  ASSERT_EQ(status, 200);
  EXPECT_NE(
      text.find("vgpu_scheduler_request_duration_seconds_bucket{verb=\"filter\",le=\"0.005\"}"),
      std::string::npos);
  EXPECT_NE(text.find("vgpu_scheduler_binds_total{result=\"bound\"} 1"), std::string::npos);
  EXPECT_NE(text.find("vgpu_gpu_compute_allocated_ratio{node=\"gpu-node-2\""), std::string::npos);
  if (!std::filesystem::exists("/usr/bin/promtool")) GTEST_SKIP() << "promtool not installed";
  vgpu::testing::TempDir tmp("vgpu-extender-metrics");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string path = tmp.path() + "/metrics.txt";
  WriteFile(path, text);
  const std::string cmd = "promtool check metrics < " + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[512];
  while (fgets(buf, sizeof buf, p) != nullptr) out += buf;
  const int rc = pclose(p);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out, "") << out;  // no lint warnings either
}

TEST(ExtenderServerTest, ServesHttpsWithTheGivenCertificate) {
  const TestPki pki = GenerateTestPki();
  vgpu::testing::TempDir tmp("vgpu-extender-tls");
  ASSERT_TRUE(tmp.ok()) << tmp.error();
  const std::string dir = tmp.path();
  WriteFile(dir + "/tls.crt", pki.server_cert_pem);
  WriteFile(dir + "/tls.key", pki.server_key_pem);
  WriteFile(dir + "/ca.crt", pki.ca_cert_pem);
  auto state = PlacementState::Create({});
  ASSERT_TRUE(state.has_value());
  (*state)->UpsertNode("n", *ParseInventory(InventoryJson("n", 1, "A100", 40960)));
  Extender ext(state->get(), nullptr, nullptr, {});
  ext.set_ready(true);
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "127.0.0.1:0";
  o.tls_cert = dir + "/tls.crt";
  o.tls_key = dir + "/tls.key";
  ExtenderServer server(
      &ext, [] { return std::string("m 1\n"); }, o);
  ASSERT_TRUE(server.Start().ok());
  httplib::SSLClient cli("127.0.0.1", server.port());
  cli.set_ca_cert_path((dir + "/ca.crt").c_str());
  cli.enable_server_certificate_verification(true);
  const Json pod = GpuPod("ns", "p", 1, 10, 100);
  auto res = cli.Post("/filter", ArgsBody(pod, {"n"}), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(Json::parse(res->body)["NodeNames"], Json({"n"}));
  httplib::Client plain("127.0.0.1", server.metrics_port());
  auto m = plain.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->body, "m 1\n");
  server.Stop();

  ServerOptions bad = o;
  bad.tls_key = "/nonexistent.key";
  EXPECT_EQ(ExtenderServer(&ext, nullptr, bad).Start().code(), StatusCode::kNotFound);
  bad.tls_key = "";
  EXPECT_EQ(ExtenderServer(&ext, nullptr, bad).Start().code(), StatusCode::kInvalidArgument);
  bad = ServerOptions{};
  bad.listen = "localhost";
  EXPECT_EQ(ExtenderServer(&ext, nullptr, bad).Start().code(), StatusCode::kInvalidArgument);
}

TEST(ExtenderServerTest, RefusesAnAddressInUse) {
  auto state = PlacementState::Create({});
  Extender ext(state->get(), nullptr, nullptr, {});
  ServerOptions o;
  o.listen = "127.0.0.1:0";
  o.metrics_listen = "";
  ExtenderServer first(&ext, nullptr, o);
  ASSERT_TRUE(first.Start().ok());
  o.listen = "127.0.0.1:" + std::to_string(first.port());
  ExtenderServer second(&ext, nullptr, o);
  EXPECT_EQ(second.Start().code(), StatusCode::kUnavailable);
}

}  // namespace
}  // namespace vgpu::k8s::testing
