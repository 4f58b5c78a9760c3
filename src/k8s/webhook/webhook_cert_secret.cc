#include "k8s/webhook/webhook_cert_secret.h"

#include "common/log.h"
#include "k8s/api/encoding.h"

namespace vgpu::k8s {
namespace {

constexpr const char* kCertKey = "tls.crt";
constexpr const char* kKeyKey = "tls.key";
constexpr const char* kCaKey = "ca.crt";

Json SecretData(const WebhookCertificates& certs) {
  return Json{{kCertKey, Base64Encode(certs.cert_pem)},
              {kKeyKey, Base64Encode(certs.key_pem)},
              {kCaKey, Base64Encode(certs.ca_cert_pem)}};
}

// The Secret's certificates when they are valid for `options`; the reason otherwise.
Result<WebhookCertificates> UsableCertificates(const Json& secret,
                                               const WebhookSecretOptions& options) {
  auto certs = CertificatesFromSecret(secret);
  if (!certs) return certs.error();
  VGPU_RETURN_IF_ERROR(CheckWebhookCertificates(*certs, options.names, options.min_remaining));
  return certs;
}

}  // namespace

std::string_view WebhookSecretSourceName(WebhookSecretSource source) {
  switch (source) {
    case WebhookSecretSource::kReused:
      return "reused";
    case WebhookSecretSource::kCreated:
      return "created";
    case WebhookSecretSource::kReplaced:
      return "replaced";
  }
  return "reused";
}

Json SecretObject(const std::string& ns, const std::string& name,
                  const WebhookCertificates& certs) {
  return Json{{"apiVersion", "v1"},
              {"kind", "Secret"},
              {"metadata",
               {{"name", name},
                {"namespace", ns},
                {"labels", {{"app.kubernetes.io/managed-by", "vgpu-scheduler"}}}}},
              {"type", "kubernetes.io/tls"},
              {"data", SecretData(certs)}};
}

Result<WebhookCertificates> CertificatesFromSecret(const Json& secret) {
  auto data = secret.find("data");
  if (data == secret.end() || !data->is_object()) {
    return Status::FailedPrecondition("the Secret has no data");
  }
  WebhookCertificates out;
  for (auto [key, field] : {std::pair{kCertKey, &out.cert_pem}, std::pair{kKeyKey, &out.key_pem},
                            std::pair{kCaKey, &out.ca_cert_pem}}) {
    auto it = data->find(key);
    if (it == data->end() || !it->is_string()) {
      return Status::FailedPrecondition(std::string("the Secret has no ") + key);
    }
    auto decoded = Base64Decode(it->get<std::string>());
    if (!decoded) {
      return Status::FailedPrecondition(std::string("the Secret's ") + key +
                                        " is not base64: " + decoded.error().message());
    }
    *field = std::move(*decoded);
  }
  return out;
}

Result<WebhookSecretResult> LoadOrCreateWebhookSecret(KubeClient& client,
                                                      const WebhookSecretOptions& options) {
  const std::string what = "Secret " + options.ns + "/" + options.name;
  Status last;
  for (int attempt = 0; attempt < options.max_attempts; ++attempt) {
    auto secret = client.Get(ResourceKind::kSecret, options.ns, options.name);
    if (!secret && secret.error().code() != StatusCode::kNotFound) {
      return secret.error().WithContext("reading " + what);
    }
    std::string why_replace;
    if (secret) {
      auto usable = UsableCertificates(*secret, options);
      if (usable) return WebhookSecretResult{std::move(*usable), WebhookSecretSource::kReused, ""};
      why_replace = usable.error().message();
    }
    auto fresh = GenerateWebhookCertificates(options.names, options.validity);
    if (!fresh) return fresh.error().WithContext("generating the webhook certificate");
    Result<Json> written = [&]() -> Result<Json> {
      if (!secret) {
        return client.Create(ResourceKind::kSecret, options.ns,
                             SecretObject(options.ns, options.name, *fresh));
      }
      Json updated = *secret;  // keeps type, labels, annotations and the resourceVersion
      updated["data"] = SecretData(*fresh);
      updated.erase("stringData");
      return client.Update(ResourceKind::kSecret, options.ns, options.name, updated);
    }();
    if (written) {
      return WebhookSecretResult{
          std::move(*fresh),
          secret ? WebhookSecretSource::kReplaced : WebhookSecretSource::kCreated, why_replace};
    }
    last = written.error();
    // 409: another writer got there first (created it or changed it since the read); use theirs.
    // 404 on the update: it was deleted since the read; create it.
    if (last.code() != StatusCode::kAlreadyExists && last.code() != StatusCode::kNotFound) {
      return last.WithContext("writing " + what);
    }
    VGPU_LOG_INFO("%s: %s; reading it again", what.c_str(), last.message().c_str());
  }
  return Status::Unavailable(what + ": still conflicting after " +
                             std::to_string(options.max_attempts) + " attempts: " + last.message());
}

}  // namespace vgpu::k8s
