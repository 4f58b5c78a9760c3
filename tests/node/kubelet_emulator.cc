#include "kubelet_emulator.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace vgpu::testing {

class KubeletEmulator::RegistrationService final : public v1beta1::Registration::Service {
 public:
  explicit RegistrationService(KubeletEmulator* owner) : owner_(owner) {}
  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                        v1beta1::Empty*) override {
    if (request->version() != "v1beta1") {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          "unsupported API version " + request->version());
    }
    // kubelet answers first and connects to the plugin afterwards.
    v1beta1::RegisterRequest copy = *request;
    std::lock_guard<std::mutex> lock(owner_->mu_);
    owner_->pending_.emplace_back([o = owner_, copy] { o->OnRegistered(copy); });
    return grpc::Status::OK;
  }

 private:
  KubeletEmulator* owner_;
};

class KubeletEmulator::PodResourcesService final : public v1::PodResourcesLister::Service {
 public:
  explicit PodResourcesService(KubeletEmulator* owner) : owner_(owner) {}
  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override {
    std::lock_guard<std::mutex> lock(owner_->mu_);
    for (const Holding& h : owner_->holdings_) {
      v1::PodResources* pod = response->add_pod_resources();
      pod->set_name(h.pod);
      pod->set_namespace_(h.ns);
      v1::ContainerResources* c = pod->add_containers();
      c->set_name(h.container);
      v1::ContainerDevices* d = c->add_devices();
      d->set_resource_name(h.resource);
      for (const auto& id : h.ids) d->add_device_ids(id);
    }
    return grpc::Status::OK;
  }

 private:
  KubeletEmulator* owner_;
};

KubeletEmulator::KubeletEmulator(std::string dir) : dir_(std::move(dir)) {}

KubeletEmulator::~KubeletEmulator() { Stop(false); }

bool KubeletEmulator::Start() {
  std::filesystem::create_directories(dir_);
  const std::string sock = dir_ + "/kubelet.sock";
  ::unlink(sock.c_str());
  service_ = std::make_unique<RegistrationService>(this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + sock, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!pod_resources_server_) {
    ::unlink(pod_resources_socket().c_str());
    pod_resources_service_ = std::make_unique<PodResourcesService>(this);
    grpc::ServerBuilder pr;
    pr.AddListeningPort("unix://" + pod_resources_socket(), grpc::InsecureServerCredentials());
    pr.RegisterService(pod_resources_service_.get());
    pod_resources_server_ = pr.BuildAndStart();
  }
  return server_ != nullptr && pod_resources_server_ != nullptr;
}

void KubeletEmulator::Disconnect(const std::string& resource) {
  std::thread reader;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = plugins_.find(resource);
    if (it == plugins_.end()) return;
    if (it->second->stream_context) it->second->stream_context->TryCancel();
    reader = std::move(it->second->reader);
  }
  if (reader.joinable()) reader.join();
  std::lock_guard<std::mutex> lock(mu_);
  plugins_[resource]->stream_context.reset();
}

const KubeletEmulator::Plugin* KubeletEmulator::FindLocked(const std::string& resource) const {
  auto it = plugins_.find(resource.empty() ? last_.resource_name() : resource);
  return it == plugins_.end() ? nullptr : it->second.get();
}

void KubeletEmulator::Stop(bool wipe) {
  if (!wipe && pod_resources_server_) {
    pod_resources_server_->Shutdown(std::chrono::system_clock::now());
    pod_resources_server_.reset();
  }
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_.reset();
  }
  service_.reset();
  std::vector<std::thread> pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending.swap(pending_);
  }
  for (std::thread& t : pending) t.join();
  std::vector<std::string> resources;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [r, p] : plugins_) resources.push_back(r);
  }
  for (const std::string& r : resources) Disconnect(r);
  std::error_code ec;
  ::unlink((dir_ + "/kubelet.sock").c_str());
  if (wipe) {
    for (const auto& e : std::filesystem::directory_iterator(dir_, ec)) {
      if (e.is_socket(ec) && e.path() != pod_resources_socket()) {
        std::filesystem::remove(e.path(), ec);
      }
    }
  }
}

bool KubeletEmulator::Restart() {
  Stop(true);
  return Start();
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> KubeletEmulator::NewStub(
    const std::string& resource) const {
  std::string endpoint;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (const Plugin* p = FindLocked(resource)) endpoint = p->endpoint;
  }
  auto channel =
      grpc::CreateChannel("unix://" + dir_ + "/" + endpoint, grpc::InsecureChannelCredentials());
  return v1beta1::DevicePlugin::NewStub(channel);
}

void KubeletEmulator::OnRegistered(const v1beta1::RegisterRequest& request) {
  const std::string resource = request.resource_name();
  Disconnect(resource);  // a new registration replaces the old connection, as in kubelet
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_ = request;
    std::unique_ptr<Plugin>& p = plugins_[resource];
    if (!p) p = std::make_unique<Plugin>();
    p->endpoint = request.endpoint();
  }
  auto stub = NewStub(resource);
  v1beta1::DevicePluginOptions options;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1beta1::Empty empty;
    stub->GetDevicePluginOptions(&ctx, empty, &options);
  }
  std::shared_ptr<v1beta1::DevicePlugin::Stub> shared(std::move(stub));
  std::lock_guard<std::mutex> lock(mu_);
  Plugin* p = plugins_[resource].get();
  p->options = options;
  p->stream_context = std::make_unique<grpc::ClientContext>();
  grpc::ClientContext* ctx = p->stream_context.get();
  p->streaming = true;
  p->reader = std::thread([this, shared, ctx, p] {
    v1beta1::Empty empty;
    auto reader = shared->ListAndWatch(ctx, empty);
    v1beta1::ListAndWatchResponse response;
    while (reader->Read(&response)) {
      std::lock_guard<std::mutex> lock(mu_);
      p->devices.assign(response.devices().begin(), response.devices().end());
      ++lists_;
      cv_.notify_all();
    }
    reader->Finish();
    std::lock_guard<std::mutex> lock(mu_);
    p->streaming = false;
    cv_.notify_all();
  });
  ++p->registrations;
  ++registrations_;
  cv_.notify_all();
}

int KubeletEmulator::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

v1beta1::RegisterRequest KubeletEmulator::last_registration() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

v1beta1::DevicePluginOptions KubeletEmulator::plugin_options() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Plugin* p = FindLocked("");
  return p ? p->options : v1beta1::DevicePluginOptions();
}

std::vector<std::string> KubeletEmulator::resources() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> out;
  for (const auto& [r, p] : plugins_) out.push_back(r);
  return out;
}

int KubeletEmulator::registrations(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = plugins_.find(resource);
  return it == plugins_.end() ? 0 : it->second->registrations;
}

bool KubeletEmulator::WaitForRegistrations(int n, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return registrations_ >= n; });
}

std::vector<v1beta1::Device> KubeletEmulator::devices() const { return devices(""); }

std::vector<v1beta1::Device> KubeletEmulator::devices(const std::string& resource) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Plugin* p = FindLocked(resource);
  return p ? p->devices : std::vector<v1beta1::Device>();
}

int KubeletEmulator::lists() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lists_;
}

bool KubeletEmulator::streaming() const {
  std::lock_guard<std::mutex> lock(mu_);
  const Plugin* p = FindLocked("");
  return p != nullptr && p->streaming;
}

bool KubeletEmulator::WaitForDevices(
    const std::function<bool(const std::vector<v1beta1::Device>&)>& pred, int timeout_ms) const {
  return WaitForDevices("", pred, timeout_ms);
}

bool KubeletEmulator::WaitForDevices(
    const std::string& resource,
    const std::function<bool(const std::vector<v1beta1::Device>&)>& pred, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
    const Plugin* p = FindLocked(resource);
    return pred(p ? p->devices : std::vector<v1beta1::Device>());
  });
}

grpc::Status KubeletEmulator::GetPreferredAllocation(const std::string& resource,
                                                     const std::vector<std::string>& available,
                                                     int size, std::vector<std::string>* out) {
  return Prefer(resource, available, {}, size, out);
}

grpc::Status KubeletEmulator::GetPreferredAllocation(const std::vector<std::string>& available,
                                                     const std::vector<std::string>& must_include,
                                                     int size, std::vector<std::string>* out) {
  return Prefer("", available, must_include, size, out);
}

grpc::Status KubeletEmulator::Prefer(const std::string& resource,
                                     const std::vector<std::string>& available,
                                     const std::vector<std::string>& must_include, int size,
                                     std::vector<std::string>* out) {
  v1beta1::PreferredAllocationRequest request;
  auto* c = request.add_container_requests();
  for (const auto& id : available) c->add_available_deviceids(id);
  for (const auto& id : must_include) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = NewStub(resource)->GetPreferredAllocation(&ctx, request, &response);
  out->clear();
  if (s.ok() && response.container_responses_size() == 1) {
    for (const auto& id : response.container_responses(0).deviceids()) out->push_back(id);
  }
  return s;
}

grpc::Status KubeletEmulator::Allocate(const std::vector<std::string>& ids,
                                       v1beta1::ContainerAllocateResponse* out) {
  return AllocateOn("", ids, out);
}

grpc::Status KubeletEmulator::AllocateResource(const std::string& resource,
                                               const std::vector<std::string>& ids,
                                               v1beta1::ContainerAllocateResponse* out) {
  return AllocateOn(resource, ids, out);
}

grpc::Status KubeletEmulator::AllocateOn(const std::string& resource,
                                         const std::vector<std::string>& ids,
                                         v1beta1::ContainerAllocateResponse* out) {
  v1beta1::AllocateRequest request;
  auto* c = request.add_container_requests();
  for (const auto& id : ids) c->add_devices_ids(id);
  v1beta1::AllocateResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  grpc::Status s = NewStub(resource)->Allocate(&ctx, request, &response);
  if (s.ok() && response.container_responses_size() == 1) *out = response.container_responses(0);
  return s;
}

grpc::Status KubeletEmulator::Allocate(const std::string& ns, const std::string& pod,
                                       const std::string& container,
                                       const std::vector<std::string>& ids,
                                       v1beta1::ContainerAllocateResponse* out) {
  grpc::Status s = Allocate(ids, out);
  if (s.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    holdings_.push_back({ns, pod, container, last_.resource_name(), ids});
  }
  return s;
}

grpc::Status KubeletEmulator::PreStartContainer(const std::vector<std::string>& ids) {
  v1beta1::PreStartContainerRequest request;
  for (const auto& id : ids) request.add_devices_ids(id);
  v1beta1::PreStartContainerResponse response;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  return NewStub()->PreStartContainer(&ctx, request, &response);
}

}  // namespace vgpu::testing
