// Informer: keeps a local view of one resource kind (pods or nodes) in step with the API server
// by list + watch, the way client-go's reflector does.
//
// Contract:
// - ListNow() lists once, synchronously, and hands every object to on_replace (the handler drops
//   what it knew before). Call it before serving so state is complete.
// - Start() runs a thread that watches from the last resourceVersion seen. When the server ends a
//   watch (its timeout) or the connection drops, the watch is resumed from the last version
//   (nothing is missed, nothing replayed twice); when the server answers 410 Gone the informer
//   lists again (on_replace) and watches from the new list. Failures back off exponentially
//   (initial_backoff doubling to max_backoff), and the backoff resets once a watch delivers.
// - Handlers run on the informer's thread (or the caller's, for ListNow), one call at a time.
// - Stop() ends the thread promptly (it cancels a running watch); the destructor calls it.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "k8s/api/kube_client.h"

namespace vgpu::k8s {

class Informer {
 public:
  struct Handler {
    std::function<void(const std::vector<Json>& items)> on_replace;
    // type is ADDED, MODIFIED or DELETED.
    std::function<void(const std::string& type, const Json& object)> on_event;
  };
  struct Options {
    std::string ns;  // pods only; "" = all namespaces
    std::string label_selector;
    std::string field_selector;
    int watch_timeout_seconds = 300;
    std::chrono::milliseconds initial_backoff{200};
    std::chrono::milliseconds max_backoff{30000};
    int64_t page_size = 500;
  };
  struct Stats {
    uint64_t lists = 0;    // successful lists
    uint64_t watches = 0;  // watch calls started
    uint64_t resumed = 0;  // watches resumed after a drop or a server timeout
    uint64_t relists = 0;  // lists forced by 410 Gone
    uint64_t errors = 0;   // failed lists and watches
    uint64_t events = 0;   // events delivered
    std::string resource_version;
  };

  Informer(KubeClient* client, ResourceKind kind, Options options, Handler handler);
  ~Informer();
  Informer(const Informer&) = delete;
  Informer& operator=(const Informer&) = delete;

  Status ListNow();
  void Start();
  void Stop();
  bool HasSynced() const;
  Stats stats() const;

 private:
  void Run();
  // Sleeps up to `d`; returns false when stopped meanwhile.
  bool Sleep(std::chrono::milliseconds d);

  KubeClient* client_;
  ResourceKind kind_;
  Options options_;
  Handler handler_;
  WatchCanceller canceller_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool synced_ = false;
  Stats stats_;
};

}  // namespace vgpu::k8s
