// DevicePluginService: the kubelet-facing gRPC service (device plugin API v1beta1). A thin layer
// over NodeState (the unit list and its health) and Allocator (preferences and allocations).
//
// ListAndWatch sends the full unit list at once and again after every change of NodeState's
// version; the stream ends when kubelet cancels it or Stop() is called (a server restart).
//
// With a `mig_profile` ("1g.18gb+me") the service serves NVIDIA's MIG resource of that profile
// instead of the GPU units: its devices are the instances of that profile on GPUs in mode mig
// (NodeState::MigDevices, by MIG UUID), and preferences and allocations go to
// Allocator::PreferMig / AllocateMig.
#pragma once

#include <atomic>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "node/node_state.h"
#include "node/plugin/allocator.h"

namespace vgpu::node {

class DevicePluginService final : public v1beta1::DevicePlugin::Service {
 public:
  DevicePluginService(NodeState* state, Allocator* allocator, bool pre_start_required,
                      std::string mig_profile = "");

  // Ends open ListAndWatch streams within ~0.5 s.
  void Stop();
  int open_streams() const { return open_streams_.load(); }

  grpc::Status GetDevicePluginOptions(grpc::ServerContext* context, const v1beta1::Empty* request,
                                      v1beta1::DevicePluginOptions* response) override;
  grpc::Status ListAndWatch(grpc::ServerContext* context, const v1beta1::Empty* request,
                            grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) override;
  grpc::Status GetPreferredAllocation(grpc::ServerContext* context,
                                      const v1beta1::PreferredAllocationRequest* request,
                                      v1beta1::PreferredAllocationResponse* response) override;
  grpc::Status Allocate(grpc::ServerContext* context, const v1beta1::AllocateRequest* request,
                        v1beta1::AllocateResponse* response) override;
  grpc::Status PreStartContainer(grpc::ServerContext* context,
                                 const v1beta1::PreStartContainerRequest* request,
                                 v1beta1::PreStartContainerResponse* response) override;

 private:
  void FillList(v1beta1::ListAndWatchResponse* response) const;

  NodeState* state_;
  Allocator* allocator_;
  const bool pre_start_required_;
  const std::string mig_profile_;
  std::atomic<bool> stopping_{false};
  std::atomic<int> open_streams_{0};
};

// Converts a vgpu Status into a gRPC status with the same meaning.
grpc::Status ToGrpc(const Status& status);

}  // namespace vgpu::node
