#include "k8s/api/http_kube_client.h"

#include <httplib.h>

#include <netdb.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>
#include <thread>

#include "common/log.h"
#include "k8s/api/encoding.h"
#include "k8s/api/tls.h"

namespace vgpu::k8s {
namespace {

using std::chrono::milliseconds;

std::string ApiMessage(const std::string& body) {
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_object()) {
    auto m = j.find("message");
    if (m != j.end() && m->is_string()) return m->get<std::string>();
  }
  std::string s = body.substr(0, 200);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  return s;
}

// Why a plain TCP connection to host:port fails now ("Connection refused", "No route to host",
// a name that does not resolve): httplib tells only that connecting failed.
std::string WhyNoConnection(const std::string& host, int port, milliseconds timeout) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return "cannot resolve " + host + ": " + ::gai_strerror(rc);
  }
  std::string why = "no address";
  for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      why = std::strerror(errno);
      continue;
    }
    timeval tv{static_cast<time_t>(timeout.count() / 1000),
               static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
    ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    const int rc = ::connect(fd, a->ai_addr, a->ai_addrlen);
    const int err = errno;
    ::close(fd);
    if (rc == 0) {
      why = "it accepts connections again";
      break;
    }
    why = err == EINPROGRESS || err == EAGAIN
              ? "no answer within " + std::to_string(timeout.count()) + " ms"
              : std::strerror(err);
  }
  ::freeaddrinfo(found);
  return why;
}

bool Retryable(int status) {
  return status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

milliseconds Jittered(milliseconds base) {
  thread_local std::minstd_rand rng(static_cast<unsigned>(
      std::hash<std::thread::id>()(std::this_thread::get_id()) ^
      static_cast<size_t>(std::chrono::steady_clock::now().time_since_epoch().count())));
  std::uniform_real_distribution<double> dist(0.5, 1.0);
  return milliseconds(static_cast<int64_t>(static_cast<double>(base.count()) * dist(rng)));
}

std::string Query(std::initializer_list<std::pair<const char*, std::string>> params) {
  std::string q;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    q += q.empty() ? '?' : '&';
    q += k;
    q += '=';
    q += UrlEncode(v);
  }
  return q;
}

}  // namespace

Status StatusFromHttp(int http_status, const std::string& body, const std::string& what) {
  const std::string msg = what + ": HTTP " + std::to_string(http_status) + ": " + ApiMessage(body);
  switch (http_status) {
    case 400:
    case 422:
      return Status::InvalidArgument(msg);
    case 401:
    case 403:
      return Status::PermissionDenied(msg);
    case 404:
      return Status::NotFound(msg);
    case 409:
      return Status::AlreadyExists("conflict: " + msg);
    case 410:
      return Status::OutOfRange("gone: " + msg);
    default:
      break;
  }
  if (Retryable(http_status)) return Status::Unavailable(msg);
  return Status::Internal(msg);
}

HttpKubeClient::HttpKubeClient(KubeConfig config, ClientOptions options)
    : config_(std::move(config)), options_(std::move(options)) {}

HttpKubeClient::~HttpKubeClient() = default;

Result<std::unique_ptr<HttpKubeClient>> HttpKubeClient::Create(const KubeConfig& config,
                                                               const ClientOptions& options) {
  std::unique_ptr<HttpKubeClient> c(new HttpKubeClient(config, options));
  VGPU_RETURN_IF_ERROR(c->Init());
  return c;
}

Status HttpKubeClient::Init() {
  std::string_view url = config_.server;
  const std::string where = "server '" + config_.server + "' (" + config_.source + ")";
  if (url.starts_with("https://")) {
    https_ = true;
    url.remove_prefix(8);
  } else if (url.starts_with("http://")) {
    https_ = false;
    url.remove_prefix(7);
  } else {
    return Status::InvalidArgument(where + ": the URL must start with https:// or http://");
  }
  const size_t slash = url.find('/');
  std::string_view authority = url.substr(0, slash);
  if (slash != std::string_view::npos) base_path_ = std::string(url.substr(slash));
  while (!base_path_.empty() && base_path_.back() == '/') base_path_.pop_back();
  port_ = https_ ? 443 : 80;
  if (authority.starts_with("[")) {  // [ipv6]:port
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Status::InvalidArgument(where + ": bad IPv6 host");
    host_ = std::string(authority.substr(1, close - 1));
    authority.remove_prefix(close + 1);  // ":port" or nothing
    if (!authority.empty() && !authority.starts_with(":")) {
      return Status::InvalidArgument(where + ": bad text after the IPv6 host");
    }
  } else {
    const size_t colon = authority.rfind(':');
    host_ = std::string(authority.substr(0, colon));
    authority = colon == std::string_view::npos ? std::string_view() : authority.substr(colon);
  }
  if (authority.starts_with(":")) {
    const std::string p(authority.substr(1));
    char* end = nullptr;
    const long v = std::strtol(p.c_str(), &end, 10);
    if (p.empty() || *end != '\0' || v <= 0 || v > 65535) {
      return Status::InvalidArgument(where + ": bad port '" + p + "'");
    }
    port_ = static_cast<int>(v);
  }
  if (host_.empty()) return Status::InvalidArgument(where + ": no host");
  if (!https_ && !config_.client_cert_pem.empty()) {
    return Status::InvalidArgument(where + ": a client certificate needs an https:// server");
  }
  if (!config_.ca_pem.empty()) {
    auto store = BuildCaStore(config_.ca_pem);
    if (!store) return store.error().WithContext("CA of " + where);
  }
  if (!config_.client_cert_pem.empty()) {
    auto cert = ParseCertificatePem(config_.client_cert_pem);
    if (!cert) return cert.error().WithContext("client certificate");
    auto key = ParsePrivateKeyPem(config_.client_key_pem);
    if (!key) return key.error().WithContext("client key");
    VGPU_RETURN_IF_ERROR(CheckKeyMatchesCertificate(cert->get(), key->get()));
  }
  token_ = config_.token;
  token_read_at_ = std::chrono::steady_clock::now();
  return Status::Ok();
}

Result<std::unique_ptr<httplib::ClientImpl>> HttpKubeClient::NewConnection(
    milliseconds read_timeout) {
  std::unique_ptr<httplib::ClientImpl> c;
  if (https_) {
    std::unique_ptr<httplib::SSLClient> ssl;
    if (!config_.client_cert_pem.empty()) {
      auto cert = ParseCertificatePem(config_.client_cert_pem);
      if (!cert) return cert.error();
      auto key = ParsePrivateKeyPem(config_.client_key_pem);
      if (!key) return key.error();
      // The SSL context takes its own references.
      ssl = std::make_unique<httplib::SSLClient>(host_, port_, cert->get(), key->get());
    } else {
      ssl = std::make_unique<httplib::SSLClient>(host_, port_);
    }
    if (!ssl->is_valid()) return Status::Internal("cannot set up TLS: " + TakeOpenSslError());
    if (config_.insecure_skip_tls_verify) {
      ssl->enable_server_certificate_verification(false);
    } else {
      ssl->enable_server_certificate_verification(true);
      if (!config_.ca_pem.empty()) {
        auto store = BuildCaStore(config_.ca_pem);
        if (!store) return store.error();
        ssl->set_ca_cert_store(store->release());  // owned by the SSL context from here
      }
    }
    c = std::move(ssl);
  } else {
    c = std::make_unique<httplib::ClientImpl>(host_, port_);
  }
  c->set_keep_alive(true);
  c->set_tcp_nodelay(true);
  const auto split = [](milliseconds ms, auto setter) {
    setter(static_cast<time_t>(ms.count() / 1000), static_cast<time_t>((ms.count() % 1000) * 1000));
  };
  split(options_.connect_timeout, [&](time_t s, time_t us) { c->set_connection_timeout(s, us); });
  split(read_timeout, [&](time_t s, time_t us) { c->set_read_timeout(s, us); });
  split(read_timeout, [&](time_t s, time_t us) { c->set_write_timeout(s, us); });
  return c;
}

std::unique_ptr<httplib::ClientImpl> HttpKubeClient::Acquire(Status* error) {
  std::unique_lock<std::mutex> lock(pool_mu_);
  pool_cv_.wait(lock, [&] { return !idle_.empty() || open_ < options_.max_connections; });
  if (!idle_.empty()) {
    auto c = std::move(idle_.back());
    idle_.pop_back();
    return c;
  }
  ++open_;
  lock.unlock();
  auto c = NewConnection(options_.request_timeout);
  if (!c) {
    *error = c.error();
    std::lock_guard<std::mutex> relock(pool_mu_);
    --open_;
    pool_cv_.notify_one();
    return nullptr;
  }
  return std::move(*c);
}

void HttpKubeClient::Release(std::unique_ptr<httplib::ClientImpl> c) {
  std::lock_guard<std::mutex> lock(pool_mu_);
  if (c) {
    idle_.push_back(std::move(c));
  } else {
    --open_;
  }
  pool_cv_.notify_one();
}

std::string HttpKubeClient::BearerToken() {
  std::lock_guard<std::mutex> lock(token_mu_);
  if (!config_.token_file.empty() &&
      std::chrono::steady_clock::now() - token_read_at_ >= options_.token_reload) {
    auto t = ReadWholeFile(config_.token_file);
    if (t) {
      std::string s = *t;
      while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
      token_ = s;
    } else {
      VGPU_LOG_WARN("cannot re-read token file %s: %s", config_.token_file.c_str(),
                    t.error().message().c_str());
    }
    token_read_at_ = std::chrono::steady_clock::now();
  }
  return token_;
}

Result<HttpKubeClient::Response> HttpKubeClient::Do(const char* method, const std::string& path,
                                                    const std::string& body,
                                                    std::string_view content_type) {
  const std::string what = std::string(method) + " " + path;
  milliseconds backoff = options_.initial_backoff;
  std::string last_error;
  for (int attempt = 1;; ++attempt) {
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.requests;
      if (attempt > 1) ++stats_.retries;
    }
    Status acquire_error;
    std::unique_ptr<httplib::ClientImpl> conn = Acquire(&acquire_error);
    if (!conn) return acquire_error;
    httplib::Headers headers = {{"Accept", "application/json"},
                                {"User-Agent", options_.user_agent}};
    const std::string token = BearerToken();
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    const std::string full = base_path_ + path;
    const std::string ctype(content_type);
    const std::string_view m(method);
    httplib::Result res = m == "GET"      ? conn->Get(full, headers)
                          : m == "PATCH"  ? conn->Patch(full, headers, body, ctype)
                          : m == "PUT"    ? conn->Put(full, headers, body, ctype)
                          : m == "DELETE" ? conn->Delete(full, headers, body, ctype)
                                          : conn->Post(full, headers, body, ctype);
    milliseconds wait = backoff;
    if (!res) {
      last_error = "connection to " + config_.server +
                   " failed: " + TransportError(static_cast<int>(res.error()));
      if (res.error() == httplib::Error::SSLServerVerification) {
        Release(nullptr);
        return Status::PermissionDenied(what + ": " + last_error +
                                        " (the server's certificate is not trusted)");
      }
      conn.reset();  // drop the connection; a new one is made next time
      Release(nullptr);
    } else {
      const int status = res->status;
      std::string response_body = std::move(res->body);
      if (!Retryable(status)) {
        Release(std::move(conn));
        return Response{status, std::move(response_body)};
      }
      if (res->has_header("Retry-After")) {
        const long secs = std::strtol(res->get_header_value("Retry-After").c_str(), nullptr, 10);
        if (secs > 0)
          wait = std::min<milliseconds>(milliseconds(secs * 1000), options_.max_backoff);
      }
      Release(std::move(conn));
      last_error = StatusFromHttp(status, response_body, what).message();
    }
    if (attempt >= options_.max_attempts) break;
    std::this_thread::sleep_for(Jittered(wait));
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
  return Status::Unavailable(what + ": giving up after " + std::to_string(options_.max_attempts) +
                             " attempts: " + last_error);
}

std::string HttpKubeClient::TransportError(int error) const {
  const std::string where = host_ + ":" + std::to_string(port_);
  const std::string tls = TakeOpenSslError();
  switch (static_cast<httplib::Error>(error)) {
    case httplib::Error::Connection:
      return "cannot connect to " + where + ": " +
             WhyNoConnection(host_, port_, options_.connect_timeout);
    case httplib::Error::ConnectionTimeout:
      return "no connection to " + where + " within " +
             std::to_string(options_.connect_timeout.count()) + " ms";
    case httplib::Error::Read:
      return "no answer from " + where + " (the connection closed, or nothing came within " +
             std::to_string(options_.request_timeout.count()) + " ms)";
    case httplib::Error::Write:
      return "the request could not be sent to " + where + " (the connection closed)";
    case httplib::Error::SSLConnection:
      return "the TLS handshake with " + where + " failed" + (tls.empty() ? "" : ": " + tls);
    case httplib::Error::SSLLoadingCerts:
      return "loading the TLS certificates failed" + (tls.empty() ? "" : ": " + tls);
    case httplib::Error::SSLServerVerification:
      return "the certificate of " + where + " does not verify" + (tls.empty() ? "" : ": " + tls);
    default:
      return httplib::to_string(static_cast<httplib::Error>(error));
  }
}

std::string HttpKubeClient::ObjectPath(ResourceKind kind, const std::string& ns,
                                       const std::string& name) const {
  std::string p(ApiGroupPath(kind));
  if (Namespaced(kind) && !ns.empty()) p += "/namespaces/" + UrlEncode(ns);
  p += '/';
  p += KindName(kind);
  if (!name.empty()) p += "/" + UrlEncode(name);
  return p;
}

Result<Json> HttpKubeClient::Get(ResourceKind kind, const std::string& ns,
                                 const std::string& name) {
  const std::string path = ObjectPath(kind, ns, name);
  auto r = Do("GET", path, "", "");
  if (!r) return r.error();
  if (r->status != 200) return StatusFromHttp(r->status, r->body, "GET " + path);
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Internal("GET " + path + ": the server sent invalid JSON");
  }
  return j;
}

Result<ObjectList> HttpKubeClient::List(ResourceKind kind, const std::string& ns,
                                        const ListOptions& options) {
  ObjectList out;
  std::string cont;
  const std::string base = ObjectPath(kind, ns, "");
  do {
    const std::string path =
        base + Query({{"labelSelector", options.label_selector},
                      {"fieldSelector", options.field_selector},
                      {"limit", options.page_size > 0 ? std::to_string(options.page_size) : ""},
                      {"continue", cont}});
    auto r = Do("GET", path, "", "");
    if (!r) return r.error();
    if (r->status != 200) return StatusFromHttp(r->status, r->body, "GET " + path);
    Json j = Json::parse(r->body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("items") || !j["items"].is_array()) {
      return Status::Internal("GET " + path + ": the server sent no list");
    }
    for (Json& item : j["items"]) out.items.push_back(std::move(item));
    out.resource_version = MetaString(j, "resourceVersion");
    cont = MetaString(j, "continue");
  } while (!cont.empty());
  return out;
}

Result<Json> HttpKubeClient::Patch(ResourceKind kind, const std::string& ns,
                                   const std::string& name, const Json& patch, PatchType type) {
  const std::string path = ObjectPath(kind, ns, name);
  auto r = Do("PATCH", path, patch.dump(), PatchContentType(type));
  if (!r) return r.error();
  if (r->status != 200 && r->status != 201) {
    return StatusFromHttp(r->status, r->body, "PATCH " + path);
  }
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return Status::Internal("PATCH " + path + ": the server sent invalid JSON");
  return j;
}

Result<Json> HttpKubeClient::Create(ResourceKind kind, const std::string& ns, const Json& object) {
  const std::string path = ObjectPath(kind, ns, "");
  auto r = Do("POST", path, object.dump(), "application/json");
  if (!r) return r.error();
  if (r->status != 200 && r->status != 201 && r->status != 202) {
    return StatusFromHttp(r->status, r->body, "POST " + path);
  }
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return Status::Internal("POST " + path + ": the server sent invalid JSON");
  return j;
}

Result<Json> HttpKubeClient::Update(ResourceKind kind, const std::string& ns,
                                    const std::string& name, const Json& object) {
  const std::string path = ObjectPath(kind, ns, name);
  auto r = Do("PUT", path, object.dump(), "application/json");
  if (!r) return r.error();
  if (r->status != 200 && r->status != 201) {
    return StatusFromHttp(r->status, r->body, "PUT " + path);
  }
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded()) return Status::Internal("PUT " + path + ": the server sent invalid JSON");
  return j;
}

Status HttpKubeClient::Delete(ResourceKind kind, const std::string& ns, const std::string& name,
                              const std::string& uid) {
  const std::string path = ObjectPath(kind, ns, name);
  Json options = {{"apiVersion", "v1"}, {"kind", "DeleteOptions"}};
  if (!uid.empty()) options["preconditions"] = {{"uid", uid}};
  auto r = Do("DELETE", path, options.dump(), "application/json");
  if (!r) return r.error();
  if (r->status != 200 && r->status != 202) {
    return StatusFromHttp(r->status, r->body, "DELETE " + path);
  }
  return Status::Ok();
}

Result<Json> HttpKubeClient::ServerVersion() {
  auto r = Do("GET", "/version", "", "");
  if (!r) return r.error();
  if (r->status != 200) return StatusFromHttp(r->status, r->body, "GET /version");
  Json j = Json::parse(r->body, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Internal("GET /version: the server sent invalid JSON");
  }
  return j;
}

Status HttpKubeClient::CreateBinding(const std::string& ns, const std::string& name,
                                     const std::string& uid, const std::string& node) {
  Json meta = {{"name", name}, {"namespace", ns}};
  if (!uid.empty()) meta["uid"] = uid;
  const Json binding = {{"apiVersion", "v1"},
                        {"kind", "Binding"},
                        {"metadata", meta},
                        {"target", {{"apiVersion", "v1"}, {"kind", "Node"}, {"name", node}}}};
  const std::string path = ObjectPath(ResourceKind::kPod, ns, name) + "/binding";
  auto r = Do("POST", path, binding.dump(), "application/json");
  if (!r) return r.error();
  if (r->status != 200 && r->status != 201) {
    return StatusFromHttp(r->status, r->body, "POST " + path);
  }
  return Status::Ok();
}

Status HttpKubeClient::Watch(ResourceKind kind, const std::string& ns, const WatchOptions& options,
                             const std::function<bool(WatchEvent&&)>& on_event,
                             WatchCanceller* canceller) {
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.watches;
  }
  const std::string path = ObjectPath(kind, ns, "") +
                           Query({{"watch", "1"},
                                  {"resourceVersion", options.resource_version},
                                  {"allowWatchBookmarks", options.allow_bookmarks ? "true" : ""},
                                  {"timeoutSeconds", std::to_string(options.timeout_seconds)},
                                  {"labelSelector", options.label_selector},
                                  {"fieldSelector", options.field_selector}});
  const std::string what = "watch " + path;
  auto conn = NewConnection(milliseconds((options.timeout_seconds + 60) * 1000LL));
  if (!conn) return conn.error();
  httplib::ClientImpl* client = conn->get();
  if (canceller != nullptr) {
    canceller->Register([client] { client->stop(); });
    if (canceller->cancelled()) {
      canceller->Unregister();
      return Status::Ok();
    }
  }
  httplib::Headers headers = {{"Accept", "application/json"}, {"User-Agent", options_.user_agent}};
  const std::string token = BearerToken();
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);

  int http_status = 0;
  std::string error_body;
  std::string buffer;
  Status stream_status;  // set when an event ends the watch
  bool stopped_by_handler = false;
  size_t events = 0;
  httplib::Result res = client->Get(
      base_path_ + path, headers,
      [&](const httplib::Response& r) {
        http_status = r.status;
        return true;
      },
      [&](const char* data, size_t len) {
        if (http_status != 200) {
          error_body.append(data, len);
          return error_body.size() < (1u << 20);
        }
        buffer.append(data, len);
        size_t start = 0;
        for (size_t nl; (nl = buffer.find('\n', start)) != std::string::npos; start = nl + 1) {
          std::string_view line(buffer.data() + start, nl - start);
          if (line.empty() || line == "\r") continue;
          Json ev = Json::parse(line, nullptr, false);
          if (ev.is_discarded() || !ev.is_object() || !ev.contains("type")) {
            stream_status = Status::Internal(what + ": the server sent an invalid event");
            return false;
          }
          WatchEvent event;
          event.type = ev["type"].is_string() ? ev["type"].get<std::string>() : "";
          event.object = std::move(ev["object"]);
          if (event.type == "ERROR") {
            const int code = event.object.is_object() && event.object.contains("code") &&
                                     event.object["code"].is_number_integer()
                                 ? event.object["code"].get<int>()
                                 : 500;
            stream_status = StatusFromHttp(code, event.object.dump(), what);
            return false;
          }
          ++events;
          if (!on_event(std::move(event))) {
            stopped_by_handler = true;
            return false;
          }
        }
        buffer.erase(0, start);
        return canceller == nullptr || !canceller->cancelled();
      });
  if (canceller != nullptr) canceller->Unregister();
  if (!stream_status.ok()) return stream_status;
  if (stopped_by_handler || (canceller != nullptr && canceller->cancelled())) return Status::Ok();
  if (http_status != 0 && http_status != 200) return StatusFromHttp(http_status, error_body, what);
  if (!res) {
    return Status::Unavailable(what + ": the watch dropped after " + std::to_string(events) +
                               " events: " + httplib::to_string(res.error()));
  }
  return Status::Ok();
}

ClientStats HttpKubeClient::stats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

}  // namespace vgpu::k8s
