#include "k8s/api/tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>

#include <string>

namespace vgpu::k8s {
namespace {

BioPtr MemBio(std::string_view pem) {
  return BioPtr(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

}  // namespace

std::string TakeOpenSslError() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out = buf;  // keep the last (most specific) one
  }
  return out;
}

Result<X509Ptr> ParseCertificatePem(std::string_view pem) {
  BioPtr bio = MemBio(pem);
  X509* cert = bio ? PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (cert == nullptr) {
    const std::string why = TakeOpenSslError();
    return Status::InvalidArgument("no PEM certificate found" +
                                   (why.empty() ? "" : " (" + why + ")"));
  }
  return X509Ptr(cert);
}

Result<PkeyPtr> ParsePrivateKeyPem(std::string_view pem) {
  BioPtr bio = MemBio(pem);
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr) : nullptr;
  if (key == nullptr) {
    const std::string why = TakeOpenSslError();
    return Status::InvalidArgument("no PEM private key found" +
                                   (why.empty() ? "" : " (" + why + ")"));
  }
  return PkeyPtr(key);
}

Result<StorePtr> BuildCaStore(std::string_view pem) {
  StorePtr store(X509_STORE_new());
  if (!store) return Status::Internal("X509_STORE_new failed");
  BioPtr bio = MemBio(pem);
  int count = 0;
  while (bio) {
    X509* cert = PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr);
    if (cert == nullptr) break;
    X509_STORE_add_cert(store.get(), cert);
    X509_free(cert);
    ++count;
  }
  ERR_clear_error();  // the loop ends on a "no start line" error
  if (count == 0) return Status::InvalidArgument("no certificate found in CA data");
  return store;
}

Status CheckKeyMatchesCertificate(X509* cert, EVP_PKEY* key) {
  if (X509_check_private_key(cert, key) != 1) {
    TakeOpenSslError();
    return Status::InvalidArgument("the client key does not belong to the client certificate");
  }
  return Status::Ok();
}

}  // namespace vgpu::k8s
