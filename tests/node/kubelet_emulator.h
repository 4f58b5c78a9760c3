// KubeletEmulator: the kubelet side of the device plugin API v1beta1, for tests. A real gRPC
// Registration server on <dir>/kubelet.sock and a real DevicePlugin client, over unix sockets,
// with the generated v1beta1 messages:
//   - Register() records the request and, like kubelet, then connects to the plugin's endpoint,
//     asks GetDevicePluginOptions and keeps a ListAndWatch stream open, recording every list;
//   - Restart() behaves like a kubelet restart: the server stops, kubelet.sock and the plugin
//     sockets in the directory are deleted, and a new server creates kubelet.sock again;
//   - GetPreferredAllocation() and Allocate() call the plugin as kubelet's device manager does;
//     an Allocate for a named pod and container records the devices it got, which the
//     emulator's PodResources server (List, on <dir>/pod-resources.sock) reports, as kubelet's
//     does.
// Each resource name has its own plugin connection, as in kubelet: a registration replaces the
// connection of its resource only. The calls without a resource name use the resource of the
// latest registration; those with one use that resource's plugin.
// Thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "podresources/v1/api.grpc.pb.h"

namespace vgpu::testing {

class KubeletEmulator {
 public:
  explicit KubeletEmulator(std::string dir);
  ~KubeletEmulator();

  bool Start();
  // Stops serving; with `wipe`, deletes every socket in the directory, as a starting kubelet does.
  void Stop(bool wipe);
  bool Restart();

  int registrations() const;
  v1beta1::RegisterRequest last_registration() const;
  v1beta1::DevicePluginOptions plugin_options() const;
  bool WaitForRegistrations(int n, int timeout_ms) const;

  // The latest device list from ListAndWatch, and how many lists arrived (all streams).
  std::vector<v1beta1::Device> devices() const;
  std::vector<v1beta1::Device> devices(const std::string& resource) const;
  int lists() const;
  // Waits until `pred(devices())` holds.
  bool WaitForDevices(const std::function<bool(const std::vector<v1beta1::Device>&)>& pred,
                      int timeout_ms) const;
  bool WaitForDevices(const std::string& resource,
                      const std::function<bool(const std::vector<v1beta1::Device>&)>& pred,
                      int timeout_ms) const;
  // True while a ListAndWatch stream is open.
  bool streaming() const;
  // The resource names registered so far (sorted), and how many registrations each had.
  std::vector<std::string> resources() const;
  int registrations(const std::string& resource) const;

  grpc::Status GetPreferredAllocation(const std::vector<std::string>& available,
                                      const std::vector<std::string>& must_include, int size,
                                      std::vector<std::string>* out);
  grpc::Status Allocate(const std::vector<std::string>& ids,
                        v1beta1::ContainerAllocateResponse* out);
  // The same, for container `container` of pod `ns`/`pod`: recorded for PodResources on success.
  grpc::Status Allocate(const std::string& ns, const std::string& pod, const std::string& container,
                        const std::vector<std::string>& ids,
                        v1beta1::ContainerAllocateResponse* out);
  std::string pod_resources_socket() const { return dir_ + "/pod-resources.sock"; }
  grpc::Status PreStartContainer(const std::vector<std::string>& ids);
  // The same calls to the plugin of `resource`.
  grpc::Status GetPreferredAllocation(const std::string& resource,
                                      const std::vector<std::string>& available, int size,
                                      std::vector<std::string>* out);
  grpc::Status AllocateResource(const std::string& resource, const std::vector<std::string>& ids,
                                v1beta1::ContainerAllocateResponse* out);

 private:
  class RegistrationService;
  class PodResourcesService;
  // One registered plugin (by resource name).
  struct Plugin {
    std::string endpoint;
    v1beta1::DevicePluginOptions options;
    std::vector<v1beta1::Device> devices;
    int registrations = 0;
    bool streaming = false;
    std::unique_ptr<grpc::ClientContext> stream_context;
    std::thread reader;
  };
  void OnRegistered(const v1beta1::RegisterRequest& request);
  void Disconnect(const std::string& resource);
  // Plugin of `resource`, or of the latest registration when empty; mu_ held. Null if none.
  const Plugin* FindLocked(const std::string& resource) const;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> NewStub(const std::string& resource = "") const;
  grpc::Status Prefer(const std::string& resource, const std::vector<std::string>& available,
                      const std::vector<std::string>& must_include, int size,
                      std::vector<std::string>* out);
  grpc::Status AllocateOn(const std::string& resource, const std::vector<std::string>& ids,
                          v1beta1::ContainerAllocateResponse* out);

  const std::string dir_;
  std::unique_ptr<RegistrationService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<PodResourcesService> pod_resources_service_;
  std::unique_ptr<grpc::Server> pod_resources_server_;
  struct Holding {
    std::string ns, pod, container, resource;
    std::vector<std::string> ids;
  };
  std::vector<Holding> holdings_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int registrations_ = 0;
  v1beta1::RegisterRequest last_;
  std::map<std::string, std::unique_ptr<Plugin>> plugins_;  // by resource name
  int lists_ = 0;
  std::vector<std::thread> pending_;  // connections after Register, joined by Stop()
};

}  // namespace vgpu::testing
