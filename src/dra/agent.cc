#include "dra/agent.h"

#include <chrono>
#include <filesystem>

#include "common/log.h"

namespace vgpu::dra {

namespace {

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::vector<std::string> Uuids(const std::vector<device::DeviceInfo>& gpus) {
  std::vector<std::string> out;
  for (const auto& g : gpus) out.push_back(g.uuid);
  return out;
}

}  // namespace

std::string PcieRootOf(const std::string& sysfs_root, const std::string& pci_bus_id) {
  if (pci_bus_id.empty()) return "";
  std::error_code ec;
  const auto real = std::filesystem::canonical(sysfs_root + "/bus/pci/devices/" + pci_bus_id, ec);
  if (ec) return "";
  const std::string devices = std::filesystem::canonical(sysfs_root + "/devices", ec).string();
  if (ec) return "";
  const std::string path = real.string();
  if (path.rfind(devices + "/", 0) != 0) return "";
  const std::string rest = path.substr(devices.size() + 1);
  const std::string root = rest.substr(0, rest.find('/'));
  return root.rfind("pci", 0) == 0 ? root : "";
}

Agent::Agent(AgentOptions options, device::DeviceBackend* backend,
             std::vector<device::DeviceInfo> gpus, SlicePublisher* publisher)
    : options_(std::move(options)),
      backend_(backend),
      publisher_(publisher),
      health_(Uuids(gpus), options_.health) {
  const std::string driver = DriverVersionOf(backend_->Describe());
  for (const auto& g : gpus) {
    SliceGpu s;
    s.info = g;
    s.driver_version = driver;
    s.pcie_root = PcieRootOf(options_.sysfs_root, g.pci_bus_id);
    FillFromProductName(&s);
    gpus_.push_back(std::move(s));
  }
}

Agent::~Agent() { Stop(); }

void Agent::SetOffers(const std::vector<GpuOffer>& offers) {
  for (size_t i = 0; i < gpus_.size() && i < offers.size(); ++i) {
    gpus_[i].software = offers[i].software;
    gpus_[i].mig_devices = offers[i].mig;
  }
}

std::vector<SliceGpu> Agent::Gpus() const {
  std::vector<SliceGpu> out = gpus_;
  for (SliceGpu& g : out) g.healthy = health_.Healthy(g.info.uuid);
  return out;
}

void Agent::Publish() {
  if (publisher_ == nullptr) return;
  // A failure is retried by SampleLoop once publish_interval_ms has passed (not at once: an
  // API server that is down would be asked as fast as the client gives up).
  if (Status s = publisher_->Publish(Gpus()); !s.ok()) {
    VGPU_LOG_WARN("publishing ResourceSlices: %s (retried in %d ms)", s.ToString().c_str(),
                  options_.publish_interval_ms);
  }
}

void Agent::Start() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    dirty_ = false;
  }
  Publish();
  threads_.emplace_back([this] { EventLoop(); });
  threads_.emplace_back([this] { SampleLoop(); });
}

bool Agent::WaitStop(int ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return stop_ || dirty_; });
  return stop_;
}

void Agent::EventLoop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    bool changed = false;
    for (const device::HealthEvent& e : backend_->WaitForEvents(500)) {
      changed = health_.OnEvent(e, NowNs()) || changed;
    }
    if (changed) {
      std::lock_guard<std::mutex> lock(mu_);
      dirty_ = true;
      cv_.notify_all();
    }
  }
}

void Agent::SampleLoop() {
  int64_t last_publish = NowNs();
  for (;;) {
    bool changed = false;
    for (const SliceGpu& g : gpus_) {
      auto s = backend_->Sample(g.info.index);
      changed =
          health_.OnSample(g.info.uuid, s.has_value(), s ? "" : s.error().message(), NowNs()) ||
          changed;
    }
    changed = health_.Tick(NowNs()) || changed;
    bool publish = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      publish = changed || dirty_;
      dirty_ = false;
    }
    const int64_t now = NowNs();
    if (publish || now - last_publish > int64_t{options_.publish_interval_ms} * 1'000'000) {
      Publish();
      last_publish = now;
    }
    if (WaitStop(options_.sample_interval_ms)) return;
  }
}

void Agent::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

}  // namespace vgpu::dra
