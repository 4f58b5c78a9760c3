// `vgpu scheduler`: the kube-scheduler extender. kube-scheduler calls it to filter and score
// nodes for pods that ask for GPU slices and to bind them; it keeps the cluster's GPUs and their
// pods from the API server (see docs/scheduler.md). With --webhook-listen it also serves the
// mutating admission webhook that sends GPU pods to the vgpu scheduler (docs/install.md).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "common/log.h"
#include "common/units.h"
#include "k8s/api/encoding.h"
#include "k8s/api/http_kube_client.h"
#include "k8s/extender/extender.h"
#include "k8s/extender/extender_server.h"
#include "k8s/extender/scheduler_service.h"
#include "k8s/webhook/admission_webhook.h"
#include "k8s/webhook/webhook_cert_secret.h"
#include "k8s/webhook/webhook_certs.h"
#include "k8s/webhook/webhook_server.h"
#include "sched/registry.h"

namespace vgpu::cli {
namespace {

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
  std::string filter_mode = "narrow";
  int narrow_tolerance = 0;
  bool no_per_gpu_metrics = false;
  // The admission webhook.
  std::string scheduler_name = "vgpu-scheduler";
  std::string webhook_listen;  // "" = no webhook
  std::string webhook_path = "/webhook";
  std::string webhook_cert, webhook_key;
  bool webhook_self_signed = false;
  std::string webhook_service = "vgpu-scheduler-webhook.vgpu-system";
  std::string webhook_config = "vgpu-scheduler";
  std::string webhook_secret = "vgpu-scheduler-webhook-tls";  // [NAMESPACE/]NAME; "" = none
  std::vector<std::string> webhook_replace = {"default-scheduler", "hami-scheduler"};
  bool webhook_hide_gpus = false;
  bool webhook_cpu_pods = false;
};

// A DNS subdomain (RFC 1123): what Kubernetes accepts as a scheduler or object name.
bool IsDnsSubdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-' && c != '.') return false;
    if ((i == 0 || i + 1 == s.size()) && !alnum) return false;
  }
  return true;
}

// Namespace and name of --webhook-secret: NAMESPACE/NAME, or NAME in the namespace of
// --webhook-service (where the scheduler runs).
Result<std::pair<std::string, std::string>> WebhookSecretRef(const SchedulerFlags& f) {
  std::string ns = f.webhook_service.substr(f.webhook_service.find('.') + 1);
  std::string name = f.webhook_secret;
  if (const size_t slash = name.find('/'); slash != std::string::npos) {
    ns = name.substr(0, slash);
    name = name.substr(slash + 1);
  }
  if (!IsDnsSubdomain(name) || !IsDnsSubdomain(ns) || ns.find('.') != std::string::npos) {
    return Status::InvalidArgument(
        "--webhook-secret: must be NAME or NAMESPACE/NAME of a Secret, got '" + f.webhook_secret +
        "'");
  }
  return std::pair{ns, name};
}

Status CheckWebhookFlags(const SchedulerFlags& f) {
  if (!IsDnsSubdomain(f.scheduler_name)) {
    return Status::InvalidArgument("--scheduler-name: must be a DNS subdomain, got '" +
                                   f.scheduler_name + "'");
  }
  const bool files = !f.webhook_cert.empty() || !f.webhook_key.empty();
  if (f.webhook_listen.empty()) {
    if (files || f.webhook_self_signed) {
      return Status::InvalidArgument(
          "--webhook-tls-cert/--webhook-tls-key/--webhook-self-signed need --webhook-listen");
    }
    return Status::Ok();
  }
  if (files && f.webhook_self_signed) {
    return Status::InvalidArgument(
        "--webhook-self-signed: give either it or --webhook-tls-cert/--webhook-tls-key");
  }
  if (!f.webhook_self_signed && (f.webhook_cert.empty() || f.webhook_key.empty())) {
    return Status::InvalidArgument(
        "--webhook-listen: the webhook is served over HTTPS only; give --webhook-tls-cert and "
        "--webhook-tls-key, or --webhook-self-signed");
  }
  if (f.webhook_self_signed) {
    if (auto names = k8s::ServiceDnsNames(f.webhook_service); !names) {
      return Status::InvalidArgument("--webhook-service: " + names.error().message());
    }
    if (!f.webhook_secret.empty()) VGPU_RETURN_IF_ERROR(WebhookSecretRef(f).status());
  }
  if (!f.webhook_config.empty() && !IsDnsSubdomain(f.webhook_config)) {
    return Status::InvalidArgument("--webhook-config-name: must be a DNS subdomain, got '" +
                                   f.webhook_config + "'");
  }
  return Status::Ok();
}

// The webhook's certificate and key files, read now and again when they change (a renewed
// certificate, e.g. from cert-manager).
struct CertFiles {
  std::string cert_path, key_path;
  std::string cert, key;
  Result<bool> Read() {  // whether the text changed
    auto c = k8s::ReadWholeFile(cert_path);
    if (!c) return Status::InvalidArgument("--webhook-tls-cert: " + c.error().message());
    auto k = k8s::ReadWholeFile(key_path);
    if (!k) return Status::InvalidArgument("--webhook-tls-key: " + k.error().message());
    const bool changed = *c != cert || *k != key;
    cert = std::move(*c);
    key = std::move(*k);
    return changed;
  }
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

// The generated webhook certificates: from the --webhook-secret Secret (made there when missing,
// unusable or expiring within 30 days, shared by every replica and restart), or made for this
// process alone when there is no Secret or it cannot be read or written.
Result<k8s::WebhookCertificates> SelfSignedCertificates(const SchedulerFlags& f,
                                                        const std::vector<std::string>& names,
                                                        k8s::KubeClient* client) {
  if (!f.webhook_secret.empty()) {
    auto ref = WebhookSecretRef(f);
    if (!ref) return ref.error();
    k8s::WebhookSecretOptions o;
    o.ns = ref->first;
    o.name = ref->second;
    o.names = names;
    auto r = k8s::LoadOrCreateWebhookSecret(*client, o);
    if (r) {
      VGPU_LOG_INFO("webhook certificate: Secret %s/%s %s%s%s", o.ns.c_str(), o.name.c_str(),
                    std::string(k8s::WebhookSecretSourceName(r->source)).c_str(),
                    r->replaced_because.empty() ? "" : " (",
                    r->replaced_because.empty() ? "" : (r->replaced_because + ")").c_str());
      return std::move(r->certs);
    }
    VGPU_LOG_WARN(
        "webhook certificate: %s; using a CA of this process only (replicas and restarts will "
        "each add their own CA to the caBundle)",
        r.error().message().c_str());
  }
  auto certs = k8s::GenerateWebhookCertificates(names);
  if (!certs) return certs.error().WithContext("generating the webhook certificate");
  return certs;
}

// Waits up to `d` for SIGINT / SIGTERM (blocked in every thread); true when one arrived.
bool WaitForSignal(const sigset_t& set, std::chrono::milliseconds d) {
  timespec ts{static_cast<time_t>(d.count() / 1000),
              static_cast<long>((d.count() % 1000) * 1000000)};
  return sigtimedwait(&set, nullptr, &ts) > 0;
}

Status RunSchedulerServer(const SchedulerFlags& f) {
  VGPU_RETURN_IF_ERROR(CheckPrefix(f.resource_prefix));
  VGPU_RETURN_IF_ERROR(CheckWebhookFlags(f));
  if (f.default_memory_percent < 0 || f.default_memory_percent > 100) {
    return Status::InvalidArgument("--default-gpumem-percentage: must be 0..100, got " +
                                   std::to_string(f.default_memory_percent));
  }
  if (f.threads < 1 || f.threads > 4096) {
    return Status::InvalidArgument("--threads: must be 1..4096, got " + std::to_string(f.threads));
  }
  if (f.filter_mode != "narrow" && f.filter_mode != "all") {
    return Status::InvalidArgument("--filter-mode: must be narrow or all, got '" + f.filter_mode +
                                   "'");
  }
  if (f.narrow_tolerance < 0 || f.narrow_tolerance > 10) {
    return Status::InvalidArgument("--narrow-tolerance: must be 0..10, got " +
                                   std::to_string(f.narrow_tolerance));
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
  so.filter_mode = f.filter_mode == "all" ? k8s::FilterMode::kAll : k8s::FilterMode::kNarrow;
  so.narrow_tolerance = f.narrow_tolerance;
  so.scheduler_name = f.scheduler_name;
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

  // The admission webhook: its certificate, its HTTPS server and, with a generated CA, the
  // publication of that CA in the MutatingWebhookConfiguration.
  std::unique_ptr<k8s::AdmissionWebhook> webhook;
  std::unique_ptr<k8s::WebhookServer> webhook_server;
  std::unique_ptr<k8s::CaBundlePublisher> ca_publisher;
  CertFiles cert_files{f.webhook_cert, f.webhook_key, "", ""};
  if (!f.webhook_listen.empty()) {
    k8s::WebhookOptions wo;
    wo.names.prefix = f.resource_prefix;
    wo.scheduler_name = f.scheduler_name;
    wo.replace_schedulers = f.webhook_replace;
    wo.hide_gpus = f.webhook_hide_gpus;
    wo.cpu_pods = f.webhook_cpu_pods;
    webhook = std::make_unique<k8s::AdmissionWebhook>(wo);
    k8s::WebhookServerOptions wso;
    wso.listen = f.webhook_listen;
    wso.path = f.webhook_path;
    std::string ca_pem;
    if (f.webhook_self_signed) {
      auto names = k8s::ServiceDnsNames(f.webhook_service);
      if (!names) return Status::InvalidArgument("--webhook-service: " + names.error().message());
      auto certs = SelfSignedCertificates(f, *names, client->get());
      if (!certs) return certs.error();
      wso.cert_pem = certs->cert_pem;
      wso.key_pem = certs->key_pem;
      ca_pem = certs->ca_cert_pem;
    } else {
      auto read = cert_files.Read();
      if (!read) return read.error();
      wso.cert_pem = cert_files.cert;
      wso.key_pem = cert_files.key;
    }
    webhook_server = std::make_unique<k8s::WebhookServer>(webhook.get(), wso);
    if (Status s = webhook_server->Start(); !s.ok()) {
      return s.code() == StatusCode::kUnavailable ? s : Status::InvalidArgument(s.message());
    }
    VGPU_LOG_INFO("serving the admission webhook on https %s%s (pods asking for %s/* go to %s)",
                  f.webhook_listen.c_str(), f.webhook_path.c_str(), f.resource_prefix.c_str(),
                  f.scheduler_name.c_str());
    if (!ca_pem.empty() && !f.webhook_config.empty()) {
      ca_publisher = std::make_unique<k8s::CaBundlePublisher>(
          client->get(), f.webhook_config, ca_pem, k8s::CaBundlePublisher::Options{});
      ca_publisher->Start();
    }
  }
  const auto stop_webhook = [&] {
    if (ca_publisher) ca_publisher->Stop();
    if (webhook_server) webhook_server->Stop();
  };
  const auto render = [&] {
    std::string out;
    k8s::RenderHeader(&out, "vgpu_build_info", "gauge", "Version of the vgpu scheduler.");
    k8s::RenderSample(&out, "vgpu_build_info", "version=\"" VGPU_VERSION "\"", 1);
    k8s::RenderHeader(&out, "vgpu_scheduler_ready", "gauge",
                      "1 once the cluster state is loaded and the extender answers.");
    k8s::RenderSample(&out, "vgpu_scheduler_ready", "", extender.ready() ? 1 : 0);
    metrics.Render(&out);
    service.RenderMetrics(&out);
    if (webhook) webhook->RenderMetrics(&out);
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
    stop_webhook();
    return s.code() == StatusCode::kUnavailable ? s : Status::InvalidArgument(s.message());
  }
  VGPU_LOG_INFO(
      "serving %s on %s (policy %s, filter mode %s, resources %s/*), metrics on %s; API server %s",
      server.tls() ? "HTTPS" : "HTTP", f.listen.c_str(), f.policy.c_str(), f.filter_mode.c_str(),
      f.resource_prefix.c_str(), f.metrics_listen.empty() ? "-" : f.metrics_listen.c_str(),
      (*client)->server().c_str());

  std::chrono::milliseconds backoff(500);
  while (true) {
    Status s = service.Sync();
    if (s.ok()) break;
    VGPU_LOG_WARN("loading the cluster state: %s; retrying in %lld ms", s.message().c_str(),
                  static_cast<long long>(backoff.count()));
    if (WaitForSignal(signals, backoff)) {
      server.Stop();
      stop_webhook();
      return Status::Ok();
    }
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
  }
  service.Start();
  extender.set_ready(true);
  VGPU_LOG_INFO("ready");
  while (!WaitForSignal(signals, std::chrono::milliseconds(30000))) {
    if (webhook_server == nullptr || f.webhook_cert.empty()) continue;
    auto changed = cert_files.Read();
    if (!changed) {
      VGPU_LOG_WARN("re-reading the webhook certificate: %s", changed.error().message().c_str());
    } else if (*changed) {
      Status s = webhook_server->SetCertificate(cert_files.cert, cert_files.key);
      VGPU_LOG_INFO("webhook certificate %s%s",
                    s.ok() ? "reloaded" : "not reloaded: ", s.ok() ? "" : s.message().c_str());
    }
  }
  VGPU_LOG_INFO("stopping");
  extender.set_ready(false);
  stop_webhook();
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
      "Endpoints: POST /filter /prioritize /bind; GET /healthz /readyz /metrics. With "
      "--webhook-listen, also the mutating admission webhook (HTTPS) that sets "
      "spec.schedulerName of pods asking for these resources, so pods written for HAMi run "
      "unchanged.",
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
  app.add_option("--filter-mode", f.filter_mode,
                 "narrow: the filter answers only the nodes the placement engine ranks best "
                 "(kube-scheduler's own scoring then has no say among GPU placements, as in `vgpu "
                 "sim`); all: every feasible node, ranked by prioritize")
      ->capture_default_str();
  app.add_option("--narrow-tolerance", f.narrow_tolerance,
                 "narrow mode keeps the nodes whose extender score is at least 10 minus this "
                 "(0..10; 0 = the engine's choice alone)")
      ->capture_default_str();
  app.add_option("--threads", f.threads, "HTTP worker threads")->capture_default_str();
  app.add_option("--log-level", f.log_level, "0 silent, 1 errors, 2 warnings, 3 info, 4 debug")
      ->capture_default_str();
  app.add_flag("--no-per-gpu-metrics", f.no_per_gpu_metrics,
               "Leave out the per-GPU series of /metrics (large clusters)");
  app.add_option("--scheduler-name", f.scheduler_name,
                 "Profile name of the kube-scheduler that calls this extender; the webhook "
                 "writes it into GPU pods")
      ->capture_default_str();
  app.add_option("--webhook-listen", f.webhook_listen,
                 "Serve the admission webhook over HTTPS on this address, e.g. :9443 (\"\" = no "
                 "webhook)");
  app.add_option("--webhook-path", f.webhook_path, "URL path of the admission webhook")
      ->capture_default_str();
  app.add_option("--webhook-tls-cert", f.webhook_cert,
                 "PEM certificate file of the webhook (re-read when it changes)");
  app.add_option("--webhook-tls-key", f.webhook_key, "PEM private key file of --webhook-tls-cert");
  app.add_flag("--webhook-self-signed", f.webhook_self_signed,
               "Serve under a CA and certificate for --webhook-service made by the scheduler "
               "(kept in --webhook-secret) and write the CA into the caBundle of "
               "--webhook-config-name");
  app.add_option("--webhook-secret", f.webhook_secret,
                 "With --webhook-self-signed: Secret ([NAMESPACE/]NAME, namespace of "
                 "--webhook-service by default) that keeps the CA and serving certificate for "
                 "every replica and restart; made or renewed when missing, invalid or expiring "
                 "within 30 days (\"\" = a new CA at every start)")
      ->capture_default_str();
  app.add_option("--webhook-service", f.webhook_service,
                 "SERVICE.NAMESPACE of the webhook's Service (names of the generated certificate)")
      ->capture_default_str();
  app.add_option("--webhook-config-name", f.webhook_config,
                 "MutatingWebhookConfiguration whose caBundle gets the generated CA (\"\" = "
                 "leave it)")
      ->capture_default_str();
  app.add_option("--webhook-replace-scheduler", f.webhook_replace,
                 "schedulerName values the webhook replaces with --scheduler-name (repeatable; "
                 "\"*\" = any); a GPU pod naming another scheduler is left alone")
      ->capture_default_str();
  app.add_flag("--webhook-hide-gpus", f.webhook_hide_gpus,
               "Set NVIDIA_VISIBLE_DEVICES=none in containers that get no GPU slice");
  app.add_flag("--webhook-cpu-pods", f.webhook_cpu_pods,
               "Send pods without GPU requests to --scheduler-name too, so the extender places "
               "their CPU and memory where they strand no GPU");
  app.footer(PolicyHelp());
  AllowEmptyValues(
      app, {"--metrics-listen", "--webhook-listen", "--webhook-secret", "--webhook-config-name"});
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  return ReportStatus("scheduler", RunSchedulerServer(f));
}

}  // namespace vgpu::cli
