// ExtenderHarness: a complete `vgpu scheduler` in-process (client, state, service, extender,
// HTTP server on a free loopback port) against a FakeApiServer, for protocol, concurrency and
// restart tests and for the benchmark. Also fixture loading and a small HTTP poster.
#pragma once

#include <httplib.h>

#include <memory>
#include <string>
#include <utility>

#include "fake_api_server.h"
#include "k8s/api/http_kube_client.h"
#include "k8s/extender/extender.h"
#include "k8s/extender/extender_server.h"
#include "k8s/extender/scheduler_service.h"

namespace vgpu::k8s::testing {

// Reads tests/k8s/fixtures/<name> (parsed JSON).
Json Fixture(const std::string& name);

// An inventory annotation value: `n` GPUs "<prefix>-<i>" of one model.
std::string InventoryJson(const std::string& prefix, int n, const std::string& model,
                          int64_t memory_mib, int units = 10);

class ExtenderHarness {
 public:
  // `api` null = no API server (bind only reserves).
  explicit ExtenderHarness(FakeApiServer* api, StateOptions state_options = {},
                           ServiceOptions service_options = {}, int keep_alive_seconds = 1);
  ~ExtenderHarness();

  // Sync (rebuild from the API server), ready, watches, HTTP server.
  Status Start();
  void Stop();

  // POSTs `body` to /<verb>; returns the HTTP status and parsed body (null if not JSON).
  std::pair<int, Json> Post(const std::string& verb, const std::string& body);
  std::pair<int, std::string> Get(const std::string& path);
  int port() const { return server_->port(); }

  PlacementState& state() { return *state_; }
  SchedulerService* service() { return service_.get(); }
  Extender& extender() { return *extender_; }
  ExtenderMetrics& metrics() { return metrics_; }
  std::string RenderMetrics();

 private:
  FakeApiServer* api_;
  std::unique_ptr<HttpKubeClient> client_;
  std::unique_ptr<PlacementState> state_;
  std::unique_ptr<SchedulerService> service_;
  ExtenderMetrics metrics_;
  std::unique_ptr<Extender> extender_;
  std::unique_ptr<ExtenderServer> server_;
};

// A kube-scheduler ExtenderArgs body for `pod` over `nodes` (nodeCacheCapable form).
std::string ArgsBody(const Json& pod, const std::vector<std::string>& nodes);
std::string BindBody(const Json& pod, const std::string& node);

// A pending pod asking `count` GPUs with `cores`% and `mem_mib` each (0 = not stated).
Json GpuPod(const std::string& ns, const std::string& name, int count, int cores, int64_t mem_mib);

}  // namespace vgpu::k8s::testing
