#include "test_pki.h"

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

namespace vgpu::k8s::testing {
namespace {

void Check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "test PKI: %s failed\n", what);
    std::abort();
  }
}

EVP_PKEY* NewKey() {
  EVP_PKEY* key = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  Check(key != nullptr, "EC key generation");
  return key;
}

void AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  Check(ext != nullptr, "certificate extension");
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Issues a certificate for `key`; self-signed when issuer is null.
X509* Issue(EVP_PKEY* key, const char* cn, const char* org, X509* issuer, EVP_PKEY* issuer_key,
            bool ca, const char* san, const char* eku, long serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), 24 * 3600);
  X509_set_pubkey(cert, key);
  X509_NAME* name = X509_get_subject_name(cert);
  if (org != nullptr) {
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(org),
                               -1, -1, 0);
  }
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>(cn),
                             -1, -1, 0);
  X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert;
  AddExt(cert, signer, NID_basic_constraints, ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
  AddExt(cert, signer, NID_key_usage,
         ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature,keyEncipherment");
  AddExt(cert, signer, NID_subject_key_identifier, "hash");
  if (issuer != nullptr) AddExt(cert, signer, NID_authority_key_identifier, "keyid");
  if (san != nullptr) AddExt(cert, signer, NID_subject_alt_name, san);
  if (eku != nullptr) AddExt(cert, signer, NID_ext_key_usage, eku);
  Check(X509_sign(cert, issuer_key ? issuer_key : key, EVP_sha256()) > 0, "signing");
  return cert;
}

std::string CertPem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

std::string KeyPem(EVP_PKEY* key) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(bio, key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio, &data);
  std::string out(data, static_cast<size_t>(n));
  BIO_free(bio);
  return out;
}

}  // namespace

TestPki GenerateTestPki() {
  TestPki pki;
  EVP_PKEY* ca_key = NewKey();
  X509* ca = Issue(ca_key, "vgpu-test-ca", nullptr, nullptr, nullptr, true, nullptr, nullptr, 1);
  EVP_PKEY* server_key = NewKey();
  X509* server = Issue(server_key, "localhost", nullptr, ca, ca_key, false,
                       "IP:127.0.0.1,DNS:localhost", "serverAuth", 2);
  EVP_PKEY* client_key = NewKey();
  X509* client = Issue(client_key, "vgpu-test-client", "system:masters", ca, ca_key, false, nullptr,
                       "clientAuth", 3);
  EVP_PKEY* other_key = NewKey();
  X509* other =
      Issue(other_key, "unrelated-ca", nullptr, nullptr, nullptr, true, nullptr, nullptr, 4);
  pki.ca_cert_pem = CertPem(ca);
  pki.ca_key_pem = KeyPem(ca_key);
  pki.server_cert_pem = CertPem(server);
  pki.server_key_pem = KeyPem(server_key);
  pki.client_cert_pem = CertPem(client);
  pki.client_key_pem = KeyPem(client_key);
  pki.other_ca_cert_pem = CertPem(other);
  for (X509* c : {ca, server, client, other}) X509_free(c);
  for (EVP_PKEY* k : {ca_key, server_key, client_key, other_key}) EVP_PKEY_free(k);
  return pki;
}

void WriteFile(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace vgpu::k8s::testing
