#include "node/plugin/plugin_runner.h"

#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "common/log.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "mig/profiles.h"
#include "node/plugin/plugin_service.h"

namespace vgpu::node {
namespace {

constexpr const char* kKubeletSocket = "kubelet.sock";
constexpr const char* kApiVersion = "v1beta1";

// Inode of a file, 0 when it does not exist.
ino_t InodeOf(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 ? st.st_ino : 0;
}

}  // namespace

PluginOptions MigPluginOptions(const PluginOptions& base, const std::string& profile) {
  PluginOptions o = base;
  o.mig_profile = profile;
  o.resource_name = mig::ResourceNameOfProfile(profile);
  std::string stem = base.endpoint;
  if (stem.size() > 5 && stem.ends_with(".sock")) stem.resize(stem.size() - 5);
  o.endpoint = stem + "-" + o.resource_name.substr(o.resource_name.find('/') + 1) + ".sock";
  o.pre_start_required = false;
  return o;
}

PluginRunner::PluginRunner(PluginOptions options, NodeState* state, Allocator* allocator)
    : options_(std::move(options)), state_(state), allocator_(allocator) {}

PluginRunner::~PluginRunner() { Stop(); }

Status PluginRunner::StartServer() {
  const std::string path = socket_path();
  ::unlink(path.c_str());
  service_ = std::make_unique<DevicePluginService>(state_, allocator_, options_.pre_start_required,
                                                   options_.mig_profile);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + path, grpc::InsecureServerCredentials());
  builder.RegisterService(service_.get());
  server_ = builder.BuildAndStart();
  if (!server_) {
    service_.reset();
    return Status::Unavailable("cannot serve the device plugin on " + path);
  }
  server_starts_.fetch_add(1);
  VGPU_LOG_INFO("device plugin serving on %s", path.c_str());
  return Status::Ok();
}

void PluginRunner::StopServer() {
  if (service_) service_->Stop();
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_->Wait();
    server_.reset();
  }
  service_.reset();
  registered_.store(false);
}

Status PluginRunner::Register() {
  const std::string kubelet = options_.kubelet_dir + "/" + kKubeletSocket;
  auto channel = grpc::CreateChannel("unix://" + kubelet, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest request;
  request.set_version(kApiVersion);
  request.set_endpoint(options_.endpoint);
  request.set_resource_name(options_.resource_name);
  request.mutable_options()->set_pre_start_required(options_.pre_start_required);
  request.mutable_options()->set_get_preferred_allocation_available(true);
  v1beta1::Empty response;
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  grpc::Status s = stub->Register(&context, request, &response);
  if (!s.ok()) {
    return Status::Unavailable("registering with kubelet at " + kubelet + ": " + s.error_message());
  }
  return Status::Ok();
}

Status PluginRunner::Start() {
  std::error_code ec;
  std::filesystem::create_directories(options_.kubelet_dir, ec);
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ >= 0) {
    if (::inotify_add_watch(inotify_fd_, options_.kubelet_dir.c_str(),
                            IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM) < 0) {
      VGPU_LOG_WARN("cannot watch %s (%s); checking it every 500 ms instead",
                    options_.kubelet_dir.c_str(), std::strerror(errno));
      ::close(inotify_fd_);
      inotify_fd_ = -1;
    }
  }
  VGPU_RETURN_IF_ERROR(StartServer());
  stop_.store(false);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void PluginRunner::Stop() {
  if (stop_.exchange(true)) return;
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  StopServer();
  ::unlink(socket_path().c_str());
  if (inotify_fd_ >= 0) {
    ::close(inotify_fd_);
    inotify_fd_ = -1;
  }
}

bool PluginRunner::WaitForRegistrations(uint64_t n, int timeout_ms) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                      [&] { return registrations_.load() >= n; });
}

void PluginRunner::Loop() {
  const std::string kubelet = options_.kubelet_dir + "/" + kKubeletSocket;
  const std::string own = socket_path();
  bool need_register = true;
  bool need_restart = false;
  ino_t registered_kubelet = 0;
  ino_t own_inode = InodeOf(own);
  bool kubelet_created = false;  // inotify saw kubelet.sock appear
  bool kubelet_absent = false;   // its absence was logged
  auto next_attempt = std::chrono::steady_clock::now();
  while (!stop_.load()) {
    // Decide from the directory's state, not only from events: events can be missed.
    ino_t kubelet_inode = InodeOf(kubelet);
    ino_t current_own = InodeOf(own);
    if (kubelet_inode == 0 && !kubelet_absent) {
      VGPU_LOG_WARN(
          "kubelet's registration socket %s does not exist: kubelet is not running, or "
          "--kubelet-dir is not its device-plugin directory; waiting for it (no container can "
          "get a GPU until the plugin is registered)",
          kubelet.c_str());
      kubelet_absent = true;
    } else if (kubelet_inode != 0 && kubelet_absent) {
      VGPU_LOG_WARN("kubelet's registration socket %s is back", kubelet.c_str());
      kubelet_absent = false;
    }
    if (!need_restart && (current_own == 0 || current_own != own_inode)) {
      VGPU_LOG_WARN("device plugin socket %s was removed; serving again", own.c_str());
      need_restart = true;
    }
    if (!need_register && kubelet_inode != 0 &&
        (kubelet_inode != registered_kubelet || kubelet_created)) {
      VGPU_LOG_WARN("kubelet restarted (new %s); registering again", kubelet.c_str());
      need_restart = true;
    }
    if (need_restart) {
      StopServer();
      Status s = StartServer();
      if (!s.ok()) {
        VGPU_LOG_ERROR("%s", s.ToString().c_str());
      } else {
        need_restart = false;
        own_inode = InodeOf(own);
        need_register = true;
        next_attempt = std::chrono::steady_clock::now();
      }
    }
    kubelet_created = false;
    if (need_register && kubelet_inode != 0 && std::chrono::steady_clock::now() >= next_attempt) {
      Status s = Register();
      if (s.ok()) {
        need_register = false;
        registered_kubelet = kubelet_inode;
        registered_.store(true);
        {
          std::lock_guard<std::mutex> lock(mu_);
          registrations_.fetch_add(1);
        }
        cv_.notify_all();
        VGPU_LOG_INFO("registered %s with kubelet (endpoint %s)", options_.resource_name.c_str(),
                      options_.endpoint.c_str());
      } else {
        VGPU_LOG_WARN("%s; retrying", s.ToString().c_str());
        next_attempt =
            std::chrono::steady_clock::now() + std::chrono::milliseconds(options_.retry_ms);
      }
    }
    // Wait for a change in the directory, or 100 ms while registration is pending, 500 ms else.
    int timeout = need_register || need_restart ? 100 : 500;
    if (inotify_fd_ >= 0) {
      pollfd p{inotify_fd_, POLLIN, 0};
      if (::poll(&p, 1, timeout) > 0) {
        alignas(inotify_event) char buf[4096];
        ssize_t n;
        while ((n = ::read(inotify_fd_, buf, sizeof buf)) > 0) {
          for (char* p = buf; p < buf + n;) {
            auto* e = reinterpret_cast<inotify_event*>(p);
            if (e->len > 0 && std::strcmp(e->name, kKubeletSocket) == 0 &&
                (e->mask & (IN_CREATE | IN_MOVED_TO))) {
              kubelet_created = true;
            }
            p += sizeof(inotify_event) + e->len;
          }
        }
      }
    } else {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait_for(lock, std::chrono::milliseconds(timeout), [&] { return stop_.load(); });
    }
  }
}

}  // namespace vgpu::node
