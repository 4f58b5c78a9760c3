// The admission webhook over real TLS (httplib client verifying a generated CA), and the
// publication of that CA into a MutatingWebhookConfiguration's caBundle through the API-server
// client against the local HTTPS API server.
#include "k8s/webhook/webhook_server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>

#include "fake_api_server.h"
#include "k8s/api/encoding.h"
#include "k8s/api/http_kube_client.h"
#include "k8s/api/tls.h"
#include "k8s/webhook/webhook_certs.h"
#include "support/wait_for.h"

namespace vgpu::k8s::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kService = "vgpu-scheduler-webhook.vgpu-system";
constexpr const char* kHost = "vgpu-scheduler-webhook.vgpu-system.svc";

WebhookCertificates Certs() {
  auto names = ServiceDnsNames(kService);
  EXPECT_TRUE(names.has_value());
  auto certs = GenerateWebhookCertificates(*names);
  EXPECT_TRUE(certs.has_value()) << certs.error().ToString();
  return *certs;
}

// A client that reaches 127.0.0.1:port under the Service's DNS name and verifies the server
// against `ca_pem` (empty: no CA, so verification must fail).
std::unique_ptr<httplib::SSLClient> Client(int port, const std::string& ca_pem) {
  auto cli = std::make_unique<httplib::SSLClient>(kHost, port);
  cli->set_hostname_addr_map({{kHost, "127.0.0.1"}});
  cli->enable_server_certificate_verification(true);
  if (!ca_pem.empty()) {
    auto store = BuildCaStore(ca_pem);
    EXPECT_TRUE(store.has_value());
    cli->set_ca_cert_store(store->release());  // owned by the client's SSL context
  }
  cli->set_connection_timeout(2, 0);
  return cli;
}

std::string HamiReview(const std::string& uid) {
  const Json review = {{"apiVersion", "admission.k8s.io/v1"},
                       {"kind", "AdmissionReview"},
                       {"request",
                        {{"uid", uid},
                         {"resource", {{"group", ""}, {"version", "v1"}, {"resource", "pods"}}},
                         {"namespace", "ml"},
                         {"operation", "CREATE"},
                         {"object",
                          {{"apiVersion", "v1"},
                           {"kind", "Pod"},
                           {"metadata", {{"name", "p"}}},
                           {"spec",
                            {{"schedulerName", "default-scheduler"},
                             {"containers",
                              {{{"name", "c"},
                                {"resources",
                                 {{"limits",
                                   {{"nvidia.com/gpu", "1"},
                                    {"nvidia.com/gpumem", "3000"},
                                    {"nvidia.com/gpucores", "30"}}}}}}}}}}}}}}};
  return review.dump();
}

TEST(WebhookServer, ServesReviewsOverVerifiedTls) {
  const WebhookCertificates certs = Certs();
  AdmissionWebhook hook({});
  WebhookServerOptions o;
  o.listen = "127.0.0.1:0";
  o.path = "/mutate";
  o.cert_pem = certs.cert_pem;
  o.key_pem = certs.key_pem;
  WebhookServer server(&hook, o);
  ASSERT_TRUE(server.Start().ok());
  auto cli = Client(server.port(), certs.ca_cert_pem);

  auto res = cli->Post("/mutate", HamiReview("uid-tls"), "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
  const Json out = Json::parse(res->body);
  EXPECT_EQ(out["response"]["uid"], "uid-tls");
  EXPECT_EQ(out["response"]["allowed"], true);
  auto patch = Base64Decode(out["response"]["patch"].get<std::string>());
  ASSERT_TRUE(patch.has_value());
  EXPECT_EQ(Json::parse(*patch)[0]["value"], "vgpu-scheduler");

  auto bad = cli->Post("/mutate", "{\"apiVersion\":", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_NE(bad->body.find("not JSON"), std::string::npos) << bad->body;

  EXPECT_EQ(cli->Post("/webhook", HamiReview("u"), "application/json")->status, 404);
  auto health = cli->Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);

  // A client that does not trust the CA gets no answer.
  auto untrusted = Client(server.port(), Certs().ca_cert_pem);
  EXPECT_FALSE(untrusted->Post("/mutate", HamiReview("u"), "application/json"));
  // Plain HTTP is not served.
  httplib::Client plain("127.0.0.1", server.port());
  plain.set_connection_timeout(1, 0);
  plain.set_read_timeout(1, 0);
  auto p = plain.Post("/mutate", HamiReview("u"), "application/json");
  EXPECT_TRUE(!p || p->status == 400);
  server.Stop();
}

TEST(WebhookServer, ReplacesItsCertificateWhileServing) {
  const WebhookCertificates first = Certs();
  const WebhookCertificates second = Certs();
  AdmissionWebhook hook({});
  WebhookServerOptions o;
  o.listen = "127.0.0.1:0";
  o.cert_pem = first.cert_pem;
  o.key_pem = first.key_pem;
  o.keep_alive_seconds = 1;
  WebhookServer server(&hook, o);
  ASSERT_TRUE(server.Start().ok());
  EXPECT_TRUE(Client(server.port(), first.ca_cert_pem)->Get("/healthz"));
  // A key that does not belong to the certificate changes nothing.
  EXPECT_EQ(server.SetCertificate(second.cert_pem, first.key_pem).code(),
            StatusCode::kInvalidArgument);
  EXPECT_TRUE(Client(server.port(), first.ca_cert_pem)->Get("/healthz"));
  ASSERT_TRUE(server.SetCertificate(second.cert_pem, second.key_pem).ok());
  EXPECT_TRUE(Client(server.port(), second.ca_cert_pem)->Get("/healthz"));
  EXPECT_FALSE(Client(server.port(), first.ca_cert_pem)->Get("/healthz"));
}

TEST(WebhookServer, RefusesBadOptions) {
  const WebhookCertificates certs = Certs();
  AdmissionWebhook hook({});
  WebhookServerOptions o;
  o.listen = "127.0.0.1:0";
  o.cert_pem = certs.cert_pem;
  o.key_pem = "not a key";
  EXPECT_EQ(WebhookServer(&hook, o).Start().code(), StatusCode::kInvalidArgument);
  o.key_pem = certs.key_pem;
  o.path = "webhook";
  EXPECT_EQ(WebhookServer(&hook, o).Start().code(), StatusCode::kInvalidArgument);
  o.path = "/a(b";
  EXPECT_EQ(WebhookServer(&hook, o).Start().code(), StatusCode::kInvalidArgument);
  o.path = "/webhook";
  o.listen = "nowhere";
  EXPECT_EQ(WebhookServer(&hook, o).Start().code(), StatusCode::kInvalidArgument);
  // An address in use.
  o.listen = "127.0.0.1:0";
  WebhookServer first(&hook, o);
  ASSERT_TRUE(first.Start().ok());
  o.listen = "127.0.0.1:" + std::to_string(first.port());
  EXPECT_EQ(WebhookServer(&hook, o).Start().code(), StatusCode::kUnavailable);
}

// ---- caBundle publication ----

Json WebhookConfiguration(const std::string& name, int webhooks) {
  Json config = {{"apiVersion", "admissionregistration.k8s.io/v1"},
                 {"kind", "MutatingWebhookConfiguration"},
                 {"metadata", {{"name", name}}},
                 {"webhooks", Json::array()}};
  for (int i = 0; i < webhooks; ++i) {
    config["webhooks"].push_back({{"name", "pods-" + std::to_string(i) + ".vgpu.io"},
                                  {"clientConfig",
                                   {{"service",
                                     {{"name", "vgpu-scheduler-webhook"},
                                      {"namespace", "vgpu-system"},
                                      {"path", "/webhook"}}}}},
                                  {"failurePolicy", "Ignore"},
                                  {"sideEffects", "None"},
                                  {"admissionReviewVersions", {"v1"}}});
  }
  return config;
}

std::unique_ptr<HttpKubeClient> Connect(const FakeApiServer& api) {
  ClientOptions o;
  o.initial_backoff = 1ms;
  o.max_backoff = 5ms;
  auto client = HttpKubeClient::Create(api.ClientConfig(), o);
  EXPECT_TRUE(client.has_value());
  return std::move(*client);
}

std::string BundleOf(const Json& config, size_t i) {
  auto pem = Base64Decode(config["webhooks"][i]["clientConfig"]["caBundle"].get<std::string>());
  return pem.value_or("");
}

TEST(CaBundle, IsWrittenIntoEveryWebhookOfTheConfiguration) {
  FakeApiServer api;
  api.PutWebhookConfiguration(WebhookConfiguration("vgpu-scheduler", 2));
  auto client = Connect(api);
  const WebhookCertificates certs = Certs();
  auto wrote = PublishCaBundle(*client, "vgpu-scheduler", certs.ca_cert_pem);
  ASSERT_TRUE(wrote.has_value()) << wrote.error().ToString();
  EXPECT_TRUE(*wrote);
  const Json config = api.GetWebhookConfiguration("vgpu-scheduler");
  EXPECT_EQ(BundleOf(config, 0), certs.ca_cert_pem);
  EXPECT_EQ(BundleOf(config, 1), certs.ca_cert_pem);
  EXPECT_EQ(config["webhooks"][0]["failurePolicy"], "Ignore");  // the rest is untouched
  // Already there: nothing written.
  const int64_t rv = api.resource_version();
  auto again = PublishCaBundle(*client, "vgpu-scheduler", certs.ca_cert_pem);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(*again);
  EXPECT_EQ(api.resource_version(), rv);

  // The bundle the API server now trusts verifies the webhook served with that certificate.
  AdmissionWebhook hook({});
  WebhookServerOptions o;
  o.listen = "127.0.0.1:0";
  o.cert_pem = certs.cert_pem;
  o.key_pem = certs.key_pem;
  WebhookServer server(&hook, o);
  ASSERT_TRUE(server.Start().ok());
  auto res = Client(server.port(), BundleOf(config, 0))
                 ->Post("/webhook", HamiReview("uid-bundle"), "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(Json::parse(res->body)["response"]["uid"], "uid-bundle");
}

TEST(CaBundle, RetriesAConflictAndReportsAMissingConfiguration) {
  FakeApiServer api;
  auto client = Connect(api);
  const WebhookCertificates certs = Certs();
  EXPECT_EQ(PublishCaBundle(*client, "vgpu-scheduler", certs.ca_cert_pem).error().code(),
            StatusCode::kNotFound);
  api.PutWebhookConfiguration(WebhookConfiguration("empty", 0));
  EXPECT_EQ(PublishCaBundle(*client, "empty", certs.ca_cert_pem).error().code(),
            StatusCode::kFailedPrecondition);

  api.PutWebhookConfiguration(WebhookConfiguration("vgpu-scheduler", 1));
  api.FailNext(2, 409, "PATCH");
  auto wrote = PublishCaBundle(*client, "vgpu-scheduler", certs.ca_cert_pem);
  ASSERT_TRUE(wrote.has_value()) << wrote.error().ToString();
  EXPECT_EQ(BundleOf(api.GetWebhookConfiguration("vgpu-scheduler"), 0), certs.ca_cert_pem);

  // The resourceVersion the patch carries is a precondition: a stale one is a conflict.
  const Json stale = Json::array(
      {{{"op", "replace"}, {"path", "/metadata/resourceVersion"}, {"value", "1"}},
       {{"op", "add"}, {"path", "/webhooks/0/clientConfig/caBundle"}, {"value", "eA=="}}});
  auto r = client->Patch(ResourceKind::kMutatingWebhookConfiguration, "", "vgpu-scheduler", stale,
                         PatchType::kJsonPatch);
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().code(), StatusCode::kAlreadyExists);
}

TEST(CaBundle, PublisherWaitsForTheConfigurationAndRestoresTheBundle) {
  FakeApiServer api;
  auto client = Connect(api);
  const WebhookCertificates certs = Certs();
  CaBundlePublisher::Options o;
  o.initial_backoff = 5ms;
  o.max_backoff = 20ms;
  o.recheck = 20ms;
  CaBundlePublisher publisher(client.get(), "vgpu-scheduler", certs.ca_cert_pem, o);
  publisher.Start();
  vgpu::testing::WaitFor([&] { return publisher.failures() != 0; }, 5000ms, 10ms);
  EXPECT_GT(publisher.failures(), 0u);  // not there yet
  api.PutWebhookConfiguration(WebhookConfiguration("vgpu-scheduler", 1));
  const auto wait_for_bundle = [&] {
    return vgpu::testing::WaitFor(
        [&] {
          const Json c = api.GetWebhookConfiguration("vgpu-scheduler");
          return c["webhooks"][0]["clientConfig"].contains("caBundle") &&
                 BundleOf(c, 0) == certs.ca_cert_pem;
        },
        2500ms, 5ms);
  };
  EXPECT_TRUE(wait_for_bundle());
  // Re-applied without a caBundle (kubectl replace): the publisher writes it again.
  api.PutWebhookConfiguration(WebhookConfiguration("vgpu-scheduler", 1));
  EXPECT_TRUE(wait_for_bundle());
  publisher.Stop();
  EXPECT_GT(publisher.successes(), 0u);
}

}  // namespace
}  // namespace vgpu::k8s::testing
