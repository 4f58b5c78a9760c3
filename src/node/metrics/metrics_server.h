// The daemon's small HTTP server (cpp-httplib):
//   GET  /metrics   Prometheus text format 0.0.4
//   GET  /healthz   200 while the daemon runs
//   GET  /readyz    200 once registered with kubelet, else 503 (with SetNotReadyReason: 503
//                   with the reason's text while it is not empty)
//   POST /sim/health  form or query parameters gpu=<uuid or index>,
//                   event=<xid|ecc-dbe|recovery-action|recovered|lost|found|stuck-kernel|
//                   unstuck>, code=N, and optionally pid=N (the process an XID is attributed
//                   to; for stuck-kernel the process whose next kernel never ends, else any),
//                   gi=N and ci=N (its MIG instance): fault injection, present only when an
//                   injector is set
//                   (vgpu node --sim). Send a body (curl -d ...): a POST without
//                   Content-Length is not answered.
// Serves on its own threads; Stop() returns after the listener closed.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/result.h"

namespace httplib {
class Server;
}

namespace vgpu::node {

class MetricsServer {
 public:
  struct InjectRequest {
    std::string gpu;
    std::string event;
    uint64_t code = 0;
    uint32_t pid = 0;
    uint32_t gpu_instance = 0xFFFFFFFFu;
    uint32_t compute_instance = 0xFFFFFFFFu;
  };
  using Injector = std::function<Status(const InjectRequest& request)>;

  MetricsServer(std::function<std::string()> metrics, std::function<bool()> ready);
  ~MetricsServer();

  void SetInjector(Injector injector);
  // Replaces `ready`: "" when ready, else why not (the 503's body). Call before Start().
  void SetNotReadyReason(std::function<std::string()> why_not);
  // `listen` is "host:port" or ":port" (all interfaces); port 0 picks a free port.
  Status Start(const std::string& listen);
  int port() const { return port_; }
  void Stop();

 private:
  std::function<std::string()> metrics_;
  std::function<bool()> ready_;
  std::function<std::string()> why_not_ready_;
  Injector injector_;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

// Splits "host:port" / ":port" / "[v6]:port"; kInvalidArgument with the reason.
Status ParseListenAddress(const std::string& listen, std::string* host, int* port);

}  // namespace vgpu::node
