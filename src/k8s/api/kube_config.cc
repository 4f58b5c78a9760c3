#include "k8s/api/kube_config.h"

#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "k8s/api/encoding.h"

namespace vgpu::k8s {
namespace {

namespace fs = std::filesystem;

std::string Where(const std::string& path, const YAML::Node& node) {
  const YAML::Mark m = node.Mark();
  if (m.line < 0) return path;
  return path + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// A string field of a map node, "" when absent. Non-scalar values are an error.
Result<std::string> YamlStringField(const std::string& path, const YAML::Node& map,
                                    const char* key) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return std::string();
  if (!v.IsScalar()) {
    return Status::InvalidArgument(Where(path, v) + ": '" + key + "' must be a string");
  }
  return v.Scalar();
}

Result<bool> BoolField(const std::string& path, const YAML::Node& map, const char* key) {
  const YAML::Node v = map[key];
  if (!v || v.IsNull()) return false;
  bool out = false;
  if (!v.IsScalar() || !YAML::convert<bool>::decode(v, out)) {
    return Status::InvalidArgument(Where(path, v) + ": '" + key + "' must be true or false");
  }
  return out;
}

// Finds the entry named `name` in a kubeconfig list (clusters, contexts, users) and returns its
// inner map (entry[inner]).
Result<YAML::Node> FindNamed(const std::string& path, const YAML::Node& root, const char* list,
                             const std::string& name, const char* inner) {
  const YAML::Node seq = root[list];
  if (seq && !seq.IsSequence()) {
    return Status::InvalidArgument(Where(path, seq) + ": '" + list + "' must be a list");
  }
  if (seq) {
    for (const YAML::Node& entry : seq) {
      if (!entry.IsMap()) continue;
      const YAML::Node n = entry["name"];
      if (n && n.IsScalar() && n.Scalar() == name) {
        const YAML::Node body = entry[inner];
        if (!body || !body.IsMap()) {
          return Status::InvalidArgument(Where(path, entry) + ": entry '" + name + "' of '" + list +
                                         "' has no '" + inner + "' map");
        }
        return body;
      }
    }
  }
  return Status::InvalidArgument(path + ": no entry named '" + name + "' in '" + list + "'");
}

// Reads "<key>-data" (base64) or "<key>" (a path relative to the kubeconfig's directory).
Result<std::string> DataOrFile(const std::string& path, const YAML::Node& map,
                               const std::string& key) {
  const std::string data_key = key + "-data";
  auto data = YamlStringField(path, map, data_key.c_str());
  if (!data) return data.error();
  if (!data->empty()) {
    auto decoded = Base64Decode(*data);
    if (!decoded) {
      return Status::InvalidArgument(Where(path, map[data_key]) + ": '" + data_key +
                                     "': " + decoded.error().message());
    }
    return *decoded;
  }
  auto file = YamlStringField(path, map, key.c_str());
  if (!file) return file.error();
  if (file->empty()) return std::string();
  fs::path p(*file);
  if (p.is_relative()) p = fs::path(path).parent_path() / p;
  auto content = ReadWholeFile(p.string());
  if (!content) {
    return Status(content.error().code(),
                  Where(path, map[key]) + ": '" + key + "': " + content.error().message());
  }
  return *content;
}

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

Result<KubeConfig> InClusterConfigFrom(const std::string& host, const std::string& port,
                                       const std::string& service_account_dir) {
  if (host.empty() || port.empty()) {
    return Status::FailedPrecondition(
        "not running in a cluster: KUBERNETES_SERVICE_HOST / KUBERNETES_SERVICE_PORT are not set");
  }
  KubeConfig c;
  const bool ipv6 = host.find(':') != std::string::npos;
  c.server = "https://" + (ipv6 ? "[" + host + "]" : host) + ":" + port;
  const std::string token_path = service_account_dir + "/token";
  auto token = ReadWholeFile(token_path);
  if (!token) return token.error().WithContext("in-cluster config: service account token");
  c.token_file = token_path;
  c.token = Trim(*token);
  auto ca = ReadWholeFile(service_account_dir + "/ca.crt");
  if (!ca) return ca.error().WithContext("in-cluster config: service account CA");
  c.ca_pem = *ca;
  auto ns = ReadWholeFile(service_account_dir + "/namespace");
  if (ns) c.namespace_ = Trim(*ns);
  c.source = "in-cluster";
  return c;
}

Result<KubeConfig> LoadInClusterConfig(const std::string& service_account_dir) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  return InClusterConfigFrom(host ? host : "", port ? port : "", service_account_dir);
}

Result<KubeConfig> LoadKubeconfig(const std::string& path, const std::string& context) {
  auto text = ReadWholeFile(path);
  if (!text) return text.error().WithContext("kubeconfig");
  YAML::Node root;
  try {
    root = YAML::Load(*text);
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ":" +
                                   std::to_string(e.mark.column + 1) + ": " + e.msg);
  }
  if (!root.IsMap()) return Status::InvalidArgument(path + ": not a kubeconfig (expected a map)");
  try {
    std::string ctx_name = context;
    if (ctx_name.empty()) {
      auto current = YamlStringField(path, root, "current-context");
      if (!current) return current.error();
      ctx_name = *current;
    }
    if (ctx_name.empty()) {
      return Status::InvalidArgument(path + ": no current-context; pass a context name");
    }
    auto ctx = FindNamed(path, root, "contexts", ctx_name, "context");
    if (!ctx) return ctx.error();
    auto cluster_name = YamlStringField(path, *ctx, "cluster");
    if (!cluster_name) return cluster_name.error();
    auto user_name = YamlStringField(path, *ctx, "user");
    if (!user_name) return user_name.error();
    auto ns = YamlStringField(path, *ctx, "namespace");
    if (!ns) return ns.error();

    KubeConfig c;
    c.namespace_ = *ns;
    c.source = path + " (context " + ctx_name + ")";
    auto cluster = FindNamed(path, root, "clusters", *cluster_name, "cluster");
    if (!cluster) return cluster.error();
    auto server = YamlStringField(path, *cluster, "server");
    if (!server) return server.error();
    if (server->empty()) {
      return Status::InvalidArgument(Where(path, *cluster) + ": cluster '" + *cluster_name +
                                     "' has no server");
    }
    c.server = *server;
    while (!c.server.empty() && c.server.back() == '/') c.server.pop_back();
    for (const char* unsupported : {"proxy-url", "tls-server-name"}) {
      if ((*cluster)[unsupported]) {
        return Status::InvalidArgument(Where(path, (*cluster)[unsupported]) + ": '" + unsupported +
                                       "' is not supported");
      }
    }
    auto insecure = BoolField(path, *cluster, "insecure-skip-tls-verify");
    if (!insecure) return insecure.error();
    c.insecure_skip_tls_verify = *insecure;
    auto ca = DataOrFile(path, *cluster, "certificate-authority");
    if (!ca) return ca.error();
    c.ca_pem = *ca;

    if (!user_name->empty()) {
      auto user = FindNamed(path, root, "users", *user_name, "user");
      if (!user) return user.error();
      for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
        if ((*user)[unsupported]) {
          return Status::InvalidArgument(
              Where(path, (*user)[unsupported]) + ": user '" + *user_name + "' uses '" +
              unsupported +
              "', which vgpu does not support; use a client certificate, a token or a tokenFile "
              "(e.g. a service account token)");
        }
      }
      auto cert = DataOrFile(path, *user, "client-certificate");
      if (!cert) return cert.error();
      auto key = DataOrFile(path, *user, "client-key");
      if (!key) return key.error();
      if (cert->empty() != key->empty()) {
        return Status::InvalidArgument(Where(path, *user) + ": user '" + *user_name +
                                       "' needs both a client certificate and a client key");
      }
      c.client_cert_pem = *cert;
      c.client_key_pem = *key;
      auto token = YamlStringField(path, *user, "token");
      if (!token) return token.error();
      c.token = *token;
      auto token_file = YamlStringField(path, *user, "tokenFile");
      if (!token_file) return token_file.error();
      if (!token_file->empty()) {
        fs::path p(*token_file);
        if (p.is_relative()) p = fs::path(path).parent_path() / p;
        c.token_file = p.string();
        auto t = ReadWholeFile(c.token_file);
        if (!t) return t.error().WithContext(Where(path, (*user)["tokenFile"]) + ": 'tokenFile'");
        c.token = Trim(*t);
      }
    }
    return c;
  } catch (const YAML::Exception& e) {
    return Status::InvalidArgument(path + ":" + std::to_string(e.mark.line + 1) + ": " + e.msg);
  }
}

Result<KubeConfig> LoadDefaultConfig(const std::string& kubeconfig_path,
                                     const std::string& context) {
  if (!kubeconfig_path.empty()) return LoadKubeconfig(kubeconfig_path, context);
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  if (host != nullptr && *host != '\0' && context.empty()) return LoadInClusterConfig();
  if (const char* env = std::getenv("KUBECONFIG"); env != nullptr && *env != '\0') {
    std::string_view list(env);
    while (!list.empty()) {
      const size_t colon = list.find(':');
      const std::string entry(list.substr(0, colon));
      std::error_code ec;
      if (!entry.empty() && fs::exists(entry, ec)) return LoadKubeconfig(entry, context);
      if (colon == std::string_view::npos) break;
      list.remove_prefix(colon + 1);
    }
  }
  if (const char* home = std::getenv("HOME"); home != nullptr) {
    const std::string p = std::string(home) + "/.kube/config";
    std::error_code ec;
    if (fs::exists(p, ec)) return LoadKubeconfig(p, context);
  }
  return Status::NotFound(
      "no Kubernetes configuration: not in a cluster, $KUBECONFIG unset and no ~/.kube/config; "
      "pass --kubeconfig");
}

}  // namespace vgpu::k8s
