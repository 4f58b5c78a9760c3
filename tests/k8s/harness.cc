#include "harness.h"

#include <fstream>
#include <sstream>

#include "k8s/api/encoding.h"

#ifndef VGPU_K8S_FIXTURES
#define VGPU_K8S_FIXTURES "tests/k8s/fixtures"
#endif

namespace vgpu::k8s::testing {

Json Fixture(const std::string& name) {
  auto text = ReadWholeFile(std::string(VGPU_K8S_FIXTURES) + "/" + name);
  if (!text) {
    std::fprintf(stderr, "fixture %s: %s\n", name.c_str(), text.error().message().c_str());
    std::abort();
  }
  return Json::parse(*text);
}

std::string InventoryJson(const std::string& prefix, int n, const std::string& model,
                          int64_t memory_mib, int units) {
  NodeInventory inv;
  for (int i = 0; i < n; ++i) {
    inv.gpus.push_back(
        {"GPU-" + prefix + "-" + std::to_string(i), i, model, memory_mib, units, true, i / 4, {}});
  }
  return FormatInventory(inv);
}

ExtenderHarness::ExtenderHarness(FakeApiServer* api, StateOptions so, ServiceOptions svo,
                                 int keep_alive_seconds)
    : api_(api) {
  if (api_ != nullptr) {
    ClientOptions co;
    co.initial_backoff = std::chrono::milliseconds(5);
    co.max_backoff = std::chrono::milliseconds(50);
    co.max_connections = 32;
    auto c = HttpKubeClient::Create(api_->ClientConfig(), co);
    if (!c) std::abort();
    client_ = std::move(*c);
  }
  auto s = PlacementState::Create(std::move(so));
  if (!s) std::abort();
  state_ = std::move(*s);
  if (client_) {
    svo.informer_backoff = std::chrono::milliseconds(10);
    service_ = std::make_unique<SchedulerService>(client_.get(), state_.get(), svo);
  }
  ExtenderOptions eo;
  eo.request = state_->options().request;
  extender_ = std::make_unique<Extender>(state_.get(), client_.get(), &metrics_, eo);
  ServerOptions srv;
  srv.listen = "127.0.0.1:0";
  srv.metrics_listen = "";
  srv.threads = 96;
  srv.keep_alive_seconds = keep_alive_seconds;
  server_ = std::make_unique<ExtenderServer>(
      extender_.get(), [this] { return RenderMetrics(); }, srv);
}

ExtenderHarness::~ExtenderHarness() { Stop(); }

std::string ExtenderHarness::RenderMetrics() {
  std::string out;
  metrics_.Render(&out);
  if (service_) service_->RenderMetrics(&out);
  return out;
}

Status ExtenderHarness::Start() {
  if (service_) {
    VGPU_RETURN_IF_ERROR(service_->Sync());
    service_->Start();
  }
  extender_->set_ready(true);
  return server_->Start();
}

void ExtenderHarness::Stop() {
  if (server_) server_->Stop();
  if (service_) service_->Stop();
}

std::pair<int, Json> ExtenderHarness::Post(const std::string& verb, const std::string& body) {
  thread_local std::unique_ptr<httplib::Client> cli;
  thread_local int cli_port = -1;
  if (!cli || cli_port != port()) {
    cli = std::make_unique<httplib::Client>("127.0.0.1", port());
    cli->set_keep_alive(true);
    cli->set_tcp_nodelay(true);
    cli->set_read_timeout(60, 0);
    cli_port = port();
  }
  auto res = cli->Post("/" + verb, body, "application/json");
  if (!res && (res.error() == httplib::Error::Read || res.error() == httplib::Error::Write)) {
    // The server closed an idle keep-alive connection as it was reused: send again, as an HTTP
    // client whose connection broke before any answer may.
    res = cli->Post("/" + verb, body, "application/json");
  }
  if (!res) {
    std::fprintf(stderr, "POST /%s: %s\n", verb.c_str(), httplib::to_string(res.error()).c_str());
    return {0, Json(nullptr)};
  }
  return {res->status, Json::parse(res->body, nullptr, false)};
}

std::pair<int, std::string> ExtenderHarness::Get(const std::string& path) {
  httplib::Client cli("127.0.0.1", port());
  auto res = cli.Get(path);
  if (!res) return {0, ""};
  return {res->status, res->body};
}

std::string ArgsBody(const Json& pod, const std::vector<std::string>& nodes) {
  return Json{{"Pod", pod}, {"Nodes", nullptr}, {"NodeNames", nodes}}.dump();
}

std::string BindBody(const Json& pod, const std::string& node) {
  return Json{{"PodName", MetaString(pod, "name")},
              {"PodNamespace", MetaString(pod, "namespace")},
              {"PodUID", MetaString(pod, "uid")},
              {"Node", node}}
      .dump();
}

Json GpuPod(const std::string& ns, const std::string& name, int count, int cores, int64_t mem_mib) {
  Json limits = {{"nvidia.com/gpu", std::to_string(count)}};
  if (cores > 0) limits["nvidia.com/gpucores"] = std::to_string(cores);
  if (mem_mib > 0) limits["nvidia.com/gpumem"] = std::to_string(mem_mib);
  Json containers = Json::array();
  containers.push_back(
      {{"name", "main"}, {"resources", {{"limits", limits}, {"requests", limits}}}});
  return MakePod(ns, name, "uid-" + ns + "-" + name, containers);
}

}  // namespace vgpu::k8s::testing
