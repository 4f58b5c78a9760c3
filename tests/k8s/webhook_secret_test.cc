// The webhook's CA and serving certificate kept in a Secret, against the local HTTPS API server:
// the first start creates the Secret, later starts reuse it (same CA, caBundle untouched), a
// garbled or expiring Secret is replaced, and replicas starting together end with one CA.
#include "k8s/webhook/webhook_cert_secret.h"

#include <gtest/gtest.h>

#include <barrier>
#include <chrono>
#include <thread>

#include "fake_api_server.h"
#include "k8s/api/encoding.h"
#include "k8s/api/http_kube_client.h"

namespace vgpu::k8s::testing {
namespace {

using namespace std::chrono_literals;

constexpr const char* kNs = "vgpu-system";
constexpr const char* kSecret = "vgpu-scheduler-webhook-tls";
constexpr const char* kConfig = "vgpu-scheduler";

std::vector<std::string> Names() {
  auto names = ServiceDnsNames("vgpu-scheduler-webhook.vgpu-system");
  EXPECT_TRUE(names.has_value());
  return *names;
}

WebhookSecretOptions Options() {
  WebhookSecretOptions o;
  o.ns = kNs;
  o.name = kSecret;
  o.names = Names();
  return o;
}

std::unique_ptr<HttpKubeClient> Connect(const FakeApiServer& api) {
  ClientOptions o;
  o.initial_backoff = 1ms;
  o.max_backoff = 5ms;
  auto client = HttpKubeClient::Create(api.ClientConfig(), o);
  EXPECT_TRUE(client.has_value());
  return std::move(*client);
}

Json WebhookConfiguration() {
  return Json{{"apiVersion", "admissionregistration.k8s.io/v1"},
              {"kind", "MutatingWebhookConfiguration"},
              {"metadata", {{"name", kConfig}, {"uid", "cfg-uid"}}},
              {"webhooks",
               {{{"name", "pods.vgpu.io"},
                 {"clientConfig",
                  {{"service", {{"name", "vgpu-scheduler-webhook"}, {"namespace", kNs}}}}}}}}};
}

std::string Bundle(const FakeApiServer& api) {
  const Json config = api.GetWebhookConfiguration(kConfig);
  const Json& cc = config["webhooks"][0]["clientConfig"];
  if (!cc.contains("caBundle")) return "";
  return Base64Decode(cc["caBundle"].get<std::string>()).value_or("");
}

size_t CertificateCount(const std::string& pem) {
  size_t n = 0;
  for (size_t at = pem.find("BEGIN CERTIFICATE"); at != std::string::npos;
       at = pem.find("BEGIN CERTIFICATE", at + 1)) {
    ++n;
  }
  return n;
}

Result<WebhookSecretResult> Start(KubeClient& client) {
  auto r = LoadOrCreateWebhookSecret(client, Options());
  if (r) {
    auto published = PublishCaBundle(client, kConfig, r->certs.ca_cert_pem);
    if (!published) return published.error();
  }
  return r;
}

TEST(WebhookSecret, FirstStartCreatesItAndSecondStartReusesIt) {
  FakeApiServer api;
  api.PutWebhookConfiguration(WebhookConfiguration());
  auto client = Connect(api);

  auto first = Start(*client);
  ASSERT_TRUE(first.has_value()) << first.error().ToString();
  EXPECT_EQ(first->source, WebhookSecretSource::kCreated);
  EXPECT_TRUE(CheckWebhookCertificates(first->certs, Names(), 24h * 30).ok());
  const Json secret = api.GetSecret(kNs, kSecret);
  ASSERT_FALSE(secret.is_null());
  EXPECT_EQ(secret["type"], "kubernetes.io/tls");
  auto stored = CertificatesFromSecret(secret);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->ca_cert_pem, first->certs.ca_cert_pem);
  EXPECT_EQ(stored->cert_pem, first->certs.cert_pem);
  EXPECT_EQ(stored->key_pem, first->certs.key_pem);
  EXPECT_EQ(Bundle(api), first->certs.ca_cert_pem);

  // A restart (a new client, as a new process has): same certificates, nothing written.
  const int64_t rv = api.resource_version();
  const int puts = api.requests("PUT"), posts = api.requests("POST"),
            patches = api.requests("PATCH");
  auto restarted_client = Connect(api);
  auto second = Start(*restarted_client);
  ASSERT_TRUE(second.has_value()) << second.error().ToString();
  EXPECT_EQ(second->source, WebhookSecretSource::kReused);
  EXPECT_EQ(second->certs.ca_cert_pem, first->certs.ca_cert_pem);
  EXPECT_EQ(second->certs.cert_pem, first->certs.cert_pem);
  EXPECT_EQ(second->certs.key_pem, first->certs.key_pem);
  EXPECT_EQ(api.resource_version(), rv);
  EXPECT_EQ(api.requests("PUT"), puts);
  EXPECT_EQ(api.requests("POST"), posts);
  EXPECT_EQ(api.requests("PATCH"), patches);
  EXPECT_EQ(Bundle(api), first->certs.ca_cert_pem);
  EXPECT_EQ(CertificateCount(Bundle(api)), 1u);
}

TEST(WebhookSecret, ExpiringCertificatesAreReplaced) {
  FakeApiServer api;
  api.PutWebhookConfiguration(WebhookConfiguration());
  auto old = GenerateWebhookCertificates(Names(), 24h * 10);  // expires within 30 days
  ASSERT_TRUE(old.has_value());
  api.PutSecret(SecretObject(kNs, kSecret, *old));
  auto client = Connect(api);
  ASSERT_TRUE(PublishCaBundle(*client, kConfig, old->ca_cert_pem).has_value());

  auto r = Start(*client);
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->source, WebhookSecretSource::kReplaced);
  EXPECT_NE(r->replaced_because.find("expires within 30 days"), std::string::npos)
      << r->replaced_because;
  EXPECT_NE(r->certs.ca_cert_pem, old->ca_cert_pem);
  auto stored = CertificatesFromSecret(api.GetSecret(kNs, kSecret));
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(stored->ca_cert_pem, r->certs.ca_cert_pem);
  // The new CA leads the bundle; the old one, still valid for some days, stays behind it so
  // that a replica still serving the old certificate is trusted until it restarts.
  const std::string bundle = Bundle(api);
  EXPECT_EQ(bundle.rfind(r->certs.ca_cert_pem, 0), 0u);
  EXPECT_EQ(CertificateCount(bundle), 2u);

  // And the next start keeps the new ones.
  auto again = Start(*client);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->source, WebhookSecretSource::kReused);
  EXPECT_EQ(again->certs.ca_cert_pem, r->certs.ca_cert_pem);
  EXPECT_EQ(Bundle(api), bundle);
}

TEST(WebhookSecret, GarbledOrForeignContentIsReplacedKeepingTheType) {
  auto other = GenerateWebhookCertificates({"other.example"});
  ASSERT_TRUE(other.has_value());
  auto mixed = GenerateWebhookCertificates(Names());
  ASSERT_TRUE(mixed.has_value());
  WebhookCertificates mismatched = *mixed;
  mismatched.ca_cert_pem = other->ca_cert_pem;  // the serving certificate is not signed by it

  struct Case {
    const char* what;
    Json data;
    const char* reason;
  };
  const Case cases[] = {
      {"no data", nullptr, "no data"},
      {"missing ca.crt",
       Json{{"tls.crt", Base64Encode(mixed->cert_pem)}, {"tls.key", Base64Encode(mixed->key_pem)}},
       "no ca.crt"},
      {"not PEM",
       Json{{"tls.crt", Base64Encode("garbage")},
            {"tls.key", Base64Encode("garbage")},
            {"ca.crt", Base64Encode("garbage")}},
       "CA certificate"},
      {"other names", SecretObject(kNs, kSecret, *other)["data"], "does not cover"},
      {"foreign CA", SecretObject(kNs, kSecret, mismatched)["data"], "not signed by the CA"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    FakeApiServer api;
    Json secret = {{"apiVersion", "v1"},
                   {"kind", "Secret"},
                   {"type", "Opaque"},
                   {"metadata", {{"name", kSecret}, {"namespace", kNs}}}};
    if (!c.data.is_null()) secret["data"] = c.data;
    api.PutSecret(secret);
    auto client = Connect(api);
    auto r = LoadOrCreateWebhookSecret(*client, Options());
    ASSERT_TRUE(r.has_value()) << r.error().ToString();
    EXPECT_EQ(r->source, WebhookSecretSource::kReplaced);
    EXPECT_NE(r->replaced_because.find(c.reason), std::string::npos) << r->replaced_because;
    const Json stored = api.GetSecret(kNs, kSecret);
    EXPECT_EQ(stored["type"], "Opaque");  // the API server refuses a type change
    auto certs = CertificatesFromSecret(stored);
    ASSERT_TRUE(certs.has_value());
    EXPECT_EQ(certs->ca_cert_pem, r->certs.ca_cert_pem);
    EXPECT_TRUE(CheckWebhookCertificates(*certs, Names(), 24h * 30).ok());
  }
}

// A client whose first Create lets another replica start completely before it reaches the API
// server: the create then meets the other replica's Secret (409 AlreadyExists).
class LateCreator final : public KubeClient {
 public:
  LateCreator(KubeClient* inner, std::function<void()> before_create)
      : inner_(inner), before_create_(std::move(before_create)) {}
  Result<Json> Get(ResourceKind k, const std::string& ns, const std::string& n) override {
    return inner_->Get(k, ns, n);
  }
  Result<ObjectList> List(ResourceKind k, const std::string& ns, const ListOptions& o) override {
    return inner_->List(k, ns, o);
  }
  Result<Json> Patch(ResourceKind k, const std::string& ns, const std::string& n, const Json& p,
                     PatchType t) override {
    return inner_->Patch(k, ns, n, p, t);
  }
  Result<Json> Create(ResourceKind k, const std::string& ns, const Json& o) override {
    if (before_create_) std::exchange(before_create_, nullptr)();
    return inner_->Create(k, ns, o);
  }
  Result<Json> Update(ResourceKind k, const std::string& ns, const std::string& n,
                      const Json& o) override {
    return inner_->Update(k, ns, n, o);
  }
  Status Delete(ResourceKind k, const std::string& ns, const std::string& n,
                const std::string& uid) override {
    return inner_->Delete(k, ns, n, uid);
  }
  Result<Json> ServerVersion() override { return inner_->ServerVersion(); }
  Status CreateBinding(const std::string& ns, const std::string& n, const std::string& uid,
                       const std::string& node) override {
    return inner_->CreateBinding(ns, n, uid, node);
  }
  Status Watch(ResourceKind k, const std::string& ns, const WatchOptions& o,
               const std::function<bool(WatchEvent&&)>& on_event, WatchCanceller* c) override {
    return inner_->Watch(k, ns, o, on_event, c);
  }

 private:
  KubeClient* inner_;
  std::function<void()> before_create_;
};

TEST(WebhookSecret, TheLoserOfTheCreateRaceUsesTheWinnersCertificates) {
  FakeApiServer api;
  api.PutWebhookConfiguration(WebhookConfiguration());
  auto winner_client = Connect(api);
  auto loser_inner = Connect(api);
  Result<WebhookSecretResult> winner = Status::Internal("not run");
  LateCreator loser_client(loser_inner.get(), [&] { winner = Start(*winner_client); });

  auto loser = Start(loser_client);
  ASSERT_TRUE(winner.has_value()) << winner.error().ToString();
  ASSERT_TRUE(loser.has_value()) << loser.error().ToString();
  EXPECT_EQ(winner->source, WebhookSecretSource::kCreated);
  EXPECT_EQ(loser->source, WebhookSecretSource::kReused);
  EXPECT_EQ(loser->certs.ca_cert_pem, winner->certs.ca_cert_pem);
  EXPECT_EQ(loser->certs.cert_pem, winner->certs.cert_pem);
  EXPECT_EQ(api.requests("POST"), 2);  // both tried to create; one got 409
  EXPECT_EQ(Bundle(api), winner->certs.ca_cert_pem);
}

TEST(WebhookSecret, ConcurrentStartersEndWithOneCa) {
  for (const bool expired_before : {false, true}) {
    SCOPED_TRACE(expired_before ? "replacing an expiring Secret" : "no Secret yet");
    FakeApiServer api;
    api.PutWebhookConfiguration(WebhookConfiguration());
    if (expired_before) {
      auto old = GenerateWebhookCertificates(Names(), 24h);
      ASSERT_TRUE(old.has_value());
      api.PutSecret(SecretObject(kNs, kSecret, *old));
    }
    constexpr int kReplicas = 4;
    std::vector<std::unique_ptr<HttpKubeClient>> clients;
    for (int i = 0; i < kReplicas; ++i) clients.push_back(Connect(api));
    std::vector<Result<WebhookSecretResult>> results(kReplicas, Status::Internal("not run"));
    std::barrier sync(kReplicas);
    std::vector<std::thread> threads;
    for (int i = 0; i < kReplicas; ++i) {
      threads.emplace_back([&, i] {
        sync.arrive_and_wait();
        results[i] = Start(*clients[i]);
      });
    }
    for (auto& t : threads) t.join();
    auto stored = CertificatesFromSecret(api.GetSecret(kNs, kSecret));
    ASSERT_TRUE(stored.has_value());
    int writers = 0;
    for (const auto& r : results) {
      ASSERT_TRUE(r.has_value()) << r.error().ToString();
      EXPECT_EQ(r->certs.ca_cert_pem, stored->ca_cert_pem);
      EXPECT_EQ(r->certs.cert_pem, stored->cert_pem);
      writers += r->source != WebhookSecretSource::kReused ? 1 : 0;
    }
    EXPECT_EQ(writers, 1);
    EXPECT_EQ(Bundle(api).rfind(stored->ca_cert_pem, 0), 0u);
    EXPECT_EQ(CertificateCount(Bundle(api)), 1u);  // the old CA was never published
  }
}

TEST(WebhookSecret, ConflictsAreRetriedAndOtherErrorsReturned) {
  FakeApiServer api;
  auto old = GenerateWebhookCertificates(Names(), 24h);
  ASSERT_TRUE(old.has_value());
  api.PutSecret(SecretObject(kNs, kSecret, *old));
  auto client = Connect(api);
  api.FailNext(1, 409, "PUT");
  auto r = LoadOrCreateWebhookSecret(*client, Options());
  ASSERT_TRUE(r.has_value()) << r.error().ToString();
  EXPECT_EQ(r->source, WebhookSecretSource::kReplaced);
  EXPECT_EQ(api.requests("PUT"), 2);

  api.FailNext(1, 403, "GET");
  auto denied = LoadOrCreateWebhookSecret(*client, Options());
  ASSERT_FALSE(denied.has_value());
  EXPECT_EQ(denied.error().code(), StatusCode::kPermissionDenied);
  EXPECT_NE(denied.error().message().find("Secret vgpu-system/vgpu-scheduler-webhook-tls"),
            std::string::npos)
      << denied.error().message();

  FakeApiServer empty;
  auto empty_client = Connect(empty);
  empty.FailNext(100, 409, "POST");
  WebhookSecretOptions o = Options();
  o.max_attempts = 3;
  auto stuck = LoadOrCreateWebhookSecret(*empty_client, o);
  ASSERT_FALSE(stuck.has_value());
  EXPECT_EQ(stuck.error().code(), StatusCode::kUnavailable);
  EXPECT_EQ(empty.requests("POST"), 3);
}

}  // namespace
}  // namespace vgpu::k8s::testing
