// RawHttpClient: the cheapest HTTP/1.1 client a load generator can have, so that on a small
// machine the client's CPU does not hide the server's: one keep-alive TCP connection to a
// loopback server, POST with Content-Length, responses read by Content-Length (no chunked
// encoding, which the extender never sends). Reconnects once when the server closed an idle
// connection. One thread per client; not thread-safe.
#pragma once

#include <string>
#include <string_view>

namespace vgpu::k8s::bench {

class RawHttpClient {
 public:
  RawHttpClient(std::string host, int port) : host_(std::move(host)), port_(port) {}
  ~RawHttpClient();
  RawHttpClient(const RawHttpClient&) = delete;
  RawHttpClient& operator=(const RawHttpClient&) = delete;

  // POSTs `body` (application/json) to `path`; returns the HTTP status and fills `response`
  // with the body, or returns -1 with the reason in `response`.
  int Post(std::string_view path, std::string_view body, std::string* response);

 private:
  bool Connect(std::string* why);
  int Exchange(std::string_view path, std::string_view body, std::string* response);

  std::string host_;
  int port_;
  int fd_ = -1;
  std::string request_;  // reused buffers
  std::string in_;
};

}  // namespace vgpu::k8s::bench
