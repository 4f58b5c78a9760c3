#include "k8s/api/informer.h"

#include "common/log.h"

namespace vgpu::k8s {

Informer::Informer(KubeClient* client, ResourceKind kind, Options options, Handler handler)
    : client_(client), kind_(kind), options_(std::move(options)), handler_(std::move(handler)) {}

Informer::~Informer() { Stop(); }

Status Informer::ListNow() {
  ListOptions lo;
  lo.label_selector = options_.label_selector;
  lo.field_selector = options_.field_selector;
  lo.page_size = options_.page_size;
  auto list = client_->List(kind_, options_.ns, lo);
  if (!list) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.errors;
    return list.error();
  }
  if (handler_.on_replace) handler_.on_replace(list->items);
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.lists;
  stats_.resource_version = list->resource_version;
  synced_ = true;
  return Status::Ok();
}

void Informer::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  canceller_.Reset();
  thread_ = std::thread([this] { Run(); });
}

void Informer::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  canceller_.Cancel();
  if (thread_.joinable()) thread_.join();
}

bool Informer::HasSynced() const {
  std::lock_guard<std::mutex> lock(mu_);
  return synced_;
}

Informer::Stats Informer::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool Informer::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !cv_.wait_for(lock, d, [&] { return stop_; });
}

void Informer::Run() {
  const std::string kind(KindName(kind_));
  std::chrono::milliseconds backoff = options_.initial_backoff;
  bool need_list = !HasSynced();
  bool first_watch = true;
  while (true) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    if (need_list) {
      Status s = ListNow();
      if (!s.ok()) {
        VGPU_LOG_WARN("listing %s failed: %s; retrying in %lld ms", kind.c_str(),
                      s.message().c_str(), static_cast<long long>(backoff.count()));
        if (!Sleep(backoff)) return;
        backoff = std::min(backoff * 2, options_.max_backoff);
        continue;
      }
      need_list = false;
      first_watch = true;
    }
    WatchOptions wo;
    wo.label_selector = options_.label_selector;
    wo.field_selector = options_.field_selector;
    wo.timeout_seconds = options_.watch_timeout_seconds;
    {
      std::lock_guard<std::mutex> lock(mu_);
      wo.resource_version = stats_.resource_version;
      ++stats_.watches;
      if (!first_watch) ++stats_.resumed;
    }
    first_watch = false;
    bool delivered = false;
    Status s = client_->Watch(
        kind_, options_.ns, wo,
        [&](WatchEvent&& ev) {
          const std::string rv = MetaString(ev.object, "resourceVersion");
          if (ev.type != "BOOKMARK" && handler_.on_event) handler_.on_event(ev.type, ev.object);
          std::lock_guard<std::mutex> lock(mu_);
          if (!rv.empty()) stats_.resource_version = rv;
          if (ev.type != "BOOKMARK") ++stats_.events;
          delivered = true;
          return !stop_;
        },
        &canceller_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return;
    }
    if (delivered) backoff = options_.initial_backoff;
    if (s.ok()) continue;  // the server ended the watch: resume from the last version
    if (s.code() == StatusCode::kOutOfRange) {
      VGPU_LOG_INFO("watch of %s: resource version too old; listing again", kind.c_str());
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.relists;
      need_list = true;
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.errors;
    }
    VGPU_LOG_WARN("watch of %s: %s; resuming in %lld ms", kind.c_str(), s.message().c_str(),
                  static_cast<long long>(backoff.count()));
    if (!Sleep(backoff)) return;
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace vgpu::k8s
