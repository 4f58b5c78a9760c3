// PluginRunner: the device plugin's life with kubelet.
//
//   1. serve DevicePluginService on <kubelet dir>/<endpoint> (a unix socket);
//   2. register with kubelet through <kubelet dir>/kubelet.sock (Registration.Register, API
//      version v1beta1, resource name, options), retrying until kubelet answers;
//   3. watch the directory (inotify, plus a check every 500 ms in case an event is missed):
//      when kubelet.sock is created again (kubelet restarted) or our own socket disappears
//      (kubelet removes plugin sockets when it starts), restart the server on a fresh socket and
//      register again.
//   4. log once (a warning naming the path) when kubelet.sock is missing, at startup or later,
//      and once when it is back.
//
// Start() returns once the server listens; registration happens on the runner's thread.
// Stop() ends the thread, the streams and the server, and removes the socket. Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "node/node_state.h"
#include "node/plugin/allocator.h"

namespace grpc {
class Server;
}

namespace vgpu::node {

class DevicePluginService;

struct PluginOptions {
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string endpoint = "vgpu.sock";  // socket file name inside kubelet_dir
  std::string resource_name = "nvidia.com/gpu";
  bool pre_start_required = false;
  int retry_ms = 1000;  // between failed registrations
  // Non-empty: serve NVIDIA's MIG resource of this profile (DevicePluginService) rather than
  // the GPU units; resource_name and endpoint then name that resource (MigPluginOptions).
  std::string mig_profile;
};

// The options of the plugin serving NVIDIA's MIG resource of `profile` beside the units plugin
// `base`: resource "nvidia.com/mig-1g.18gb" ("+me" as ".me"), endpoint "<base
// stem>-mig-1g.18gb.sock" in the same directory, no PreStartContainer.
PluginOptions MigPluginOptions(const PluginOptions& base, const std::string& profile);

class PluginRunner {
 public:
  PluginRunner(PluginOptions options, NodeState* state, Allocator* allocator);
  ~PluginRunner();

  Status Start();
  void Stop();

  // Successful registrations so far (1 after startup, +1 per kubelet restart).
  uint64_t registrations() const { return registrations_.load(); }
  uint64_t server_starts() const { return server_starts_.load(); }
  bool registered() const { return registered_.load(); }
  std::string socket_path() const { return options_.kubelet_dir + "/" + options_.endpoint; }
  // Blocks until registrations() >= n or the timeout passes; returns whether it got there.
  bool WaitForRegistrations(uint64_t n, int timeout_ms) const;

 private:
  Status StartServer();
  void StopServer();
  Status Register();
  void Loop();

  const PluginOptions options_;
  NodeState* state_;
  Allocator* allocator_;
  std::unique_ptr<DevicePluginService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> registered_{false};
  std::atomic<uint64_t> registrations_{0};
  std::atomic<uint64_t> server_starts_{0};
  int inotify_fd_ = -1;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
};

}  // namespace vgpu::node
