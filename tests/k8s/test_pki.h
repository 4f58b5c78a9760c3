// A throwaway PKI generated at test time with the OpenSSL APIs: a CA, a server certificate for
// 127.0.0.1 / localhost and a client certificate, all signed by the CA (EC P-256, valid 1 day).
#pragma once

#include <string>

namespace vgpu::k8s::testing {

struct TestPki {
  std::string ca_cert_pem, ca_key_pem;
  std::string server_cert_pem, server_key_pem;
  std::string client_cert_pem, client_key_pem;
  // A second, unrelated CA (for "untrusted server" tests).
  std::string other_ca_cert_pem;
};

// Aborts the test binary (via a fatal gtest failure) if OpenSSL refuses.
TestPki GenerateTestPki();

// Writes `text` to `path` (parent directories created).
void WriteFile(const std::string& path, const std::string& text);

}  // namespace vgpu::k8s::testing
