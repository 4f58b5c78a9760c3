// `vgpu node`: the node daemon (device plugin for kubelet, slices, health, GPU inventory,
// Prometheus metrics). Runs until SIGTERM or SIGINT, then shuts down cleanly: the device plugin
// socket is removed, ListAndWatch streams end, the metrics server closes.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "analyze/rules.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/daemon_setup.h"
#include "common/log.h"
#include "common/units.h"
#include "node/cluster/file_cluster.h"
#include "node/cluster/kube_cluster.h"
#include "node/daemon.h"
#include "node/plugin/unit_id.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

struct NodeFlags {
  DaemonGpuFlags gpu;
  std::string node_name;
  std::string kubelet_dir = "/var/lib/kubelet/device-plugins";
  std::string endpoint = "vgpu.sock";
  std::string resource_name = "nvidia.com/gpu";
  int units_per_gpu = 10;
  std::string slice_dir = "/var/lib/vgpu/slices";
  std::string libvgpu = "/usr/local/vgpu/libvgpu.so";
  std::string arbiter_dir = "/run/vgpu/arbiter";
  std::string compute_arbitration = "all";
  bool no_preload = false;
  std::string metrics_listen = ":9394";
  bool hami_aliases = false;
  bool dcgm_aliases = false;
  std::string pod_resources_socket = "/var/lib/kubelet/pod-resources/kubelet.sock";
  std::string kubeconfig;
  std::string pods_file;
  std::string health_recovery = "2m";
  std::string kernel_deadline = "60s";
  std::string ignore_xids;
  std::string sticky_xids;
  std::string tenant_levels;
  std::string rules;
  bool rules_dry_run = false;
  bool analyze = false;
  std::string analyze_step = "60s";
  bool analyze_step_given = false;
  std::string thrash;
  std::string spill_headroom = "4GiB";
  double spill_ratio = 1.5;
  std::string sample_interval = "5s";
  std::string pod_refresh = "5s";
  bool no_pod_watch = false;
  int log_level = 3;
  bool print_metrics = false;
  std::string device_list_strategy = "envvar";
  std::string cdi_kind = "nvidia.com/gpu";
  bool pass_device_specs = false;
  std::string gpu_modes;
  std::string mig_journal;
  std::string mps_control = "nvidia-cuda-mps-control";
  std::string mps_dir = "/run/vgpu/mps";
};

// "<domain>/<name>": a DNS subdomain and a name of letters, digits, '-', '_', '.'.
Status CheckResourceName(const std::string& name) {
  size_t slash = name.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == name.size() ||
      name.find('/', slash + 1) != std::string::npos) {
    return BadFlag("--resource-name",
                   "\"" + name + "\" is not <domain>/<name> (e.g. nvidia.com/gpu)");
  }
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
              c == '/' || (i > slash && ((c >= 'A' && c <= 'Z') || c == '_'));
    if (!ok) {
      return BadFlag("--resource-name", "\"" + name + "\" has the character '" + std::string(1, c) +
                                            "' at position " + std::to_string(i + 1));
    }
  }
  if (name.size() > 253) return BadFlag("--resource-name", "longer than 253 characters");
  return Status::Ok();
}

Result<int> DurationMs(const std::string& flag, const std::string& text, int64_t min_ms,
                       int64_t max_ms) {
  auto ns = ParseDuration(text, flag);
  if (!ns) return BadFlag(flag, ns.error().message());
  int64_t ms = *ns / 1'000'000;
  if (ms < min_ms || ms > max_ms) {
    return BadFlag(flag, "\"" + text + "\" is outside " + std::to_string(min_ms) + " ms .. " +
                             std::to_string(max_ms / 1000) + " s");
  }
  return static_cast<int>(ms);
}

Result<node::DaemonOptions> BuildOptions(const NodeFlags& f) {
  node::DaemonOptions o;
  o.node_name = f.node_name.empty() ? DefaultNodeName() : f.node_name;
  if (o.node_name.empty()) return BadFlag("--node-name", "not given, and $NODE_NAME is not set");
  if (f.units_per_gpu < 1 || f.units_per_gpu > node::kMaxUnitsPerGpu) {
    return BadFlag("--units-per-gpu", "must be 1.." + std::to_string(node::kMaxUnitsPerGpu) +
                                          ", got " + std::to_string(f.units_per_gpu));
  }
  o.units_per_gpu = f.units_per_gpu;
  VGPU_RETURN_IF_ERROR(CheckResourceName(f.resource_name));
  if (f.kubelet_dir.empty() || f.kubelet_dir.front() != '/') {
    return BadFlag("--kubelet-dir", "must be an absolute path, got \"" + f.kubelet_dir + "\"");
  }
  if (f.kubelet_dir.size() + f.endpoint.size() > 100) {
    return BadFlag("--kubelet-dir",
                   "the socket path would exceed the 107 characters of a unix socket");
  }
  if (f.endpoint.empty() || f.endpoint.find('/') != std::string::npos ||
      f.endpoint == "kubelet.sock") {
    return BadFlag("--endpoint",
                   "must be a plain file name other than kubelet.sock, got \"" + f.endpoint + "\"");
  }
  o.plugin.kubelet_dir = f.kubelet_dir;
  o.plugin.endpoint = f.endpoint;
  o.plugin.resource_name = f.resource_name;
  if (f.slice_dir.empty() || f.slice_dir.front() != '/') {
    return BadFlag("--slice-dir", "must be an absolute path, got \"" + f.slice_dir + "\"");
  }
  o.slices.root = f.slice_dir;
  if (f.libvgpu.empty() || f.libvgpu.front() != '/') {
    return BadFlag("--libvgpu", "must be an absolute path, got \"" + f.libvgpu + "\"");
  }
  o.slices.host_libvgpu = f.libvgpu;
  o.slices.preload = !f.no_preload;
  // The simulated GPU's contexts take no device memory: a slice's limit is all its own.
  if (f.gpu.sim) o.slices.context_overhead = 0;
  if (f.arbiter_dir.empty() || f.arbiter_dir.front() != '/') {
    return BadFlag("--arbiter-dir", "must be an absolute path, got \"" + f.arbiter_dir + "\"");
  }
  if (f.arbiter_dir.size() > 400) return BadFlag("--arbiter-dir", "longer than 400 characters");
  o.slices.arbiter_dir = f.arbiter_dir;
  if (f.compute_arbitration != "all" && f.compute_arbitration != "limited") {
    return BadFlag("--compute-arbitration",
                   "must be 'all' or 'limited', got \"" + f.compute_arbitration + "\"");
  }
  o.slices.arbitrate_all = f.compute_arbitration == "all";
  o.metrics_listen = f.metrics_listen == "off" ? "" : f.metrics_listen;
  if (!o.metrics_listen.empty()) {
    std::string host;
    int port = 0;
    Status s = node::ParseListenAddress(o.metrics_listen, &host, &port);
    if (!s.ok()) return BadFlag("--metrics-listen", s.message());
  }
  o.hami_aliases = f.hami_aliases;
  o.dcgm_aliases = f.dcgm_aliases;
  if (f.pod_resources_socket != "off") {
    if (f.pod_resources_socket.empty() || f.pod_resources_socket.front() != '/') {
      return BadFlag("--pod-resources-socket",
                     "must be an absolute path or 'off', got \"" + f.pod_resources_socket + "\"");
    }
    o.pod_resources_socket = f.pod_resources_socket;
  }
  auto recovery = DurationMs("--health-recovery", f.health_recovery, 0, 7LL * 24 * 3600 * 1000);
  if (!recovery) return recovery.error();
  o.health.gpu.probation_quiet_s = *recovery / 1000;
  if (f.kernel_deadline == "0") {
    o.health.kernel_deadline_ms = 0;  // off
  } else {
    auto deadline = DurationMs("--kernel-deadline", f.kernel_deadline, 1, 7LL * 24 * 3600 * 1000);
    if (!deadline) return deadline.error();
    o.health.kernel_deadline_ms = *deadline;
  }
  auto ignored = node::ParseXidList(f.ignore_xids);
  if (!ignored) return BadFlag("--health-ignore-xids", ignored.error().message());
  o.health.ignored_xids = *ignored;
  auto sticky = node::ParseXidList(f.sticky_xids);
  if (!sticky) return BadFlag("--health-sticky-xids", sticky.error().message());
  o.health.sticky_xids = *sticky;
  auto levels = node::faults::ParseTenantLevelRules(f.tenant_levels);
  if (!levels) return BadFlag("--tenant-levels", levels.error().message());
  o.tenant_levels = *levels;
  if (!f.rules.empty()) {
    auto rules = analyze::LoadRules(f.rules);  // checked here: a bad file is bad input (exit 2)
    if (!rules) return BadFlag("--rules", rules.error().message());
    o.rules_file = f.rules;
  } else if (f.rules_dry_run) {
    return BadFlag("--rules-dry-run", "needs --rules FILE");
  }
  o.rules_dry_run = f.rules_dry_run;
  if (f.analyze_step_given && !f.analyze) return BadFlag("--analyze-step", "needs --analyze");
  if (f.analyze) {
    auto step = DurationMs("--analyze-step", f.analyze_step, 100, 3600 * 1000);
    if (!step) return step.error();
    if (!f.rules.empty()) {
      auto rules = analyze::LoadRules(f.rules);
      if (rules && rules->interval_ns / 1'000'000 > *step) {
        return BadFlag("--analyze-step",
                       "\"" + f.analyze_step + "\" is shorter than the evaluation_interval of " +
                           f.rules + " (" + std::to_string(rules->interval_ns / 1'000'000) +
                           " ms), whose rounds feed the analyses");
      }
    }
    o.analyze = true;
    o.analyze_step_ms = *step;
  }
  auto thrash = node::ParseThrashRules(f.thrash);
  if (!thrash) return BadFlag("--spill-thrash", thrash.error().message());
  o.thrash = *thrash;
  auto headroom = ParseByteSize(f.spill_headroom, "--spill-headroom");
  if (!headroom) return BadFlag("--spill-headroom", headroom.error().message());
  o.spill.headroom = *headroom;
  if (!(f.spill_ratio >= 1.0 && f.spill_ratio <= 10.0)) {
    return BadFlag("--spill-ratio", std::to_string(f.spill_ratio) + ": must be between 1 and 10");
  }
  o.spill.max_ratio = f.spill_ratio;
  auto sample = DurationMs("--sample-interval", f.sample_interval, 100, 3600 * 1000);
  if (!sample) return sample.error();
  o.sample_interval_ms = *sample;
  auto refresh = DurationMs("--pod-refresh", f.pod_refresh, 100, 3600 * 1000);
  if (!refresh) return refresh.error();
  o.pod_refresh_ms = *refresh;
  o.watch_pods = !f.no_pod_watch;
  Status strategy = node::ParseDeviceListStrategy(f.device_list_strategy, &o.device_list);
  if (!strategy.ok()) return BadFlag("--device-list-strategy", strategy.message());
  Status kind = node::CheckCdiKind(f.cdi_kind);
  if (!kind.ok()) return BadFlag("--cdi-kind", kind.message());
  o.device_list.cdi_kind = f.cdi_kind;
  o.device_list.pass_device_specs = f.pass_device_specs;
  if (!f.gpu_modes.empty()) {
    auto modes = node::LoadGpuModeConfig(f.gpu_modes);
    if (!modes) return modes.error().WithContext("--gpu-modes");
    o.gpu_modes = std::move(*modes);
  }
  if (!f.mig_journal.empty() && f.mig_journal[0] != '/') {
    return BadFlag("--mig-journal", "must be an absolute path, got \"" + f.mig_journal + "\"");
  }
  o.mig_journal = f.mig_journal;
  if (!f.mps_dir.empty() && f.mps_dir[0] != '/') {
    return BadFlag("--mps-dir", "must be an absolute path, got \"" + f.mps_dir + "\"");
  }
  o.mps.control_binary = f.mps_control;
  o.mps.root = f.mps_dir;
  o.observe_only = f.print_metrics;
  o.version = VGPU_VERSION;
  return o;
}

Result<std::unique_ptr<node::ClusterClient>> OpenCluster(const NodeFlags& f) {
  const bool in_cluster = std::getenv("KUBERNETES_SERVICE_HOST") != nullptr;
  if (!f.pods_file.empty() || (f.kubeconfig.empty() && !in_cluster)) {
    if (!f.pods_file.empty()) {
      std::error_code ec;
      if (!fs::is_regular_file(f.pods_file, ec)) {
        return BadFlag("--pods-file",
                       (fs::exists(f.pods_file, ec) ? "not a regular file: " : "no such file: ") +
                           f.pods_file);
      }
    } else {
      VGPU_LOG_WARN(
          "no API server (--kubeconfig not given, not in a cluster) and no "
          "--pods-file: no pod can be allocated; the inventory is only logged");
    }
    return std::unique_ptr<node::ClusterClient>(new node::FileCluster(f.pods_file));
  }
  auto cluster = node::KubeCluster::Connect(f.kubeconfig);
  if (!cluster) {
    const Status& e = cluster.error();
    if (!f.kubeconfig.empty() &&
        (e.code() == StatusCode::kInvalidArgument || e.code() == StatusCode::kNotFound)) {
      return BadFlag("--kubeconfig", e.message());
    }
    return e;
  }
  return std::unique_ptr<node::ClusterClient>(std::move(*cluster));
}

Status RunNodeDaemon(const NodeFlags& f) {
  // Taken at the end; blocked before anything starts a thread.
  StopSignals stop;
  VGPU_RETURN_IF_ERROR(SetUpDaemonLog(f.log_level, "vgpu node"));
  VGPU_RETURN_IF_ERROR(CheckDaemonGpuFlags(f.gpu));
  auto options = BuildOptions(f);
  if (!options) return options.error();
  auto cluster = OpenCluster(f);
  if (!cluster) return cluster.error();
  auto backend = OpenDaemonBackend(f.gpu);
  if (!backend) return backend.error();
  device::InjectingBackend* injector =
      f.gpu.sim ? static_cast<device::InjectingBackend*>(backend->get()) : nullptr;

  node::Daemon daemon(std::move(*options), std::move(*backend), cluster->get(), injector);
  VGPU_RETURN_IF_ERROR(daemon.Start());
  if (f.print_metrics) {
    daemon.HousekeepNow();
    std::string text = daemon.Metrics();
    daemon.Stop();
    std::fputs(text.c_str(), stdout);
    return Status::Ok();
  }
  VGPU_LOG_INFO("running on node %s; metrics on %s",
                f.node_name.empty() ? DefaultNodeName().c_str() : f.node_name.c_str(),
                f.metrics_listen.c_str());
  stop.Wait();
  daemon.Stop();
  return Status::Ok();
}

}  // namespace

int RunNode(int argc, char** argv) {
  CLI::App app(
      "Runs the vgpu node daemon: a Kubernetes device plugin that advertises each GPU as shareable "
      "units, gives every container its own slice (libvgpu.so preloaded, a read-only limits file, "
      "an accounting region, its GPUs), reports GPU health to kubelet, publishes the node's GPU "
      "inventory and serves Prometheus metrics. Stops on SIGTERM.",
      "vgpu node");
  NodeFlags f;
  AddDaemonGpuFlags(app, &f.gpu);
  app.add_option("--node-name", f.node_name,
                 "This node's name (default: $NODE_NAME, else the host name)");
  app.add_option("--kubelet-dir", f.kubelet_dir, "kubelet's device-plugin socket directory")
      ->capture_default_str();
  app.add_option("--endpoint", f.endpoint, "File name of the plugin's socket in --kubelet-dir")
      ->capture_default_str();
  app.add_option("--resource-name", f.resource_name, "Extended resource advertised to kubelet")
      ->capture_default_str();
  app.add_option("--units-per-gpu", f.units_per_gpu,
                 "Shareable units per GPU (the most containers that may share one GPU)")
      ->capture_default_str();
  app.add_option("--slice-dir", f.slice_dir, "Host directory of the per-container slices")
      ->capture_default_str();
  app.add_option("--libvgpu", f.libvgpu, "Host path of libvgpu.so, mounted into containers")
      ->capture_default_str();
  app.add_option("--arbiter-dir", f.arbiter_dir,
                 "Host directory of the per-GPU compute arbiters, mounted at the same path into "
                 "every container (use a tmpfs)")
      ->capture_default_str();
  app.add_option("--compute-arbitration", f.compute_arbitration,
                 "'all': every slice takes turns through its GPUs' arbiters, so priorities and "
                 "guarantees hold against every container; 'limited': only slices with compute "
                 "settings (gpucores below 100, a priority other than normal, vgpu.io/compute)")
      ->capture_default_str();
  app.add_flag("--no-preload", f.no_preload,
               "Do not mount /etc/ld.so.preload (the image preloads libvgpu.so itself)");
  app.add_option("--metrics-listen", f.metrics_listen, "Address of /metrics, or 'off'")
      ->capture_default_str();
  app.add_flag("--hami-metric-aliases", f.hami_aliases,
               "Also emit HAMi's metric names, for existing dashboards");
  app.add_flag("--dcgm-metric-aliases", f.dcgm_aliases,
               "Also emit dcgm-exporter's metric names (DCGM_FI_*), for existing dashboards");
  app.add_option("--pod-resources-socket", f.pod_resources_socket,
                 "kubelet's PodResources socket, to verify each container's slice before it "
                 "starts; 'off' disables")
      ->capture_default_str();
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (default: in-cluster service account when in a pod)");
  app.add_option("--pods-file", f.pods_file,
                 "Without an API server: read this node's pods from a JSON pod list");
  app.add_option("--health-recovery", f.health_recovery,
                 "Probation: after a reset and a passing probe, a GPU is healthy again after "
                 "this long without a new XID")
      ->capture_default_str();
  app.add_option("--kernel-deadline", f.kernel_deadline,
                 "A kernel running longer makes its GPU suspect and is a signal for its tenant, "
                 "where the GPU reports running kernels (the simulated GPU); 0 turns it off")
      ->capture_default_str();
  app.add_option("--health-ignore-xids", f.ignore_xids,
                 "XIDs counted as harmless whatever NVIDIA's catalog says (docs/faults.md)")
      ->capture_default_str();
  app.add_option("--health-sticky-xids", f.sticky_xids,
                 "XIDs after which a GPU stays out of service until a recovery is reported")
      ->capture_default_str();
  app.add_option("--tenant-levels", f.tenant_levels,
                 "Quarantine levels of a tenant, field=value,... (warn, limit, pause, terminate "
                 "strikes; quiet; limit-share; *-weight (stuck-kernel-weight too); oom-storm, "
                 "oom-window, ramp-pct, "
                 "ramp-window): docs/faults.md");
  app.add_option("--rules", f.rules,
                 "Tuning rules (YAML, docs/analyze.md; deploy/analyze/rules.yaml) evaluated over "
                 "the node's slices and GPUs, their actions taken on them");
  app.add_flag(
      "--rules-dry-run", f.rules_dry_run,
      "Log and count what the rules would do (vgpu_rule_actions_total{outcome=\"dry_run\"}) "
      "without doing it");
  app.add_flag("--analyze", f.analyze,
               "Run the analyses of `vgpu analyze` online (docs/analyze.md): anomalies per slice "
               "and GPU (a Warning Event VgpuAnomaly each), utilization forecasts per GPU and for "
               "the node, memory right-sizing per slice, on /metrics");
  app.add_option("--analyze-step", f.analyze_step,
                 "The analyses' sample step (at least the rules' evaluation_interval; the "
                 "detectors' windows are in steps: 60 s matches the offline defaults)")
      ->capture_default_str();
  app.add_option("--spill-thrash", f.thrash,
                 "When a spilling slice thrashes: link=RATE (its GPU's host link receives at "
                 "least this, default 2GB/s), rounds=N (that many sampling rounds in a row, "
                 "default 3); each further round is a `thrash` signal to --tenant-levels "
                 "(docs/oversubscription.md)");
  app.add_option("--spill-headroom", f.spill_headroom,
                 "Host memory kept free when admitting a container in memory mode spill")
      ->capture_default_str();
  app.add_option("--spill-ratio", f.spill_ratio,
                 "Most memory a GPU's slices may be promised with spill, as a multiple of its "
                 "own (1-10)")
      ->capture_default_str();
  app.add_option("--sample-interval", f.sample_interval, "How often GPUs are sampled")
      ->capture_default_str();
  app.add_option("--pod-refresh", f.pod_refresh,
                 "How often slices of gone pods are removed (and the node's pods listed, while "
                 "no pod watch is live)")
      ->capture_default_str();
  app.add_flag("--no-pod-watch", f.no_pod_watch,
               "List the node's pods every --pod-refresh instead of watching them");
  AddLogLevelFlag(app, &f.log_level);
  app.add_option("--device-list-strategy", f.device_list_strategy,
                 "How containers get their GPUs: envvar (NVIDIA_VISIBLE_DEVICES, for the NVIDIA "
                 "container runtime), cdi-annotations, cdi-cri (CDI devices <--cdi-kind>=<UUID>); "
                 "comma-separated to combine")
      ->capture_default_str();
  app.add_option("--cdi-kind", f.cdi_kind, "Vendor/class of the node's CDI GPU devices")
      ->capture_default_str();
  app.add_flag("--pass-device-specs", f.pass_device_specs,
               "Also hand containers the GPUs' device nodes (/dev/nvidia*)");
  app.add_option("--gpu-modes", f.gpu_modes,
                 "GPU mode file (YAML: shared, whole, mig, mig-dynamic, mps per GPU; docs/mig.md)");
  app.add_option("--mig-journal", f.mig_journal,
                 "Claims journal of mig-dynamic instances (default: next to --slice-dir)");
  app.add_option("--mps-control", f.mps_control, "The MPS control binary, for GPUs in mode mps")
      ->capture_default_str();
  app.add_option("--mps-dir", f.mps_dir, "Root of the MPS pipe and log directories")
      ->capture_default_str();
  app.add_flag("--print-metrics", f.print_metrics,
               "Print one scrape of /metrics to stdout and exit; creates, removes and publishes "
               "nothing");
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  f.analyze_step_given = app.count("--analyze-step") > 0;
  return ReportStatus("node", RunNodeDaemon(f));
}

}  // namespace vgpu::cli
