// OpenSSL helpers for the Kubernetes client and the extender's HTTPS listener: PEM text to
// certificates, keys and CA stores, owned by unique_ptrs.
//
// Contract: every function copies what it needs from its input; errors are kInvalidArgument with
// the OpenSSL reason (e.g. "no certificate found in CA data"). Thread-safe (OpenSSL 3).
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string_view>

#include "common/result.h"

namespace vgpu::k8s {

struct X509Free {
  void operator()(X509* p) const { X509_free(p); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
struct StoreFree {
  void operator()(X509_STORE* p) const { X509_STORE_free(p); }
};
struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using StorePtr = std::unique_ptr<X509_STORE, StoreFree>;
using BioPtr = std::unique_ptr<BIO, BioFree>;

// The first certificate of a PEM text.
Result<X509Ptr> ParseCertificatePem(std::string_view pem);
// A private key (PKCS#8, PKCS#1 RSA or SEC1 EC) from PEM text.
Result<PkeyPtr> ParsePrivateKeyPem(std::string_view pem);
// A store holding every certificate of a PEM bundle (at least one).
Result<StorePtr> BuildCaStore(std::string_view pem);
// kInvalidArgument when `key` is not the private key of `cert`.
Status CheckKeyMatchesCertificate(X509* cert, EVP_PKEY* key);
// The most recent OpenSSL error as text ("" when none); clears the error queue.
std::string TakeOpenSslError();

}  // namespace vgpu::k8s
