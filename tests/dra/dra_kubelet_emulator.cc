#include "dra_kubelet_emulator.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>

namespace vgpu::testing {

namespace fs = std::filesystem;

DraKubeletEmulator::DraKubeletEmulator(std::string registry_dir) : dir_(std::move(registry_dir)) {}

DraKubeletEmulator::~DraKubeletEmulator() { Stop(); }

void DraKubeletEmulator::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (running_) return;
  running_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void DraKubeletEmulator::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!running_) return;
    running_ = false;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void DraKubeletEmulator::Restart(bool wipe) {
  Stop();
  {
    std::lock_guard<std::mutex> lock(mu_);
    known_.clear();
    endpoint_.clear();
  }
  if (wipe) {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      if (e.path().extension() == ".sock") fs::remove(e.path(), ec);
    }
  }
  Start();
}

void DraKubeletEmulator::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (running_) {
    std::vector<std::string> fresh;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      struct stat st;
      const std::string p = e.path().string();
      if (::stat(p.c_str(), &st) == 0 && S_ISSOCK(st.st_mode) && known_.count(p) == 0) {
        fresh.push_back(p);
      }
    }
    // A socket that went away is forgotten, so that a new one at the same path registers.
    for (auto it = known_.begin(); it != known_.end();) {
      it = fs::exists(it->first, ec) ? std::next(it) : known_.erase(it);
    }
    lock.unlock();
    for (const std::string& p : fresh) Register(p);
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void DraKubeletEmulator::Register(const std::string& socket) {
  auto channel = grpc::CreateChannel("unix://" + socket, grpc::InsecureChannelCredentials());
  auto stub = pluginregistration::Registration::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
  pluginregistration::PluginInfo info;
  if (!stub->GetInfo(&ctx, pluginregistration::InfoRequest(), &info).ok()) return;
  bool ok = info.type() == "DRAPlugin";
  bool v1 = false;
  for (const std::string& v : info.supported_versions()) v1 = v1 || v == "v1.DRAPlugin";
  ok = ok && v1 && fs::exists(info.endpoint());
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(ok);
  if (!ok) status.set_error("not a DRA plugin with v1.DRAPlugin and a live endpoint");
  grpc::ClientContext ctx2;
  pluginregistration::RegistrationStatusResponse resp;
  (void)stub->NotifyRegistrationStatus(&ctx2, status, &resp);
  std::lock_guard<std::mutex> lock(mu_);
  known_[socket] = info.endpoint();
  if (ok) {
    ++registrations_;
    last_info_ = info;
    endpoint_ = info.endpoint();
  }
  cv_.notify_all();
}

int DraKubeletEmulator::registrations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return registrations_;
}

bool DraKubeletEmulator::WaitForRegistrations(int n, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return registrations_ >= n; });
}

pluginregistration::PluginInfo DraKubeletEmulator::last_info() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_info_;
}

namespace {

template <typename Request>
void Fill(const std::vector<DraKubeletEmulator::ClaimArg>& claims, Request* r) {
  for (const auto& c : claims) {
    drapb::Claim* pc = r->add_claims();
    pc->set_namespace_(c.ns);
    pc->set_uid(c.uid);
    pc->set_name(c.name);
  }
}

}  // namespace

grpc::Status DraKubeletEmulator::Prepare(const std::vector<ClaimArg>& claims,
                                         drapb::NodePrepareResourcesResponse* out) {
  std::string endpoint;
  {
    std::lock_guard<std::mutex> lock(mu_);
    endpoint = endpoint_;
  }
  if (endpoint.empty()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no driver registered");
  auto stub = drapb::DRAPlugin::NewStub(
      grpc::CreateChannel("unix://" + endpoint, grpc::InsecureChannelCredentials()));
  drapb::NodePrepareResourcesRequest req;
  Fill(claims, &req);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(45));
  return stub->NodePrepareResources(&ctx, req, out);
}

grpc::Status DraKubeletEmulator::Unprepare(const std::vector<ClaimArg>& claims,
                                           drapb::NodeUnprepareResourcesResponse* out) {
  std::string endpoint;
  {
    std::lock_guard<std::mutex> lock(mu_);
    endpoint = endpoint_;
  }
  if (endpoint.empty()) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no driver registered");
  auto stub = drapb::DRAPlugin::NewStub(
      grpc::CreateChannel("unix://" + endpoint, grpc::InsecureChannelCredentials()));
  drapb::NodeUnprepareResourcesRequest req;
  Fill(claims, &req);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(45));
  return stub->NodeUnprepareResources(&ctx, req, out);
}

}  // namespace vgpu::testing
