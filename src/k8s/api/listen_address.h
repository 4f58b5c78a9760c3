// The address an HTTP(S) server of the scheduler side listens on (the extender, its metrics, the
// webhook), as a flag gives it.
//
// Contract: ParseListenAddress accepts "host:port", ":port" (all interfaces, host 0.0.0.0) and
// "[v6]:port"; port 0 means any free port. Anything else is kInvalidArgument naming the text.
#pragma once

#include <string>

#include "common/result.h"

namespace vgpu::k8s {

struct HostPort {
  std::string host;
  int port = 0;
};
// "host:port", ":port" (all interfaces), "[v6]:port". Port 0 = any free port.
Result<HostPort> ParseListenAddress(const std::string& text);

}  // namespace vgpu::k8s
