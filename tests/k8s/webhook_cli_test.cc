// `vgpu scheduler --webhook-*` as a process against the local HTTPS API server: with
// --webhook-self-signed it writes its CA into the MutatingWebhookConfiguration, and a client that
// trusts that caBundle (as the API server does) gets patches over TLS; with certificate files it
// serves those, and --webhook-replace-scheduler replaces the default list; bad webhook flags exit
// 2 with a message.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

#include "harness.h"
#include "k8s/api/encoding.h"
#include "k8s/api/tls.h"
#include "k8s/webhook/webhook_certs.h"
#include "kubeconfig.h"
#include "support/background_process.h"
#include "support/run_command.h"
#include "support/temp_dir.h"
#include "support/wait_for.h"

namespace vgpu::k8s::testing {
namespace {

using namespace std::chrono_literals;
using vgpu::testing::BackgroundProcess;
using vgpu::testing::FreePort;
using vgpu::testing::RunCommand;

constexpr const char* kHost = "vgpu-scheduler-webhook.vgpu-system.svc";

Json WebhookConfiguration() {
  return Json::parse(R"({
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
    "metadata": {"name": "vgpu-scheduler"},
    "webhooks": [{"name": "pods.vgpu-scheduler.vgpu.io", "admissionReviewVersions": ["v1"],
                  "sideEffects": "None", "failurePolicy": "Ignore",
                  "clientConfig": {"service": {"name": "vgpu-scheduler-webhook",
                                               "namespace": "vgpu-system", "path": "/webhook"}}}]
  })");
}

std::string HamiReview(const std::string& scheduler = "default-scheduler") {
  std::string review = R"({"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{
    "uid":"e2e-1","resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml",
    "operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},
    "spec":{"schedulerName":"SCHED","containers":[{"name":"c","resources":{
    "limits":{"nvidia.com/gpu":"1","nvidia.com/gpumem":"3000","nvidia.com/gpucores":"30"}}}]}}}})";
  review.replace(review.find("SCHED"), 5, scheduler);
  return review;
}

// POSTs the HAMi review over TLS, trusting `ca_pem` for kHost at 127.0.0.1:port.
httplib::Result PostReview(int port, const std::string& ca_pem, const std::string& path,
                           const std::string& scheduler = "default-scheduler") {
  httplib::SSLClient cli(kHost, port);
  cli.set_hostname_addr_map({{kHost, "127.0.0.1"}});
  cli.enable_server_certificate_verification(true);
  auto store = BuildCaStore(ca_pem);
  EXPECT_TRUE(store.has_value());
  cli.set_ca_cert_store(store->release());
  cli.set_connection_timeout(2, 0);
  return cli.Post(path, HamiReview(scheduler), "application/json");
}

class WebhookCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(tmp_.ok()) << tmp_.error();
    dir_ = tmp_.path();
  }
  std::string Log() const { return ReadWholeFile(dir_ + "/log").value_or(""); }
  vgpu::testing::TempDir tmp_{
      "vgpu-webhook-cli-" +
      std::string(::testing::UnitTest::GetInstance()->current_test_info()->name())};
  std::string dir_;
};

TEST_F(WebhookCliTest, SelfSignedPublishesItsCaAndPatchesPods) {
  FakeApiServer api;
  for (const Json& n : Fixture("nodes.json")) api.PutNode(n);
  api.PutWebhookConfiguration(WebhookConfiguration());
  const int webhook_port = FreePort();
  const int metrics_port = FreePort();
  BackgroundProcess p(
      {VGPU_BIN, "scheduler", "--kubeconfig", WriteKubeconfig(api, dir_), "--listen", "127.0.0.1:0",
       "--metrics-listen", "127.0.0.1:" + std::to_string(metrics_port), "--webhook-listen",
       "127.0.0.1:" + std::to_string(webhook_port), "--webhook-self-signed", "--webhook-service",
       "vgpu-scheduler-webhook.vgpu-system", "--webhook-config-name", "vgpu-scheduler",
       "--scheduler-name", "gpu-sched"},
      {}, dir_ + "/log");
  std::string bundle;
  vgpu::testing::WaitFor(
      [&] {
        const Json cc =
            api.GetWebhookConfiguration("vgpu-scheduler")["webhooks"][0]["clientConfig"];
        if (cc.contains("caBundle")) {
          bundle = Base64Decode(cc["caBundle"].get<std::string>()).value_or("");
        }
        return !bundle.empty();
      },
      10'000ms, 10ms);
  ASSERT_FALSE(bundle.empty()) << Log();
  auto res = PostReview(webhook_port, bundle, "/webhook");
  ASSERT_TRUE(res) << httplib::to_string(res.error()) << "\n" << Log();
  EXPECT_EQ(res->status, 200);
  const Json out = Json::parse(res->body);
  EXPECT_EQ(out["response"]["uid"], "e2e-1");
  const Json patch =
      Json::parse(Base64Decode(out["response"]["patch"].get<std::string>()).value_or("null"));
  EXPECT_EQ(patch[0]["value"], "gpu-sched");

  httplib::Client metrics("127.0.0.1", metrics_port);
  std::string text;
  vgpu::testing::WaitFor(
      [&] {
        auto m = metrics.Get("/metrics");
        if (m && m->status == 200) text = m->body;
        return m && m->status == 200;
      },
      3000ms, 10ms);
  EXPECT_NE(text.find("vgpu_scheduler_webhook_requests_total{result=\"patched\"} 1"),
            std::string::npos)
      << text;
  EXPECT_EQ(p.Stop(SIGTERM, 10s), 0) << Log();
  EXPECT_NE(Log().find("serving the admission webhook"), std::string::npos) << Log();
  EXPECT_NE(Log().find("Secret vgpu-system/vgpu-scheduler-webhook-tls created"), std::string::npos)
      << Log();

  // The CA is kept in the Secret: a restarted scheduler serves under the same CA at once, and
  // the caBundle stays as it was.
  const Json secret = api.GetSecret("vgpu-system", "vgpu-scheduler-webhook-tls");
  ASSERT_FALSE(secret.is_null());
  EXPECT_EQ(Base64Decode(secret["data"]["ca.crt"].get<std::string>()).value_or(""), bundle);
  const int64_t rv = api.resource_version();
  BackgroundProcess restarted(
      {VGPU_BIN, "scheduler", "--kubeconfig", WriteKubeconfig(api, dir_), "--listen", "127.0.0.1:0",
       "--metrics-listen", "", "--webhook-listen", "127.0.0.1:" + std::to_string(webhook_port),
       "--webhook-self-signed", "--webhook-service", "vgpu-scheduler-webhook.vgpu-system",
       "--webhook-config-name", "vgpu-scheduler", "--scheduler-name", "gpu-sched"},
      {}, dir_ + "/log2");
  int status = 0;
  vgpu::testing::WaitFor(
      [&] {
        auto r = PostReview(webhook_port, bundle, "/webhook");
        if (r) status = r->status;
        return status != 0;
      },
      5000ms, 10ms);
  EXPECT_EQ(status, 200) << ReadWholeFile(dir_ + "/log2").value_or("");
  EXPECT_EQ(restarted.Stop(SIGTERM, 10s), 0);
  const std::string log2 = ReadWholeFile(dir_ + "/log2").value_or("");
  EXPECT_NE(log2.find("Secret vgpu-system/vgpu-scheduler-webhook-tls reused"), std::string::npos)
      << log2;
  EXPECT_EQ(api.resource_version(), rv);  // neither the Secret nor the caBundle was written
}

TEST_F(WebhookCliTest, ServesCertificateFiles) {
  FakeApiServer api;
  auto names = ServiceDnsNames("vgpu-scheduler-webhook.vgpu-system");
  ASSERT_TRUE(names.has_value());
  auto certs = GenerateWebhookCertificates(*names);
  ASSERT_TRUE(certs.has_value());
  WriteFile(dir_ + "/tls.crt", certs->cert_pem);
  WriteFile(dir_ + "/tls.key", certs->key_pem);
  const int webhook_port = FreePort();
  BackgroundProcess p(
      {VGPU_BIN, "scheduler", "--kubeconfig", WriteKubeconfig(api, dir_), "--listen", "127.0.0.1:0",
       "--metrics-listen", "", "--webhook-listen", "127.0.0.1:" + std::to_string(webhook_port),
       "--webhook-path", "/mutate-pods", "--webhook-tls-cert", dir_ + "/tls.crt",
       "--webhook-tls-key", dir_ + "/tls.key", "--webhook-replace-scheduler", "default-scheduler"},
      {}, dir_ + "/log");
  httplib::Result res{nullptr, httplib::Error::Unknown};
  vgpu::testing::WaitFor(
      [&] {
        res = PostReview(webhook_port, certs->ca_cert_pem, "/mutate-pods");
        return static_cast<bool>(res);
      },
      3000ms, 10ms);
  ASSERT_TRUE(res) << Log();
  EXPECT_EQ(Json::parse(res->body)["response"]["allowed"], true);
  EXPECT_TRUE(Json::parse(res->body)["response"].contains("patch"));
  // hami-scheduler is no longer in the list: HAMi keeps that pod.
  auto hami = PostReview(webhook_port, certs->ca_cert_pem, "/mutate-pods", "hami-scheduler");
  ASSERT_TRUE(hami);
  EXPECT_FALSE(Json::parse(hami->body)["response"].contains("patch")) << hami->body;
  EXPECT_EQ(p.Stop(SIGTERM, 10s), 0) << Log();
}

TEST_F(WebhookCliTest, BadWebhookFlagsExitTwoWithAMessage) {
  FakeApiServer api;
  const std::string base = std::string(VGPU_BIN) + " scheduler --kubeconfig " +
                           WriteKubeconfig(api, dir_) +
                           " --listen 127.0.0.1:0 --metrics-listen '' ";
  WriteFile(dir_ + "/garbage.pem", "not a certificate\n");
  const struct {
    std::string args, message;
  } cases[] = {
      {"--webhook-listen 127.0.0.1:0", "give --webhook-tls-cert and --webhook-tls-key"},
      {"--webhook-self-signed", "need --webhook-listen"},
      {"--webhook-listen 127.0.0.1:0 --webhook-self-signed --webhook-tls-cert x",
       "give either it or"},
      {"--webhook-listen 127.0.0.1:0 --webhook-self-signed --webhook-service nodot",
       "--webhook-service: expected SERVICE.NAMESPACE"},
      {"--webhook-listen 127.0.0.1:0 --webhook-self-signed --webhook-path nope",
       "--webhook-path: expected '/'"},
      {"--webhook-listen 127.0.0.1:0 --webhook-tls-cert " + dir_ + "/missing --webhook-tls-key " +
           dir_ + "/missing",
       "--webhook-tls-cert: "},
      {"--webhook-listen 127.0.0.1:0 --webhook-tls-cert " + dir_ + "/garbage.pem " +
           "--webhook-tls-key " + dir_ + "/garbage.pem",
       "webhook certificate"},
      {"--webhook-listen nowhere --webhook-self-signed", "--webhook-listen"},
      {"--webhook-listen 127.0.0.1:0 --webhook-self-signed --webhook-secret a/b/c",
       "--webhook-secret: must be NAME or NAMESPACE/NAME"},
      {"--webhook-listen 127.0.0.1:0 --webhook-self-signed --webhook-secret Bad_Name",
       "--webhook-secret: must be NAME or NAMESPACE/NAME"},
      {"--scheduler-name Vgpu_Sched", "--scheduler-name: must be a DNS subdomain"},
  };
  for (const auto& c : cases) {
    auto r = RunCommand(base + c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << c.args << "\n" << r.err;
  }
  auto help = RunCommand(std::string(VGPU_BIN) + " scheduler --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--webhook-self-signed"), std::string::npos);
  EXPECT_NE(help.out.find("--webhook-secret"), std::string::npos);
}

}  // namespace
}  // namespace vgpu::k8s::testing
