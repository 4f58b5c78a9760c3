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
    // A socket is new when its path is unknown or holds another inode (the plugin made it again
    // between two scans), as kubelet's file watcher sees a delete and a create.
    std::vector<std::pair<std::string, std::string>> fresh;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
      struct stat st;
      const std::string p = e.path().string();
      if (::stat(p.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
      auto it = known_.find(p);
      // The inode and its change time: a new socket may reuse a freed inode number.
      const std::string id = std::to_string(st.st_ino) + ":" + std::to_string(st.st_ctim.tv_sec) +
                             "." + std::to_string(st.st_ctim.tv_nsec);
      if (it == known_.end() || it->second != id) fresh.push_back({p, id});
    }
    for (auto it = known_.begin(); it != known_.end();) {
      it = fs::exists(it->first, ec) ? std::next(it) : known_.erase(it);
    }
    lock.unlock();
    for (const auto& [p, id] : fresh) Register(p, id);
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(50));
  }
}

void DraKubeletEmulator::Register(const std::string& socket, const std::string& id) {
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
  known_[socket] = id;
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

// kubelet's timeout for the DRA calls.
constexpr std::chrono::seconds kCallTimeout{45};

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

std::unique_ptr<drapb::DRAPlugin::Stub> DraKubeletEmulator::Stub() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (endpoint_.empty()) return nullptr;
  return drapb::DRAPlugin::NewStub(
      grpc::CreateChannel("unix://" + endpoint_, grpc::InsecureChannelCredentials()));
}

grpc::Status DraKubeletEmulator::Prepare(const std::vector<ClaimArg>& claims,
                                         drapb::NodePrepareResourcesResponse* out) {
  auto stub = Stub();
  if (!stub) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no driver registered");
  drapb::NodePrepareResourcesRequest req;
  Fill(claims, &req);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  return stub->NodePrepareResources(&ctx, req, out);
}

grpc::Status DraKubeletEmulator::Unprepare(const std::vector<ClaimArg>& claims,
                                           drapb::NodeUnprepareResourcesResponse* out) {
  auto stub = Stub();
  if (!stub) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "no driver registered");
  drapb::NodeUnprepareResourcesRequest req;
  Fill(claims, &req);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + kCallTimeout);
  return stub->NodeUnprepareResources(&ctx, req, out);
}

}  // namespace vgpu::testing
