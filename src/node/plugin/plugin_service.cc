#include "node/plugin/plugin_service.h"

#include "common/log.h"

namespace vgpu::node {

grpc::Status ToGrpc(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return grpc::Status::OK;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange:
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, status.message());
    case StatusCode::kNotFound:
      return grpc::Status(grpc::StatusCode::NOT_FOUND, status.message());
    case StatusCode::kFailedPrecondition:
      return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, status.message());
    case StatusCode::kUnavailable:
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, status.message());
    case StatusCode::kResourceExhausted:
      return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, status.message());
    case StatusCode::kDeadlineExceeded:
      return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, status.message());
    default:
      return grpc::Status(grpc::StatusCode::INTERNAL, status.ToString());
  }
}

DevicePluginService::DevicePluginService(NodeState* state, Allocator* allocator,
                                         bool pre_start_required, std::string mig_profile)
    : state_(state),
      allocator_(allocator),
      pre_start_required_(pre_start_required),
      mig_profile_(std::move(mig_profile)) {}

void DevicePluginService::Stop() { stopping_.store(true); }

grpc::Status DevicePluginService::GetDevicePluginOptions(grpc::ServerContext*,
                                                         const v1beta1::Empty*,
                                                         v1beta1::DevicePluginOptions* response) {
  response->set_pre_start_required(pre_start_required_);
  response->set_get_preferred_allocation_available(true);
  return grpc::Status::OK;
}

void DevicePluginService::FillList(v1beta1::ListAndWatchResponse* response) const {
  for (const UnitView& u :
       mig_profile_.empty() ? state_->Units() : state_->MigDevices(mig_profile_)) {
    v1beta1::Device* d = response->add_devices();
    d->set_id(u.id);
    d->set_health(u.healthy ? "Healthy" : "Unhealthy");
    if (u.numa_node >= 0) d->mutable_topology()->add_nodes()->set_id(u.numa_node);
  }
}

grpc::Status DevicePluginService::ListAndWatch(
    grpc::ServerContext* context, const v1beta1::Empty*,
    grpc::ServerWriter<v1beta1::ListAndWatchResponse>* writer) {
  open_streams_.fetch_add(1);
  uint64_t version = state_->version();
  v1beta1::ListAndWatchResponse list;
  FillList(&list);
  bool ok = writer->Write(list);
  while (ok && !context->IsCancelled() && !stopping_.load() && !state_->stopped()) {
    uint64_t now = state_->WaitForChange(version, 500);
    if (now == version) continue;
    version = now;
    list.Clear();
    FillList(&list);
    ok = writer->Write(list);
  }
  open_streams_.fetch_sub(1);
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::GetPreferredAllocation(
    grpc::ServerContext*, const v1beta1::PreferredAllocationRequest* request,
    v1beta1::PreferredAllocationResponse* response) {
  for (const auto& c : request->container_requests()) {
    std::vector<std::string> available(c.available_deviceids().begin(),
                                       c.available_deviceids().end());
    std::vector<std::string> must(c.must_include_deviceids().begin(),
                                  c.must_include_deviceids().end());
    if (c.allocation_size() < 0 || c.allocation_size() > 64) {
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "allocation_size " + std::to_string(c.allocation_size()) + " is out of range");
    }
    auto* out = response->add_container_responses();
    for (const std::string& id :
         mig_profile_.empty() ? allocator_->Prefer(available, must, c.allocation_size())
                              : allocator_->PreferMig(available, must, c.allocation_size())) {
      out->add_deviceids(id);
    }
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::Allocate(grpc::ServerContext*,
                                           const v1beta1::AllocateRequest* request,
                                           v1beta1::AllocateResponse* response) {
  for (const auto& c : request->container_requests()) {
    std::vector<std::string> ids(c.devices_ids().begin(), c.devices_ids().end());
    auto allocation =
        mig_profile_.empty() ? allocator_->Allocate(ids) : allocator_->AllocateMig(ids);
    if (!allocation) return ToGrpc(allocation.error());
    auto* out = response->add_container_responses();
    for (const auto& [k, v] : allocation->envs) (*out->mutable_envs())[k] = v;
    for (const auto& [k, v] : allocation->annotations) (*out->mutable_annotations())[k] = v;
    for (const ContainerAllocation::Mount& m : allocation->mounts) {
      v1beta1::Mount* pm = out->add_mounts();
      pm->set_container_path(m.container_path);
      pm->set_host_path(m.host_path);
      pm->set_read_only(m.read_only);
    }
    for (const std::string& name : allocation->cdi_devices) out->add_cdi_devices()->set_name(name);
    for (const ContainerAllocation::DeviceNode& d : allocation->devices) {
      v1beta1::DeviceSpec* spec = out->add_devices();
      spec->set_container_path(d.container_path);
      spec->set_host_path(d.host_path);
      spec->set_permissions(d.permissions);
    }
  }
  return grpc::Status::OK;
}

grpc::Status DevicePluginService::PreStartContainer(
    grpc::ServerContext*, const v1beta1::PreStartContainerRequest* request,
    v1beta1::PreStartContainerResponse*) {
  std::vector<std::string> ids(request->devices_ids().begin(), request->devices_ids().end());
  return ToGrpc(allocator_->VerifyPreStart(ids));
}

}  // namespace vgpu::node
