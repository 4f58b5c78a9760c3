// Where the API server is and how to authenticate to it: in-cluster service-account config and
// kubeconfig files.
//
// Contract:
// - KubeConfig holds everything by value (PEM text, not paths), so a client built from it does
//   not depend on files later, except `token_file`, which the client re-reads because
//   service-account tokens rotate.
// - LoadInClusterConfig reads KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT and the service
//   account directory (token, ca.crt, namespace). kFailedPrecondition when not in a cluster.
// - LoadKubeconfig parses a kubeconfig file (clusters, contexts, users, current-context). It
//   supports server, certificate-authority(-data), insecure-skip-tls-verify, client-certificate
//   (-data), client-key(-data), token and tokenFile; relative paths are relative to the file.
//   Exec and auth-provider plugins, basic auth and proxies are refused with a message saying so.
//   Errors name the file, line and column (kInvalidArgument) or the missing file (kNotFound).
// - LoadDefaultConfig picks, in order: an explicit kubeconfig path; in-cluster config when the
//   environment says so; $KUBECONFIG (first existing entry); ~/.kube/config.
#pragma once

#include <string>

#include "common/result.h"

namespace vgpu::k8s {

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

struct KubeConfig {
  std::string server;  // "https://host:port" (http:// is accepted for tests and local proxies)
  std::string ca_pem;  // CA bundle; empty = the system's default trust store
  bool insecure_skip_tls_verify = false;
  std::string client_cert_pem;
  std::string client_key_pem;
  std::string token;       // static bearer token
  std::string token_file;  // bearer token re-read from this file (wins over `token`)
  std::string namespace_;  // the context's / service account's namespace, "" if none
  std::string source;      // "in-cluster" or the kubeconfig path and context, for messages
};

Result<KubeConfig> LoadInClusterConfig(const std::string& service_account_dir = kServiceAccountDir);
// The same, with the host and port given instead of read from the environment.
Result<KubeConfig> InClusterConfigFrom(const std::string& host, const std::string& port,
                                       const std::string& service_account_dir);

// `context` empty = the file's current-context.
Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context = "");

Result<KubeConfig> LoadDefaultConfig(const std::string& kubeconfig_path = "",
                                     const std::string& context = "");

}  // namespace vgpu::k8s
