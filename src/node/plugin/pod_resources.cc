#include "node/plugin/pod_resources.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>

#include "podresources/v1/api.grpc.pb.h"

namespace vgpu::node {
namespace {

class KubeletPodResources final : public PodResourcesSource {
 public:
  explicit KubeletPodResources(std::string socket_path) : path_(std::move(socket_path)) {
    channel_ = grpc::CreateChannel("unix://" + path_, grpc::InsecureChannelCredentials());
    stub_ = v1::PodResourcesLister::NewStub(channel_);
  }

  Result<std::vector<DeviceHolding>> List(const std::string& resource_name) override {
    v1::ListPodResourcesRequest request;
    v1::ListPodResourcesResponse response;
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(3));
    grpc::Status s = stub_->List(&ctx, request, &response);
    if (!s.ok()) {
      return Status::Unavailable("kubelet PodResources at " + path_ + ": " + s.error_message());
    }
    std::vector<DeviceHolding> out;
    for (const auto& pod : response.pod_resources()) {
      for (const auto& c : pod.containers()) {
        for (const auto& d : c.devices()) {
          if (d.resource_name() != resource_name) continue;
          DeviceHolding h;
          h.ns = pod.namespace_();
          h.pod = pod.name();
          h.container = c.name();
          h.device_ids.assign(d.device_ids().begin(), d.device_ids().end());
          std::sort(h.device_ids.begin(), h.device_ids.end());
          out.push_back(std::move(h));
        }
      }
    }
    return out;
  }

 private:
  const std::string path_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::PodResourcesLister::Stub> stub_;
};

}  // namespace

std::unique_ptr<PodResourcesSource> NewKubeletPodResources(const std::string& socket_path) {
  return std::make_unique<KubeletPodResources>(socket_path);
}

}  // namespace vgpu::node
