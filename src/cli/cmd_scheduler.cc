// `vgpu scheduler`: the kube-scheduler extender. kube-scheduler calls it to filter and score
// nodes for pods that ask for GPU slices and to bind them; it keeps the cluster's GPUs and their
// pods from the API server (see docs/scheduler.md).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/units.h"
#include "k8s/extender.h"
#include "k8s/extender_server.h"
#include "k8s/http_kube_client.h"
#include "k8s/scheduler_service.h"
#include "sched/registry.h"

namespace vgpu::cli {
namespace {

constexpr std::string_view kCommand = "scheduler";

struct SchedulerFlags {
  std::string listen = "127.0.0.1:8888";
  std::string metrics_listen = "0.0.0.0:9395";
  std::string tls_cert, tls_key;
  std::string kubeconfig, context;
  std::string policy = "default";
  std::vector<std::string> policy_options;
  std::string resource_prefix = "nvidia.com";
  std::string node_label_selector;
  int default_memory_percent = 100;
  std::string assume_ttl = "120s";
  std::string check_interval = "10s";
  int threads = 64;
  int log_level = 3;
  bool no_per_gpu_metrics = false;
};

Status CheckPrefix(const std::string& p) {
  if (p.empty() || p.size() > 253) {
    return Status::InvalidArgument("--resource-prefix: must be a DNS name, got '" + p + "'");
  }
  for (char c : p) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-')) {
      return Status::InvalidArgument("--resource-prefix: '" + p +
                                     "' may hold only a-z, 0-9, '.' and '-'");
    }
  }
  return Status::Ok();
}

std::string PolicyHelp() {
  std::string out = "Policies (--policy):\n";
  const sched::PolicyRegistry& r = sched::BuiltinPolicies();
  for (const std::string& n : r.Names()) {
    char line[256];
    std::snprintf(line, sizeof line, "  %-13s %s\n", n.c_str(), r.Summary(n).c_str());
    out += line;
  }
  return out;
}

// Waits up to `d` for SIGINT / SIGTERM (blocked in every thread); true when one arrived.
bool WaitForSignal(const sigset_t& set, std::chrono::milliseconds d) {
  timespec ts{static_cast<time_t>(d.count() / 1000),
              static_cast<long>((d.count() % 1000) * 1000000)};
  return sigtimedwait(&set, nullptr, &ts) > 0;
}

Status Run(const SchedulerFlags& f) {
  VGPU_RETURN_IF_ERROR(CheckPrefix(f.resource_prefix));
  if (f.default_memory_percent < 0 || f.default_memory_percent > 100) {
    return Status::InvalidArgument("--default-gpumem-percentage: must be 0..100, got " +
                                   std::to_string(f.default_memory_percent));
  }
  if (f.threads < 1 || f.threads > 4096) {
    return Status::InvalidArgument("--threads: must be 1..4096, got " + std::to_string(f.threads));
  }
  if (f.log_level < 0 || f.log_level > 4) {
    return Status::InvalidArgument("--log-level: must be 0..4, got " + std::to_string(f.log_level));
  }
  auto ttl = ParseDuration(f.assume_ttl, "--assume-ttl");
  if (!ttl) return ttl.error();
  auto check = ParseDuration(f.check_interval, "--check-interval");
  if (!check) return check.error();
  if (*ttl < 1'000'000'000LL || *check < 100'000'000LL) {
    return Status::InvalidArgument("--assume-ttl must be at least 1s and --check-interval 100ms");
  }
  std::map<std::string, std::string> params;
  for (const std::string& o : f.policy_options) {
    const size_t eq = o.find('=');
    if (eq == std::string::npos || eq == 0) {
      return Status::InvalidArgument("--policy-option: expected key=value, got '" + o + "'");
    }
    params[o.substr(0, eq)] = o.substr(eq + 1);
  }
  SetLogTag("vgpu scheduler");
  SetLogLevel(static_cast<LogLevel>(f.log_level));

  k8s::StateOptions so;
  so.policy = f.policy;
  so.policy_params = params;
  so.request.names.prefix = f.resource_prefix;
  so.request.default_memory_percent = f.default_memory_percent;
  so.assume_ttl = std::chrono::milliseconds(*ttl / 1'000'000);
  auto state = k8s::PlacementState::Create(so);
  if (!state) {
    Status s = state.error();
    if (s.code() == StatusCode::kNotFound) {
      return Status::InvalidArgument("--policy: " + s.message());
    }
    return s.WithContext("--policy / --policy-option");
  }

  auto config = k8s::LoadDefaultConfig(f.kubeconfig, f.context);
  if (!config) {
    Status s = config.error();
    return s.code() == StatusCode::kFailedPrecondition || s.code() == StatusCode::kIoError
               ? s
               : Status::InvalidArgument(s.message());
  }
  k8s::ClientOptions co;
  co.user_agent = "vgpu-scheduler";
  co.request_timeout = std::chrono::milliseconds(10000);
  auto client = k8s::HttpKubeClient::Create(*config, co);
  if (!client) return Status::InvalidArgument(client.error().message());

  // Signals are taken by sigtimedwait in this thread only.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  k8s::ServiceOptions svo;
  svo.node_label_selector = f.node_label_selector;
  svo.check_interval = std::chrono::milliseconds(*check / 1'000'000);
  svo.per_gpu_metrics = !f.no_per_gpu_metrics;
  k8s::SchedulerService service(client->get(), state->get(), svo);
  k8s::ExtenderMetrics metrics;
  k8s::ExtenderOptions eo;
  eo.request = so.request;
  k8s::Extender extender(state->get(), client->get(), &metrics, eo);
  const auto render = [&] {
    std::string out;
    k8s::RenderHeader(&out, "vgpu_build_info", "gauge", "Version of the vgpu scheduler.");
    k8s::RenderSample(&out, "vgpu_build_info", "version=\"" VGPU_VERSION "\"", 1);
    k8s::RenderHeader(&out, "vgpu_scheduler_ready", "gauge",
                      "1 once the cluster state is loaded and the extender answers.");
    k8s::RenderSample(&out, "vgpu_scheduler_ready", "", extender.ready() ? 1 : 0);
    metrics.Render(&out);
    service.RenderMetrics(&out);
    return out;
  };
  k8s::ServerOptions srv;
  srv.listen = f.listen;
  srv.metrics_listen = f.metrics_listen;
  srv.tls_cert = f.tls_cert;
  srv.tls_key = f.tls_key;
  srv.threads = f.threads;
  k8s::ExtenderServer server(&extender, render, srv);
  if (Status s = server.Start(); !s.ok()) {
    return s.code() == StatusCode::kUnavailable ? s : Status::InvalidArgument(s.message());
  }
  VGPU_LOG_INFO("serving %s on %s (policy %s, resources %s/*), metrics on %s; API server %s",
                server.tls() ? "HTTPS" : "HTTP", f.listen.c_str(), f.policy.c_str(),
                f.resource_prefix.c_str(),
                f.metrics_listen.empty() ? "-" : f.metrics_listen.c_str(),
                (*client)->server().c_str());

  std::chrono::milliseconds backoff(500);
  while (true) {
    Status s = service.Sync();
    if (s.ok()) break;
    VGPU_LOG_WARN("loading the cluster state: %s; retrying in %lld ms", s.message().c_str(),
                  static_cast<long long>(backoff.count()));
    if (WaitForSignal(signals, backoff)) {
      server.Stop();
      return Status::Ok();
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
  }
  service.Start();
  extender.set_ready(true);
  VGPU_LOG_INFO("ready");
  while (!WaitForSignal(signals, std::chrono::milliseconds(60000))) {
  }
  VGPU_LOG_INFO("stopping");
  extender.set_ready(false);
  server.Stop();
  service.Stop();
  return Status::Ok();
}

}  // namespace

int RunScheduler(int argc, char** argv) {
  CLI::App app(
      "The kube-scheduler extender: filters and scores nodes for pods that ask for GPU slices "
      "(nvidia.com/gpu, gpumem, gpumem-percentage, gpucores, priority) with the placement "
      "engine, records the decision on the pod and binds it. Cluster state comes from the API "
      "server (in-cluster service account, --kubeconfig, $KUBECONFIG or ~/.kube/config). "
      "Endpoints: POST /filter /prioritize /bind; GET /healthz /readyz /metrics.",
      "vgpu scheduler");
  SchedulerFlags f;
  app.add_option("--listen", f.listen, "Address of the extender verbs (host:port)")
      ->capture_default_str();
  app.add_option("--metrics-listen", f.metrics_listen,
                 "Address of /metrics, /healthz, /readyz (\"\" = only on --listen)")
      ->capture_default_str();
  app.add_option("--tls-cert", f.tls_cert, "Serve --listen over HTTPS with this PEM certificate");
  app.add_option("--tls-key", f.tls_key, "PEM private key of --tls-cert");
  app.add_option("--kubeconfig", f.kubeconfig, "Kubeconfig file (default: in-cluster config)");
  app.add_option("--context", f.context, "Kubeconfig context (default: current-context)");
  app.add_option("--policy", f.policy, "Placement policy (see below)")->capture_default_str();
  app.add_option("--policy-option", f.policy_options, "Policy option key=value (repeatable)");
  app.add_option("--resource-prefix", f.resource_prefix,
                 "Prefix of the resource names and annotations (<prefix>/gpu, ...)")
      ->capture_default_str();
  app.add_option("--node-label-selector", f.node_label_selector,
                 "Only consider nodes matching this label selector (e.g. gpu=on)");
  app.add_option("--default-gpumem-percentage", f.default_memory_percent,
                 "Memory per GPU for pods that state none, in percent (HAMi: 100); 0 = in "
                 "proportion to gpucores")
      ->capture_default_str();
  app.add_option("--assume-ttl", f.assume_ttl,
                 "How long a decision without a binding holds its GPUs before it is checked")
      ->capture_default_str();
  app.add_option("--check-interval", f.check_interval, "How often expired decisions are checked")
      ->capture_default_str();
  app.add_option("--threads", f.threads, "HTTP worker threads")->capture_default_str();
  app.add_option("--log-level", f.log_level, "0 silent, 1 errors, 2 warnings, 3 info, 4 debug")
      ->capture_default_str();
  app.add_flag("--no-per-gpu-metrics", f.no_per_gpu_metrics,
               "Leave out the per-GPU series of /metrics (large clusters)");
  app.footer(PolicyHelp());
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  return ReportStatus(kCommand, Run(f));
}

}  // namespace vgpu::cli
