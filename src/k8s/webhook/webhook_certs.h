// Certificates for the admission webhook, made without external tools, and the publication of
// their CA in the MutatingWebhookConfiguration (its clientConfig.caBundle), so that the API server
// trusts the webhook.
//
// Contract:
// - GenerateWebhookCertificates() makes a fresh CA (EC P-256, self-signed, CA:TRUE, pathlen 0)
//   and a serving certificate signed by it for `names` (subjectAltName: DNS names, or IP
//   addresses for names that parse as one; extendedKeyUsage serverAuth), both valid from an hour
//   ago for `validity`. Serial numbers are random. The keys exist only in the returned PEM text.
//   kInvalidArgument for an empty or malformed name, kInternal if OpenSSL refuses.
// - CheckWebhookCertificates() accepts `certs` when the three PEM texts parse, the CA is a CA
//   (basicConstraints CA:TRUE), the serving certificate is issued and signed by it and has
//   `key_pem` as its key, the serving certificate covers every one of `names` (DNS name or IP
//   address), and both certificates are valid now and still `min_remaining` from now. Otherwise
//   kFailedPrecondition saying what is wrong (the first problem found).
// - ServiceDnsNames("svc.ns") is what the API server may use to reach a Service: svc, svc.ns,
//   svc.ns.svc, svc.ns.svc.cluster.local. kInvalidArgument unless the text is NAME.NAMESPACE.
// - MergeCaBundle() puts `ca_pem` into an existing PEM bundle: when the CA is already there and
//   the bundle holds no expired certificate and at most keep_others others, the bundle is
//   returned unchanged (so replicas that each publish their own CA do not undo one another);
//   otherwise the result is the CA first, then the unexpired others, newest first, at most
//   `keep_others`, duplicates dropped. Unreadable text in the bundle is dropped.
// - PublishCaBundle() reads the MutatingWebhookConfiguration `config_name`, merges `ca_pem`
//   into the caBundle of its webhooks (all of them get the same bundle) and writes it with a JSON
//   patch whose resourceVersion is a precondition; a conflict re-reads and retries. Returns
//   whether it wrote anything. kNotFound when the object is missing, kFailedPrecondition when it
//   has no webhooks, the client's errors otherwise.
// - CaBundlePublisher runs PublishCaBundle in a thread until it succeeds (backoff from
//   `initial_backoff` doubling to `max_backoff`), then checks again every `recheck`, so a
//   re-created configuration gets the bundle back. Stop() ends it promptly. Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/result.h"
#include "k8s/api/kube_client.h"

namespace vgpu::k8s {

struct WebhookCertificates {
  std::string ca_cert_pem;
  std::string cert_pem;  // the serving certificate
  std::string key_pem;   // its private key (PKCS#8)
};

Result<WebhookCertificates> GenerateWebhookCertificates(
    const std::vector<std::string>& names,
    std::chrono::hours validity = std::chrono::hours(24 * 3650));

Status CheckWebhookCertificates(const WebhookCertificates& certs,
                                const std::vector<std::string>& names,
                                std::chrono::seconds min_remaining);

Result<std::vector<std::string>> ServiceDnsNames(const std::string& service_dot_namespace);

Result<std::string> MergeCaBundle(std::string_view existing_pem, std::string_view ca_pem,
                                  size_t keep_others = 3);

Result<bool> PublishCaBundle(KubeClient& client, const std::string& config_name,
                             const std::string& ca_pem, size_t keep_others = 3);

class CaBundlePublisher {
 public:
  struct Options {
    std::chrono::milliseconds initial_backoff{500};
    std::chrono::milliseconds max_backoff{30000};
    std::chrono::milliseconds recheck{60000};
  };
  CaBundlePublisher(KubeClient* client, std::string config_name, std::string ca_pem,
                    Options options);
  ~CaBundlePublisher();

  void Start();
  void Stop();
  // Successful rounds (a write or nothing to change) and failed ones.
  uint64_t successes() const { return successes_.load(); }
  uint64_t failures() const { return failures_.load(); }

 private:
  void Loop();

  KubeClient* client_;
  std::string config_name_, ca_pem_;
  Options options_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<uint64_t> successes_{0}, failures_{0};
};

}  // namespace vgpu::k8s
