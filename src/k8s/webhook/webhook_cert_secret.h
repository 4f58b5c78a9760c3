// The admission webhook's CA and serving certificate kept in a Kubernetes Secret, so that every
// replica and every restart of the scheduler serves under one CA and the
// MutatingWebhookConfiguration's caBundle does not change.
//
// Contract:
// - The Secret has type kubernetes.io/tls and holds tls.crt (serving certificate), tls.key (its
//   key, PKCS#8) and ca.crt (the CA), base64 in `data` as the API server stores them.
// - LoadOrCreateWebhookSecret() reads the Secret `name` in namespace `ns`. When it holds
//   certificates that CheckWebhookCertificates() accepts for `names` with `min_remaining` left,
//   they are used (kReused). Otherwise fresh ones are generated (valid `validity`) and written:
//   created when the Secret is missing (kCreated), replaced when it is garbled, expiring or made
//   for other names (kReplaced; the write carries the resourceVersion read, and keeps the
//   Secret's type, which the API server does not let change). A 409 on either write means
//   another replica wrote first: the Secret is read again and its content used when valid, so
//   replicas starting together end with one CA. At most `max_attempts` rounds; other errors of
//   the client are returned as they are.
// - SecretObject() / CertificatesFromSecret() convert between the certificates and the Secret's
//   JSON; CertificatesFromSecret fails with kFailedPrecondition when a key is missing or not
//   base64.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"
#include "k8s/api/kube_client.h"
#include "k8s/webhook/webhook_certs.h"

namespace vgpu::k8s {

struct WebhookSecretOptions {
  std::string ns;
  std::string name;
  std::vector<std::string> names;  // what the serving certificate must cover
  std::chrono::seconds min_remaining{std::chrono::hours(24 * 30)};
  std::chrono::hours validity{24 * 3650};
  int max_attempts = 8;
};

enum class WebhookSecretSource { kReused, kCreated, kReplaced };
std::string_view WebhookSecretSourceName(WebhookSecretSource source);  // "reused", ...

struct WebhookSecretResult {
  WebhookCertificates certs;
  WebhookSecretSource source = WebhookSecretSource::kReused;
  std::string replaced_because;  // with kReplaced: what was wrong with the old content
};

Result<WebhookSecretResult> LoadOrCreateWebhookSecret(KubeClient& client,
                                                      const WebhookSecretOptions& options);

Json SecretObject(const std::string& ns, const std::string& name, const WebhookCertificates& certs);
Result<WebhookCertificates> CertificatesFromSecret(const Json& secret);

}  // namespace vgpu::k8s
