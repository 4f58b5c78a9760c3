// The API-server client against a local HTTPS server: TLS verification, token and client
// certificate authentication, paging, retries with backoff, 409 conflicts retried by re-reading,
// bindings, and watches that drop, are resumed, and relist on 410.
#include <gtest/gtest.h>

#include <chrono>
#include <set>
#include <thread>

#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "k8s/api/informer.h"
#include "support/wait_for.h"

namespace vgpu::k8s {
namespace {

using vgpu::testing::WaitFor;

using namespace std::chrono_literals;
using testing::FakeApiServer;
using testing::MakeNode;
using testing::MakePod;

ClientOptions FastRetries() {
  ClientOptions o;
  o.initial_backoff = 5ms;
  o.max_backoff = 20ms;
  return o;
}

std::unique_ptr<HttpKubeClient> Connect(const KubeConfig& c, ClientOptions o = FastRetries()) {
  auto client = HttpKubeClient::Create(c, o);
  EXPECT_TRUE(client.has_value()) << client.error().ToString();
  return client ? std::move(*client) : nullptr;
}

TEST(KubeClient, TlsAndTokenAuthentication) {
  FakeApiServer server;
  server.PutNode(MakeNode("gpu-1", {{"a", "b"}}));
  auto client = Connect(server.ClientConfig());
  auto node = client->Get(ResourceKind::kNode, "", "gpu-1");
  ASSERT_TRUE(node.has_value()) << node.error().ToString();
  EXPECT_EQ(AnnotationOf(*node, "a"), "b");

  auto missing = client->Get(ResourceKind::kNode, "", "nope");
  ASSERT_FALSE(missing.has_value());
  EXPECT_EQ(missing.error().code(), StatusCode::kNotFound);

  KubeConfig wrong_token = server.ClientConfig();
  wrong_token.token = "wrong";
  auto denied = Connect(wrong_token)->Get(ResourceKind::kNode, "", "gpu-1");
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.error().message().find("401"), std::string::npos);
}

TEST(KubeClient, RefusesAnUntrustedServer) {
  FakeApiServer server;
  KubeConfig other_ca = server.ClientConfig();
  other_ca.ca_pem = server.pki().other_ca_cert_pem;
  auto r = Connect(other_ca)->Get(ResourceKind::kNode, "", "x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kPermissionDenied) << r.error().ToString();
  EXPECT_NE(r.error().message().find("not trusted"), std::string::npos);

  KubeConfig insecure = other_ca;
  insecure.insecure_skip_tls_verify = true;
  auto ok = Connect(insecure)->Get(ResourceKind::kNode, "", "x");
  ASSERT_FALSE(ok.has_value());
  EXPECT_EQ(ok.error().code(), StatusCode::kNotFound);  // reached the server
}

// A server that cannot be reached is named with the whole reason, not httplib's "Connection".
TEST(KubeClient, NamesWhyItCannotConnect) {
  int port = 0;
  {
    FakeApiServer gone;  // its port, free again once it stops
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  KubeConfig config;
  config.server = "http://127.0.0.1:" + std::to_string(port);
  ClientOptions once = FastRetries();
  once.max_attempts = 1;
  auto r = Connect(config, once)->Get(ResourceKind::kNode, "", "x");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(r.error().message().find("connection to " + config.server +
                                     " failed: cannot connect to "
                                     "127.0.0.1:" +
                                     std::to_string(port) + ": Connection refused"),
            std::string::npos)
      << r.error().message();
  config.server = "http://no-such-host.invalid:6443";
  auto unresolved = Connect(config, once)->Get(ResourceKind::kNode, "", "x");
  ASSERT_FALSE(unresolved.has_value());
  EXPECT_NE(unresolved.error().message().find("cannot resolve no-such-host.invalid: "),
            std::string::npos)
      << unresolved.error().message();
}

TEST(KubeClient, ClientCertificateAuthentication) {
  FakeApiServer::Options opt;
  opt.token = "";
  opt.require_client_cert = true;
  FakeApiServer server(opt);
  server.PutNode(MakeNode("n"));
  KubeConfig with_cert = server.ClientConfig();
  with_cert.client_cert_pem = server.pki().client_cert_pem;
  with_cert.client_key_pem = server.pki().client_key_pem;
  EXPECT_TRUE(Connect(with_cert)->Get(ResourceKind::kNode, "", "n").has_value());

  ClientOptions once = FastRetries();
  once.max_attempts = 1;
  auto without = Connect(server.ClientConfig(), once)->Get(ResourceKind::kNode, "", "n");
  EXPECT_FALSE(without.has_value());

  KubeConfig mismatched = with_cert;
  mismatched.client_key_pem = server.pki().server_key_pem;
  auto bad = HttpKubeClient::Create(mismatched);
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("does not belong"), std::string::npos);
}

TEST(KubeClient, RejectsBadConfiguration) {
  KubeConfig c;
  c.server = "ftp://x";
  EXPECT_EQ(HttpKubeClient::Create(c).error().code(), StatusCode::kInvalidArgument);
  c.server = "https://host:99999";
  EXPECT_NE(HttpKubeClient::Create(c).error().message().find("bad port"), std::string::npos);
  c.server = "https://host:6443";
  c.ca_pem = "not a pem";
  EXPECT_NE(HttpKubeClient::Create(c).error().message().find("CA"), std::string::npos);
}

TEST(KubeClient, ListFollowsPagesAndSelectors) {
  FakeApiServer server;
  for (int i = 0; i < 7; ++i) {
    Json pod = MakePod(i % 2 ? "a" : "b", "p" + std::to_string(i), "u" + std::to_string(i));
    pod["metadata"]["labels"] = {{"team", i < 4 ? "x" : "y"}};
    server.PutPod(pod);
  }
  auto client = Connect(server.ClientConfig());
  ListOptions lo;
  lo.page_size = 2;
  auto all = client->List(ResourceKind::kPod, "", lo);
  ASSERT_TRUE(all.has_value()) << all.error().ToString();
  EXPECT_EQ(all->items.size(), 7u);
  EXPECT_EQ(all->resource_version, std::to_string(server.resource_version()));
  EXPECT_GE(server.requests("GET"), 4);

  auto ns_a = client->List(ResourceKind::kPod, "a", {});
  ASSERT_TRUE(ns_a.has_value());
  EXPECT_EQ(ns_a->items.size(), 3u);
  lo.label_selector = "team=x";
  lo.page_size = 0;
  EXPECT_EQ(client->List(ResourceKind::kPod, "", lo)->items.size(), 4u);
}

TEST(KubeClient, RetriesUnavailableWithBackoff) {
  FakeApiServer server;
  server.PutNode(MakeNode("n"));
  auto client = Connect(server.ClientConfig());
  server.FailNext(2, 503);
  server.FailNext(1, 429);
  auto ok = client->Get(ResourceKind::kNode, "", "n");
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  EXPECT_EQ(client->stats().retries, 3u);

  server.FailNext(10, 500);
  auto gave_up = client->Get(ResourceKind::kNode, "", "n");
  ASSERT_FALSE(gave_up.has_value());
  EXPECT_EQ(gave_up.error().code(), StatusCode::kUnavailable);
  EXPECT_NE(gave_up.error().message().find("5 attempts"), std::string::npos);
}

TEST(KubeClient, RetriesWhenTheServerIsDown) {
  int port = 0;
  {
    FakeApiServer gone;
    port = std::stoi(gone.url().substr(gone.url().rfind(':') + 1));
  }
  KubeConfig c;
  c.server = "http://127.0.0.1:" + std::to_string(port);
  ClientOptions o = FastRetries();
  o.max_attempts = 3;
  auto client = Connect(c, o);
  auto r = client->Get(ResourceKind::kNode, "", "n");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(client->stats().retries, 2u);
}

TEST(KubeClient, ConflictsAreRetriedByRereading) {
  FakeApiServer server;
  server.PutPod(MakePod("ns", "p", "uid-1"));
  auto client = Connect(server.ClientConfig());
  server.FailNext(2, 409, "PATCH");
  int calls = 0;
  auto r = UpdateAnnotations(*client, ResourceKind::kPod, "ns", "p", [&](const Json& pod) {
    ++calls;
    EXPECT_EQ(MetaString(pod, "uid"), "uid-1");
    return Result<AnnotationChanges>(AnnotationChanges{{"vgpu.io/x", "1"}});
  });
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(AnnotationOf(server.GetPod("ns", "p"), "vgpu.io/x"), "1");
}

TEST(KubeClient, ConcurrentUpdatesLoseNothing) {
  FakeApiServer server;
  server.PutNode(MakeNode("n", {{"count", "0"}}));
  auto client = Connect(server.ClientConfig());
  constexpr int kThreads = 4, kEach = 10;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        auto r = UpdateAnnotations(
            *client, ResourceKind::kNode, "", "n",
            [](const Json& node) {
              const int v = std::stoi(AnnotationOf(node, "count"));
              return Result<AnnotationChanges>(AnnotationChanges{{"count", std::to_string(v + 1)}});
            },
            /*max_attempts=*/100);
        EXPECT_TRUE(r.has_value()) << r.error().ToString();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(AnnotationOf(server.GetNode("n"), "count"), std::to_string(kThreads * kEach));
}

TEST(KubeClient, UidPreconditionAndAnnotationRemoval) {
  FakeApiServer server;
  server.PutPod(MakePod("ns", "p", "uid-1", Json::array(), {{"keep", "1"}, {"drop", "2"}}));
  auto client = Connect(server.ClientConfig());
  auto stale = PatchAnnotations(*client, ResourceKind::kPod, "ns", "p", {{"x", "1"}}, "uid-old");
  ASSERT_FALSE(stale.has_value());
  EXPECT_EQ(stale.error().code(), StatusCode::kAlreadyExists);
  auto ok = PatchAnnotations(*client, ResourceKind::kPod, "ns", "p",
                             {{"x", "1"}, {"drop", std::nullopt}}, "uid-1");
  ASSERT_TRUE(ok.has_value()) << ok.error().ToString();
  const Json pod = server.GetPod("ns", "p");
  EXPECT_EQ(AnnotationOf(pod, "x"), "1");
  EXPECT_EQ(AnnotationOf(pod, "keep"), "1");
  EXPECT_FALSE(pod["metadata"]["annotations"].contains("drop"));
}

TEST(KubeClient, BindingAssignsTheNodeOnce) {
  FakeApiServer server;
  server.PutPod(MakePod("ns", "p", "uid-1"));
  auto client = Connect(server.ClientConfig());
  EXPECT_FALSE(client->CreateBinding("ns", "p", "other-uid", "n1").ok());
  ASSERT_TRUE(client->CreateBinding("ns", "p", "uid-1", "n1").ok());
  EXPECT_EQ(server.GetPod("ns", "p")["spec"]["nodeName"], "n1");
  Status again = client->CreateBinding("ns", "p", "uid-1", "n2");
  EXPECT_EQ(again.code(), StatusCode::kAlreadyExists);
  EXPECT_NE(again.message().find("already assigned"), std::string::npos);
  EXPECT_EQ(client->CreateBinding("ns", "gone", "", "n1").code(), StatusCode::kNotFound);
}

// Collects what an informer reports, as a map name -> annotation "v".
struct Collector {
  std::mutex mu;
  std::map<std::string, std::string> state;
  std::vector<std::string> events;  // "TYPE name v"
  int replaces = 0;
  Informer::Handler Handler() {
    return {[this](const std::vector<Json>& items) {
              std::lock_guard<std::mutex> lock(mu);
              ++replaces;
              state.clear();
              for (const Json& o : items) state[MetaString(o, "name")] = AnnotationOf(o, "v");
            },
            [this](const std::string& type, const Json& o) {
              std::lock_guard<std::mutex> lock(mu);
              const std::string name = MetaString(o, "name");
              events.push_back(type + " " + name + " " + AnnotationOf(o, "v"));
              if (type == "DELETED") {
                state.erase(name);
              } else {
                state[name] = AnnotationOf(o, "v");
              }
            }};
  }
  size_t num_events() {
    std::lock_guard<std::mutex> lock(mu);
    return events.size();
  }
};

TEST(Informer, WatchThatDropsIsResumedWithoutLossOrRepeats) {
  FakeApiServer server;
  server.PutPod(MakePod("ns", "p0", "u0", Json::array(), {{"v", "0"}}));
  auto client = Connect(server.ClientConfig());
  Collector seen;
  Informer::Options opt;
  opt.initial_backoff = 5ms;
  Informer informer(client.get(), ResourceKind::kPod, opt, seen.Handler());
  ASSERT_TRUE(informer.ListNow().ok());
  server.DropWatchesAfter(3);
  informer.Start();
  ASSERT_TRUE(WaitFor([&] { return server.active_watches() == 1; }));
  constexpr int kUpdates = 20;
  for (int i = 1; i <= kUpdates; ++i) {
    server.PutPod(
        MakePod("ns", "p" + std::to_string(i % 4), "u", Json::array(), {{"v", std::to_string(i)}}));
  }
  ASSERT_TRUE(WaitFor([&] { return seen.num_events() >= kUpdates; }));
  std::this_thread::sleep_for(100ms);
  informer.Stop();
  std::lock_guard<std::mutex> lock(seen.mu);
  ASSERT_EQ(seen.events.size(), static_cast<size_t>(kUpdates));  // none missed, none repeated
  for (int i = 1; i <= kUpdates; ++i) {
    EXPECT_EQ(seen.events[i - 1].substr(seen.events[i - 1].rfind(' ') + 1), std::to_string(i));
  }
  EXPECT_EQ(seen.state["p0"], "20");
  EXPECT_GE(informer.stats().resumed, 5u);
  EXPECT_EQ(informer.stats().relists, 0u);
  EXPECT_EQ(seen.replaces, 1);
}

TEST(Informer, RelistsOnGone) {
  for (bool http_410 : {false, true}) {
    SCOPED_TRACE(http_410 ? "HTTP 410" : "ERROR event 410");
    FakeApiServer server;
    server.PutNode(MakeNode("a", {{"v", "1"}}));
    auto client = Connect(server.ClientConfig());
    Collector seen;
    Informer::Options opt;
    opt.initial_backoff = 5ms;
    Informer informer(client.get(), ResourceKind::kNode, opt, seen.Handler());
    ASSERT_TRUE(informer.ListNow().ok());
    informer.Start();
    ASSERT_TRUE(WaitFor([&] { return server.active_watches() == 1; }));
    // Changes happen while the watch is cut and the history is compacted away.
    server.DropWatchesAfter(1);
    server.PutNode(MakeNode("b", {{"v", "2"}}));
    ASSERT_TRUE(WaitFor([&] { return seen.num_events() == 1; }));
    server.DeleteNode("a");
    server.PutNode(MakeNode("c", {{"v", "3"}}));
    server.Compact(http_410);
    server.DropWatchesAfter(0);
    ASSERT_TRUE(WaitFor([&] { return informer.stats().relists >= 1; }));
    ASSERT_TRUE(WaitFor([&] {
      std::lock_guard<std::mutex> lock(seen.mu);
      return seen.replaces == 2;
    }));
    informer.Stop();
    std::lock_guard<std::mutex> lock(seen.mu);
    EXPECT_EQ(seen.state, (std::map<std::string, std::string>{{"b", "2"}, {"c", "3"}}));
  }
}

TEST(Informer, StopsPromptlyDuringAnIdleWatch) {
  FakeApiServer server;
  auto client = Connect(server.ClientConfig());
  Collector seen;
  Informer informer(client.get(), ResourceKind::kPod, {}, seen.Handler());
  informer.Start();
  ASSERT_TRUE(WaitFor([&] { return server.active_watches() == 1; }));
  EXPECT_TRUE(informer.HasSynced());
  const auto t0 = std::chrono::steady_clock::now();
  informer.Stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

TEST(Informer, BacksOffWhileTheServerRefuses) {
  FakeApiServer server;
  auto client = Connect(server.ClientConfig());
  Collector seen;
  Informer::Options opt;
  opt.initial_backoff = 10ms;
  Informer informer(client.get(), ResourceKind::kPod, opt, seen.Handler());
  server.FailNext(1000, 403);  // not retried by the client; the informer backs off
  const auto t0 = std::chrono::steady_clock::now();
  informer.Start();
  std::this_thread::sleep_for(300ms);
  EXPECT_LE(informer.stats().errors, 8u);  // 10, 20, 40, 80, 160 ms apart: not a busy loop
  // Four failures take at least 10 + 20 + 40 ms of waiting between them (a slow machine only
  // makes it longer).
  ASSERT_TRUE(WaitFor([&] { return informer.stats().errors >= 4; }));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 70ms);
  EXPECT_FALSE(informer.HasSynced());
  informer.Stop();
}

}  // namespace
}  // namespace vgpu::k8s
