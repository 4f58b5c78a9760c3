#include "k8s/api/listen_address.h"

#include <cstdlib>

namespace vgpu::k8s {

Result<HostPort> ParseListenAddress(const std::string& text) {
  HostPort hp;
  std::string port;
  if (text.starts_with("[")) {
    const size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidArgument("'" + text + "' is not host:port");
    }
    hp.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string::npos)
      return Status::InvalidArgument("'" + text + "' is not host:port");
    hp.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  if (hp.host.empty()) hp.host = "0.0.0.0";
  char* end = nullptr;
  const long p = std::strtol(port.c_str(), &end, 10);
  if (port.empty() || *end != '\0' || p < 0 || p > 65535) {
    return Status::InvalidArgument("'" + text + "' has a bad port");
  }
  hp.port = static_cast<int>(p);
  return hp;
}

}  // namespace vgpu::k8s
