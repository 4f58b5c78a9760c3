// PluginServer: the vgpu DRA driver as kubelet sees it, over unix sockets.
//
//   <registry_dir>/<driver>-reg.sock   pluginregistration.Registration: GetInfo answers
//                                      {type DRAPlugin, name <driver>, endpoint <dra.sock as
//                                      kubelet sees it>, versions [v1.DRAPlugin,
//                                      v1beta1.DRAPlugin]};
//                                      NotifyRegistrationStatus is recorded and logged
//   <plugin_dir>/dra.sock              k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin and
//                                      k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin (the
//                                      same calls and messages; kubelet picks v1 when it has it)
//
// kubelet's plugin watcher finds the registration socket, calls GetInfo and connects to the
// endpoint. After a kubelet restart it does so again for every socket it finds; a socket that
// was deleted (a kubelet or an operator cleaning the directories) is noticed within
// `check_ms` and served again on a fresh socket, so kubelet registers the driver anew.
// Start() returns once both sockets listen. Stop() removes them. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common/result.h"
#include "dra/driver.h"

namespace grpc {
class Server;
}

namespace vgpu::dra {

struct PluginServerOptions {
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string plugin_dir{};        // default /var/lib/kubelet/plugins/<driver>
  std::string kubelet_endpoint{};  // dra.sock's path as kubelet sees it; default its own path
  int check_ms = 500;
};

class PluginServer {
 public:
  PluginServer(PluginServerOptions options, Driver* driver);
  ~PluginServer();

  Status Start();
  void Stop();

  std::string registration_socket() const;
  std::string dra_socket() const;
  // GetInfo calls answered, registrations kubelet confirmed, and server (re)starts.
  uint64_t info_calls() const { return info_calls_.load(); }
  uint64_t registrations() const { return registrations_.load(); }
  uint64_t server_starts() const { return server_starts_.load(); }
  void CountInfo() { info_calls_.fetch_add(1); }
  void CountRegistration(bool ok) {
    if (ok) registrations_.fetch_add(1);
  }

 private:
  class RegistrationService;
  class DraService;
  Status StartServers();
  void StopServers();
  void Loop();

  PluginServerOptions options_;
  Driver* driver_;
  std::unique_ptr<RegistrationService> registration_;
  std::unique_ptr<DraService> dra_;
  std::unique_ptr<grpc::Server> registration_server_;
  std::unique_ptr<grpc::Server> dra_server_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::atomic<uint64_t> info_calls_{0};
  std::atomic<uint64_t> registrations_{0};
  std::atomic<uint64_t> server_starts_{0};
};

}  // namespace vgpu::dra
