#include "k8s/webhook/webhook_certs.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <algorithm>
#include <ctime>
#include <memory>

#include "common/log.h"
#include "k8s/api/encoding.h"
#include "k8s/api/tls.h"

namespace vgpu::k8s {
namespace {

Status OpenSslFailure(const char* what) {
  const std::string why = TakeOpenSslError();
  return Status::Internal(std::string(what) + " failed" + (why.empty() ? "" : ": " + why));
}

bool IsIpAddress(const std::string& s) {
  unsigned char buf[16];
  return inet_pton(AF_INET, s.c_str(), buf) == 1 || inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

// RFC 1123 host name: dot-separated labels of a-z, 0-9 and '-', not starting or ending with '-'.
bool IsDnsName(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (start <= s.size()) {
    size_t dot = s.find('.', start);
    if (dot == std::string::npos) dot = s.size();
    const std::string_view label(s.data() + start, dot - start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') {
      return false;
    }
    for (char c : label) {
      if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
    }
    start = dot + 1;
  }
  return true;
}

Status AddExtension(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return OpenSslFailure("building a certificate extension");
  const int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return OpenSslFailure("adding a certificate extension");
  return Status::Ok();
}

Result<PkeyPtr> NewKey() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  if (key == nullptr) return OpenSslFailure("EC P-256 key generation");
  return PkeyPtr(key);
}

struct CertSpec {
  std::string common_name;
  bool ca = false;
  std::string san;  // "DNS:a,IP:1.2.3.4" for a serving certificate
  std::chrono::hours validity;
};

// A certificate for `key`, signed by `issuer_key` (self-signed when issuer is null).
Result<X509Ptr> Issue(const CertSpec& spec, EVP_PKEY* key, X509* issuer, EVP_PKEY* issuer_key) {
  X509Ptr cert(X509_new());
  if (!cert) return OpenSslFailure("X509_new");
  X509* c = cert.get();
  X509_set_version(c, 2);  // v3
  // A random positive 127-bit serial number (RFC 5280 allows up to 20 octets).
  std::unique_ptr<BIGNUM, decltype(&BN_free)> serial(BN_new(), BN_free);
  if (!serial || BN_rand(serial.get(), 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) != 1 ||
      BN_to_ASN1_INTEGER(serial.get(), X509_get_serialNumber(c)) == nullptr) {
    return OpenSslFailure("making a serial number");
  }
  X509_gmtime_adj(X509_getm_notBefore(c), -3600);  // tolerate clocks an hour behind
  X509_gmtime_adj(X509_getm_notAfter(c), static_cast<long>(spec.validity.count()) * 3600);
  if (X509_set_pubkey(c, key) != 1) return OpenSslFailure("X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(c);
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("vgpu"), -1, -1, 0);
  if (X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                 reinterpret_cast<const unsigned char*>(spec.common_name.c_str()),
                                 -1, -1, 0) != 1) {
    return OpenSslFailure("setting the subject");
  }
  X509_set_issuer_name(c, issuer != nullptr ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer != nullptr ? issuer : c;
  VGPU_RETURN_IF_ERROR(AddExtension(c, signer, NID_basic_constraints,
                                    spec.ca ? "critical,CA:TRUE,pathlen:0" : "critical,CA:FALSE"));
  VGPU_RETURN_IF_ERROR(
      AddExtension(c, signer, NID_key_usage,
                   spec.ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature"));
  VGPU_RETURN_IF_ERROR(AddExtension(c, signer, NID_subject_key_identifier, "hash"));
  if (issuer != nullptr) {
    VGPU_RETURN_IF_ERROR(AddExtension(c, signer, NID_authority_key_identifier, "keyid:always"));
  }
  if (!spec.san.empty()) {
    VGPU_RETURN_IF_ERROR(AddExtension(c, signer, NID_subject_alt_name, spec.san));
    VGPU_RETURN_IF_ERROR(AddExtension(c, signer, NID_ext_key_usage, "serverAuth"));
  }
  if (X509_sign(c, issuer_key != nullptr ? issuer_key : key, EVP_sha256()) <= 0) {
    return OpenSslFailure("signing the certificate");
  }
  return cert;
}

Result<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1) return OpenSslFailure("PEM encoding");
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Result<std::string> KeyPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio ||
      PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) != 1) {
    return OpenSslFailure("PEM encoding of the key");
  }
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

// Every certificate of a PEM bundle (unreadable text ends the list).
std::vector<X509Ptr> ReadBundle(std::string_view pem) {
  std::vector<X509Ptr> out;
  if (pem.empty()) return out;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (bio) {
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (cert == nullptr) break;
    out.emplace_back(cert);
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  return out;
}

bool SameCertificate(X509* a, X509* b) { return X509_cmp(a, b) == 0; }

bool Expired(X509* cert) { return X509_cmp_current_time(X509_get0_notAfter(cert)) < 0; }

}  // namespace

Result<WebhookCertificates> GenerateWebhookCertificates(const std::vector<std::string>& names,
                                                        std::chrono::hours validity) {
  if (names.empty()) return Status::InvalidArgument("the webhook certificate needs a name");
  std::string san;
  for (const std::string& n : names) {
    if (IsIpAddress(n)) {
      san += (san.empty() ? "" : ",") + std::string("IP:") + n;
    } else if (IsDnsName(n)) {
      san += (san.empty() ? "" : ",") + std::string("DNS:") + n;
    } else {
      return Status::InvalidArgument("'" + n + "' is neither a DNS name nor an IP address");
    }
  }
  auto ca_key = NewKey();
  if (!ca_key) return ca_key.error();
  auto ca = Issue(CertSpec{"vgpu-scheduler webhook CA", true, "", validity}, ca_key->get(), nullptr,
                  nullptr);
  if (!ca) return ca.error();
  auto key = NewKey();
  if (!key) return key.error();
  auto cert =
      Issue(CertSpec{names.front(), false, san, validity}, key->get(), ca->get(), ca_key->get());
  if (!cert) return cert.error();
  WebhookCertificates out;
  auto ca_pem = CertPem(ca->get());
  if (!ca_pem) return ca_pem.error();
  auto cert_pem = CertPem(cert->get());
  if (!cert_pem) return cert_pem.error();
  auto key_pem = KeyPem(key->get());
  if (!key_pem) return key_pem.error();
  out.ca_cert_pem = std::move(*ca_pem);
  out.cert_pem = std::move(*cert_pem);
  out.key_pem = std::move(*key_pem);
  return out;
}

Status CheckWebhookCertificates(const WebhookCertificates& certs,
                                const std::vector<std::string>& names,
                                std::chrono::seconds min_remaining) {
  const auto bad = [](const std::string& why) { return Status::FailedPrecondition(why); };
  auto ca = ParseCertificatePem(certs.ca_cert_pem);
  if (!ca) return bad("CA certificate: " + ca.error().message());
  auto cert = ParseCertificatePem(certs.cert_pem);
  if (!cert) return bad("serving certificate: " + cert.error().message());
  auto key = ParsePrivateKeyPem(certs.key_pem);
  if (!key) return bad("serving key: " + key.error().message());
  if (Status s = CheckKeyMatchesCertificate(cert->get(), key->get()); !s.ok()) {
    return bad("serving key: " + s.message());
  }
  if (X509_check_ca(ca->get()) < 1) return bad("the CA certificate is not a CA");
  if (X509_check_issued(ca->get(), cert->get()) != X509_V_OK ||
      X509_verify(cert->get(), X509_get0_pubkey(ca->get())) != 1) {
    ERR_clear_error();
    return bad("the serving certificate is not signed by the CA");
  }
  for (const std::string& n : names) {
    const int ok = IsIpAddress(n) ? X509_check_ip_asc(cert->get(), n.c_str(), 0)
                                  : X509_check_host(cert->get(), n.c_str(), n.size(), 0, nullptr);
    if (ok != 1) return bad("the serving certificate does not cover '" + n + "'");
  }
  time_t until = std::time(nullptr) + static_cast<time_t>(min_remaining.count());
  for (auto [which, c] : {std::pair{"CA", ca->get()}, std::pair{"serving", cert->get()}}) {
    if (X509_cmp_current_time(X509_get0_notBefore(c)) >= 0) {
      return bad(std::string("the ") + which + " certificate is not valid yet");
    }
    if (X509_cmp_time(X509_get0_notAfter(c), &until) <= 0) {
      return bad(std::string("the ") + which + " certificate expires within " +
                 std::to_string(min_remaining.count() / 86400) + " days");
    }
  }
  return Status::Ok();
}

Result<std::vector<std::string>> ServiceDnsNames(const std::string& service_dot_namespace) {
  const size_t dot = service_dot_namespace.find('.');
  if (dot == std::string::npos || dot == 0 ||
      service_dot_namespace.find('.', dot + 1) != std::string::npos ||
      !IsDnsName(service_dot_namespace)) {
    return Status::InvalidArgument(
        "expected SERVICE.NAMESPACE (e.g. vgpu-scheduler-webhook."
        "vgpu-system), got '" +
        service_dot_namespace + "'");
  }
  const std::string name = service_dot_namespace.substr(0, dot);
  return std::vector<std::string>{name, service_dot_namespace, service_dot_namespace + ".svc",
                                  service_dot_namespace + ".svc.cluster.local"};
}

Result<std::string> MergeCaBundle(std::string_view existing_pem, std::string_view ca_pem,
                                  size_t keep_others) {
  auto ours = ParseCertificatePem(ca_pem);
  if (!ours) return ours.error().WithContext("the webhook CA");
  std::vector<X509Ptr> existing = ReadBundle(existing_pem);
  bool present = false, stale = false;
  std::vector<X509Ptr> others;
  for (X509Ptr& c : existing) {
    if (SameCertificate(c.get(), ours->get())) {
      stale = stale || present;  // a second copy
      present = true;
      continue;
    }
    if (Expired(c.get()) || std::any_of(others.begin(), others.end(), [&](const X509Ptr& o) {
          return SameCertificate(o.get(), c.get());
        })) {
      stale = true;
      continue;
    }
    others.push_back(std::move(c));
  }
  if (present && !stale && others.size() <= keep_others) return std::string(existing_pem);
  std::stable_sort(others.begin(), others.end(), [](const X509Ptr& a, const X509Ptr& b) {
    return ASN1_TIME_compare(X509_get0_notBefore(a.get()), X509_get0_notBefore(b.get())) > 0;
  });
  if (others.size() > keep_others) others.resize(keep_others);
  std::string out(ca_pem);
  if (!out.empty() && out.back() != '\n') out += '\n';
  for (const X509Ptr& c : others) {
    auto pem = CertPem(c.get());
    if (!pem) return pem.error();
    out += *pem;
  }
  return out;
}

Result<bool> PublishCaBundle(KubeClient& client, const std::string& config_name,
                             const std::string& ca_pem, size_t keep_others) {
  const std::string what = "MutatingWebhookConfiguration " + config_name;
  constexpr int kAttempts = 8;
  Status last;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    auto config = client.Get(ResourceKind::kMutatingWebhookConfiguration, "", config_name);
    if (!config) return config.error().WithContext(what);
    auto hooks = config->find("webhooks");
    if (hooks == config->end() || !hooks->is_array() || hooks->empty()) {
      return Status::FailedPrecondition(what + " has no webhooks");
    }
    // The union of the current bundles is what the API server may trust now.
    std::vector<std::string> bundles;
    std::string current;
    for (const Json& h : *hooks) {
      const Json* cc = h.is_object() && h.contains("clientConfig") ? &h["clientConfig"] : nullptr;
      if (cc == nullptr || !cc->is_object()) {
        return Status::FailedPrecondition(what + ": a webhook has no clientConfig");
      }
      auto b = cc->find("caBundle");
      if (b == cc->end() || !b->is_string()) continue;
      auto pem = Base64Decode(b->get<std::string>());
      if (!pem || std::find(bundles.begin(), bundles.end(), *pem) != bundles.end()) continue;
      current += *pem;
      bundles.push_back(std::move(*pem));
    }
    auto merged = MergeCaBundle(current, ca_pem, keep_others);
    if (!merged) return merged.error();
    const std::string encoded = Base64Encode(*merged);
    Json patch = Json::array();
    const std::string rv = MetaString(*config, "resourceVersion");
    if (!rv.empty()) {
      patch.push_back({{"op", "replace"}, {"path", "/metadata/resourceVersion"}, {"value", rv}});
    }
    bool changed = false;
    for (size_t i = 0; i < hooks->size(); ++i) {
      const Json& cc = (*hooks)[i]["clientConfig"];
      if (cc.contains("caBundle") && cc["caBundle"] == encoded) continue;
      patch.push_back({{"op", "add"},
                       {"path", "/webhooks/" + std::to_string(i) + "/clientConfig/caBundle"},
                       {"value", encoded}});
      changed = true;
    }
    if (!changed) return false;
    auto r = client.Patch(ResourceKind::kMutatingWebhookConfiguration, "", config_name, patch,
                          PatchType::kJsonPatch);
    if (r) return true;
    last = r.error();
    if (last.code() != StatusCode::kAlreadyExists) return last.WithContext(what);
  }
  return Status::Unavailable(what + ": still conflicting after " + std::to_string(kAttempts) +
                             " attempts: " + last.message());
}

CaBundlePublisher::CaBundlePublisher(KubeClient* client, std::string config_name,
                                     std::string ca_pem, Options options)
    : client_(client),
      config_name_(std::move(config_name)),
      ca_pem_(std::move(ca_pem)),
      options_(options) {}

CaBundlePublisher::~CaBundlePublisher() { Stop(); }

void CaBundlePublisher::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void CaBundlePublisher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CaBundlePublisher::Loop() {
  std::chrono::milliseconds backoff = options_.initial_backoff;
  bool published = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    lock.unlock();
    auto r = PublishCaBundle(*client_, config_name_, ca_pem_);
    lock.lock();
    std::chrono::milliseconds wait = options_.recheck;
    if (r) {
      ++successes_;
      if (*r || !published) {
        VGPU_LOG_INFO("webhook CA %s the caBundle of MutatingWebhookConfiguration %s",
                      *r ? "written into" : "already in", config_name_.c_str());
      }
      published = true;
      backoff = options_.initial_backoff;
    } else {
      ++failures_;
      wait = backoff;
      VGPU_LOG_WARN("publishing the webhook CA: %s; retrying in %lld ms",
                    r.error().message().c_str(), static_cast<long long>(wait.count()));
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    cv_.wait_for(lock, wait, [this] { return stop_; });
  }
}

}  // namespace vgpu::k8s
