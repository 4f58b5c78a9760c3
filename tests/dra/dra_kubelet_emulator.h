// DraKubeletEmulator: the kubelet side of DRA for tests, with the real messages over unix
// sockets: a plugin watcher that scans <registry dir> for sockets (every 50 ms), calls
// pluginregistration GetInfo on each new one, checks the type and version, connects to the
// endpoint and answers NotifyRegistrationStatus; and NodePrepareResources /
// NodeUnprepareResources calls on the registered driver, as kubelet's DRA manager makes them.
// Restart() behaves like a kubelet restart: the watcher forgets every plugin (and with `wipe`
// deletes the sockets in the registry directory), then scans again. Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dra/v1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace vgpu::testing {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;

class DraKubeletEmulator {
 public:
  explicit DraKubeletEmulator(std::string registry_dir);
  ~DraKubeletEmulator();

  void Start();
  void Stop();
  void Restart(bool wipe);

  int registrations() const;
  bool WaitForRegistrations(int n, int timeout_ms) const;
  pluginregistration::PluginInfo last_info() const;

  struct ClaimArg {
    std::string ns, uid, name;
  };
  grpc::Status Prepare(const std::vector<ClaimArg>& claims,
                       drapb::NodePrepareResourcesResponse* out);
  grpc::Status Unprepare(const std::vector<ClaimArg>& claims,
                         drapb::NodeUnprepareResourcesResponse* out);

 private:
  void Loop();
  void Register(const std::string& socket, const std::string& id);
  std::unique_ptr<drapb::DRAPlugin::Stub> Stub() const;  // nullptr: none registered

  const std::string dir_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool running_ = false;
  std::thread thread_;
  std::map<std::string, std::string> known_;  // registration socket -> inode:ctime
  int registrations_ = 0;
  pluginregistration::PluginInfo last_info_;
  std::string endpoint_;
};

}  // namespace vgpu::testing
