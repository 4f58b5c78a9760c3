#include "raw_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <strings.h>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace vgpu::k8s::bench {

RawHttpClient::~RawHttpClient() {
  if (fd_ >= 0) ::close(fd_);
}

bool RawHttpClient::Connect(std::string* why) {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) {
    *why = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  int yes = 1;
  setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port_));
  if (inet_pton(AF_INET, host_.c_str(), &addr.sin_addr) != 1 ||
      ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    *why = "connect " + host_ + ":" + std::to_string(port_) + ": " + std::strerror(errno);
    ::close(fd_);
    fd_ = -1;
    return false;
  }
  return true;
}

int RawHttpClient::Post(std::string_view path, std::string_view body, std::string* response) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fd_ < 0 && !Connect(response)) return -1;
    const int status = Exchange(path, body, response);
    if (status >= 0) return status;
    ::close(fd_);  // closed by the server (idle keep-alive): once more on a new connection
    fd_ = -1;
  }
  return -1;
}

int RawHttpClient::Exchange(std::string_view path, std::string_view body, std::string* response) {
  request_.clear();
  request_ += "POST ";
  request_ += path;
  request_ += " HTTP/1.1\r\nHost: ";
  request_ += host_;
  request_ += "\r\nContent-Type: application/json\r\nContent-Length: ";
  request_ += std::to_string(body.size());
  request_ += "\r\n\r\n";
  request_ += body;
  for (size_t sent = 0; sent < request_.size();) {
    const ssize_t n = ::send(fd_, request_.data() + sent, request_.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      *response = std::string("send: ") + std::strerror(errno);
      return -1;
    }
    sent += static_cast<size_t>(n);
  }
  // Headers, then Content-Length bytes of body.
  in_.clear();
  size_t header_end = std::string::npos, need = 0;
  char buf[65536];
  while (true) {
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n <= 0) {
      *response = n == 0 ? "connection closed" : std::string("recv: ") + std::strerror(errno);
      return -1;
    }
    in_.append(buf, static_cast<size_t>(n));
    if (header_end == std::string::npos) {
      header_end = in_.find("\r\n\r\n");
      if (header_end == std::string::npos) continue;
      const std::string_view head(in_.data(), header_end);
      size_t at = std::string_view::npos;
      for (size_t p = head.find("\r\n"); p != std::string_view::npos;
           p = head.find("\r\n", p + 2)) {
        if (strncasecmp(head.data() + p + 2, "Content-Length:", 15) == 0) {
          at = p + 17;
          break;
        }
      }
      if (at == std::string_view::npos) {
        *response = "response without Content-Length";
        return -1;
      }
      need = header_end + 4 + std::strtoull(head.data() + at, nullptr, 10);
    }
    if (in_.size() >= need) break;
  }
  const int status = std::atoi(in_.c_str() + 9);  // "HTTP/1.1 200"
  response->assign(in_, header_end + 4, need - header_end - 4);
  return status;
}

}  // namespace vgpu::k8s::bench
