#include "dra/plugin_server.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "common/log.h"
#include "dra/v1/api.grpc.pb.h"
#include "dra/v1beta1/api.grpc.pb.h"
#include "pluginregistration/v1/api.grpc.pb.h"

namespace vgpu::dra {

namespace drapb = ::k8s::io::kubelet::pkg::apis::dra::v1;
namespace drapb_v1beta1 = ::k8s::io::kubelet::pkg::apis::dra::v1beta1;
namespace regpb = pluginregistration;

namespace {

bool IsSocket(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

}  // namespace

class PluginServer::RegistrationService final : public regpb::Registration::Service {
 public:
  RegistrationService(PluginServer* owner, std::string driver, std::string endpoint)
      : owner_(owner), driver_(std::move(driver)), endpoint_(std::move(endpoint)) {}
  grpc::Status GetInfo(grpc::ServerContext*, const regpb::InfoRequest*,
                       regpb::PluginInfo* info) override {
    info->set_type("DRAPlugin");
    info->set_name(driver_);
    info->set_endpoint(endpoint_);
    info->add_supported_versions("v1.DRAPlugin");
    info->add_supported_versions("v1beta1.DRAPlugin");
    owner_->CountInfo();
    return grpc::Status::OK;
  }
  grpc::Status NotifyRegistrationStatus(grpc::ServerContext*, const regpb::RegistrationStatus* s,
                                        regpb::RegistrationStatusResponse*) override {
    if (s->plugin_registered()) {
      VGPU_LOG_INFO("kubelet registered DRA driver %s", driver_.c_str());
    } else {
      VGPU_LOG_WARN("kubelet did not register DRA driver %s: %s", driver_.c_str(),
                    s->error().c_str());
    }
    owner_->CountRegistration(s->plugin_registered());
    return grpc::Status::OK;
  }

 private:
  PluginServer* owner_;
  const std::string driver_;
  const std::string endpoint_;
};

namespace {

// DRAPlugin of one API version (both have v1's messages, dra/v1beta1/api.proto).
template <typename Base>
class DraServiceOf final : public Base {
 public:
  explicit DraServiceOf(Driver* driver) : driver_(driver) {}
  grpc::Status NodePrepareResources(grpc::ServerContext*,
                                    const drapb::NodePrepareResourcesRequest* request,
                                    drapb::NodePrepareResourcesResponse* response) override {
    std::vector<ClaimRef> refs;
    for (const auto& c : request->claims()) refs.push_back({c.namespace_(), c.uid(), c.name()});
    for (auto& [uid, r] : driver_->Prepare(refs)) {
      drapb::NodePrepareResourceResponse& out = (*response->mutable_claims())[uid];
      out.set_error(r.error);
      for (const PreparedDevice& d : r.devices) {
        drapb::Device* pd = out.add_devices();
        for (const std::string& q : d.requests) pd->add_request_names(q);
        pd->set_pool_name(d.pool);
        pd->set_device_name(d.device);
        for (const std::string& id : d.cdi_ids) pd->add_cdi_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }
  grpc::Status NodeUnprepareResources(grpc::ServerContext*,
                                      const drapb::NodeUnprepareResourcesRequest* request,
                                      drapb::NodeUnprepareResourcesResponse* response) override {
    std::vector<ClaimRef> refs;
    for (const auto& c : request->claims()) refs.push_back({c.namespace_(), c.uid(), c.name()});
    for (auto& [uid, error] : driver_->Unprepare(refs)) {
      (*response->mutable_claims())[uid].set_error(error);
    }
    return grpc::Status::OK;
  }

 private:
  Driver* driver_;
};

}  // namespace

class PluginServer::DraService {
 public:
  explicit DraService(Driver* driver) : v1(driver), v1beta1(driver) {}
  DraServiceOf<drapb::DRAPlugin::Service> v1;
  DraServiceOf<drapb_v1beta1::DRAPlugin::Service> v1beta1;
};

PluginServer::PluginServer(PluginServerOptions options, Driver* driver)
    : options_(std::move(options)), driver_(driver) {
  if (options_.plugin_dir.empty()) {
    options_.plugin_dir = "/var/lib/kubelet/plugins/" + driver_->options().driver;
  }
  if (options_.kubelet_endpoint.empty()) options_.kubelet_endpoint = dra_socket();
}

PluginServer::~PluginServer() { Stop(); }

std::string PluginServer::registration_socket() const {
  return options_.registry_dir + "/" + driver_->options().driver + "-reg.sock";
}

std::string PluginServer::dra_socket() const { return options_.plugin_dir + "/dra.sock"; }

Status PluginServer::StartServers() {
  std::error_code ec;
  for (const std::string& dir : {options_.registry_dir, options_.plugin_dir}) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return Status::Internal("create " + dir + ": " + ec.message());
  }
  if (!dra_) dra_ = std::make_unique<DraService>(driver_);
  if (!registration_) {
    registration_ = std::make_unique<RegistrationService>(this, driver_->options().driver,
                                                          options_.kubelet_endpoint);
  }
  // The DRA service first: kubelet connects to it as soon as it sees the registration socket.
  ::unlink(dra_socket().c_str());
  grpc::ServerBuilder dra_builder;
  dra_builder.AddListeningPort("unix://" + dra_socket(), grpc::InsecureServerCredentials());
  dra_builder.RegisterService(&dra_->v1);
  dra_builder.RegisterService(&dra_->v1beta1);
  dra_server_ = dra_builder.BuildAndStart();
  if (!dra_server_) return Status::Unavailable("cannot listen on " + dra_socket());
  ::unlink(registration_socket().c_str());
  grpc::ServerBuilder reg_builder;
  reg_builder.AddListeningPort("unix://" + registration_socket(),
                               grpc::InsecureServerCredentials());
  reg_builder.RegisterService(registration_.get());
  registration_server_ = reg_builder.BuildAndStart();
  if (!registration_server_) {
    dra_server_->Shutdown();
    dra_server_.reset();
    return Status::Unavailable("cannot listen on " + registration_socket());
  }
  server_starts_.fetch_add(1);
  return Status::Ok();
}

void PluginServer::StopServers() {
  if (registration_server_) registration_server_->Shutdown();
  if (dra_server_) dra_server_->Shutdown();
  registration_server_.reset();
  dra_server_.reset();
  ::unlink(registration_socket().c_str());
  ::unlink(dra_socket().c_str());
}

Status PluginServer::Start() {
  if (Status s = StartServers(); !s.ok()) return s;
  VGPU_LOG_INFO("DRA driver %s: registration %s, service %s", driver_->options().driver.c_str(),
                registration_socket().c_str(), dra_socket().c_str());
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void PluginServer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    cv_.wait_for(lock, std::chrono::milliseconds(options_.check_ms));
    if (stop_) break;
    if (IsSocket(registration_socket()) && IsSocket(dra_socket())) continue;
    VGPU_LOG_INFO("a DRA socket was removed (kubelet restart?): serving again");
    StopServers();
    if (Status s = StartServers(); !s.ok()) {
      VGPU_LOG_WARN("restarting the DRA servers: %s", s.ToString().c_str());
    }
  }
}

void PluginServer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mu_);
  StopServers();
}

}  // namespace vgpu::dra
