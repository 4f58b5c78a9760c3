#include "k8s/webhook/webhook_certs.h"

#include <gtest/gtest.h>
#include <openssl/x509v3.h>

#include "k8s/api/tls.h"

namespace vgpu::k8s {
namespace {

// Whether `cert_pem` chains to `ca_pem` and is valid for host `name`.
bool Verifies(const std::string& cert_pem, const std::string& ca_pem, const std::string& name) {
  auto cert = ParseCertificatePem(cert_pem);
  auto store = BuildCaStore(ca_pem);
  if (!cert || !store) return false;
  std::unique_ptr<X509_STORE_CTX, decltype(&X509_STORE_CTX_free)> ctx(X509_STORE_CTX_new(),
                                                                      X509_STORE_CTX_free);
  X509_STORE_CTX_init(ctx.get(), store->get(), cert->get(), nullptr);
  X509_VERIFY_PARAM_set1_host(X509_STORE_CTX_get0_param(ctx.get()), name.c_str(), 0);
  X509_STORE_CTX_set_purpose(ctx.get(), X509_PURPOSE_SSL_SERVER);
  return X509_verify_cert(ctx.get()) == 1;
}

TEST(WebhookCerts, ServiceDnsNames) {
  auto names = ServiceDnsNames("vgpu-scheduler-webhook.vgpu-system");
  ASSERT_TRUE(names.has_value());
  EXPECT_EQ(*names, (std::vector<std::string>{
                        "vgpu-scheduler-webhook", "vgpu-scheduler-webhook.vgpu-system",
                        "vgpu-scheduler-webhook.vgpu-system.svc",
                        "vgpu-scheduler-webhook.vgpu-system.svc.cluster.local"}));
  for (const char* bad : {"", "svc", "a.b.c", ".ns", "Svc.ns", "svc_x.ns"}) {
    EXPECT_EQ(ServiceDnsNames(bad).error().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(WebhookCerts, ServingCertificateChainsToItsCaForEveryName) {
  auto names = ServiceDnsNames("hook.vgpu-system");
  ASSERT_TRUE(names.has_value());
  names->push_back("127.0.0.1");
  auto certs = GenerateWebhookCertificates(*names);
  ASSERT_TRUE(certs.has_value()) << certs.error().ToString();
  for (const std::string& n : {std::string("hook.vgpu-system.svc"), std::string("hook")}) {
    EXPECT_TRUE(Verifies(certs->cert_pem, certs->ca_cert_pem, n)) << n;
  }
  EXPECT_FALSE(Verifies(certs->cert_pem, certs->ca_cert_pem, "other.vgpu-system.svc"));
  auto cert = ParseCertificatePem(certs->cert_pem);
  auto key = ParsePrivateKeyPem(certs->key_pem);
  ASSERT_TRUE(cert && key);
  EXPECT_TRUE(CheckKeyMatchesCertificate(cert->get(), key->get()).ok());
  EXPECT_EQ(X509_check_ip_asc(cert->get(), "127.0.0.1", 0), 1);
  // A second run makes a different CA: the serving certificate does not chain to it.
  auto again = GenerateWebhookCertificates(*names);
  ASSERT_TRUE(again.has_value());
  EXPECT_FALSE(Verifies(certs->cert_pem, again->ca_cert_pem, "hook"));
  EXPECT_EQ(GenerateWebhookCertificates({}).error().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(GenerateWebhookCertificates({"bad name"}).error().code(), StatusCode::kInvalidArgument);
}

TEST(WebhookCerts, CheckAcceptsOnlyAMatchingUnexpiringChainForTheNames) {
  using std::chrono::hours;
  const std::vector<std::string> names = {"svc", "svc.ns.svc", "10.0.0.7"};
  auto good = GenerateWebhookCertificates(names);
  ASSERT_TRUE(good.has_value());
  EXPECT_TRUE(CheckWebhookCertificates(*good, names, hours(24 * 30)).ok());
  EXPECT_TRUE(CheckWebhookCertificates(*good, {"svc"}, hours(24 * 30)).ok());

  const auto reason = [&](const WebhookCertificates& c, const std::vector<std::string>& n) {
    Status s = CheckWebhookCertificates(c, n, hours(24 * 30));
    EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition) << s.ToString();
    return s.message();
  };
  EXPECT_NE(reason(*good, {"other"}).find("does not cover 'other'"), std::string::npos);
  EXPECT_NE(reason(*good, {"10.0.0.8"}).find("does not cover"), std::string::npos);

  auto other = GenerateWebhookCertificates(names);
  ASSERT_TRUE(other.has_value());
  WebhookCertificates c = *good;
  c.key_pem = other->key_pem;
  EXPECT_NE(reason(c, names).find("serving key"), std::string::npos);
  c = *good;
  c.ca_cert_pem = other->ca_cert_pem;
  EXPECT_NE(reason(c, names).find("not signed by the CA"), std::string::npos);
  c = *good;
  c.ca_cert_pem = good->cert_pem;  // a serving certificate is no CA
  EXPECT_NE(reason(c, names).find("not a CA"), std::string::npos);
  c = *good;
  c.cert_pem = "garbage";
  EXPECT_NE(reason(c, names).find("serving certificate"), std::string::npos);

  auto short_lived = GenerateWebhookCertificates(names, hours(24 * 29));
  ASSERT_TRUE(short_lived.has_value());
  EXPECT_NE(reason(*short_lived, names).find("expires within 30 days"), std::string::npos);
  EXPECT_TRUE(CheckWebhookCertificates(*short_lived, names, hours(24 * 7)).ok());
}

TEST(WebhookCerts, MergeCaBundleKeepsOthersAndStaysStable) {
  auto a = GenerateWebhookCertificates({"a.ns"});
  auto b = GenerateWebhookCertificates({"b.ns"});
  ASSERT_TRUE(a && b);
  auto first = MergeCaBundle("", a->ca_cert_pem);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(*first, a->ca_cert_pem);
  // Another replica's CA joins; ours stays trusted.
  auto both = MergeCaBundle(*first, b->ca_cert_pem);
  ASSERT_TRUE(both.has_value());
  EXPECT_EQ(both->rfind(b->ca_cert_pem, 0), 0u);
  EXPECT_NE(both->find(a->ca_cert_pem), std::string::npos);
  // Publishing again changes nothing.
  auto same = MergeCaBundle(*both, a->ca_cert_pem);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(*same, *both);
  // At most keep_others others.
  auto only = MergeCaBundle(*both, b->ca_cert_pem, 0);
  ASSERT_TRUE(only.has_value());
  EXPECT_EQ(*only, b->ca_cert_pem);
  // A bundle holding our CA twice is cleaned up.
  auto twice = MergeCaBundle(a->ca_cert_pem + a->ca_cert_pem, a->ca_cert_pem);
  ASSERT_TRUE(twice.has_value());
  EXPECT_EQ(*twice, a->ca_cert_pem);
  EXPECT_FALSE(MergeCaBundle("", "not pem").has_value());
}

}  // namespace
}  // namespace vgpu::k8s
