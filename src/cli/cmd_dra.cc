// `vgpu dra`: the Kubernetes DRA driver (resource.k8s.io/v1) for this node: registers with
// kubelet as DRA plugin gpu.vgpu.io, prepares claims into slices (libvgpu.so, limits file,
// accounting region) handed to containers by CDI, publishes the node's ResourceSlices, serves
// /healthz, /readyz and /metrics on --health-listen. Runs until SIGTERM or SIGINT. With
// --dry-run it prints what it would publish (dra/dry_run.h) and exits, touching nothing.
// docs/dra.md.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/daemon_setup.h"
#include "common/log.h"
#include "dra/agent.h"
#include "dra/driver.h"
#include "dra/dry_run.h"
#include "dra/gpu_offers.h"
#include "dra/kube_api.h"
#include "dra/plugin_server.h"
#include "k8s/api/http_kube_client.h"
#include "k8s/api/kube_config.h"
#include "node/metrics/metrics_server.h"
#include "node/modes/gpu_modes.h"

namespace vgpu::cli {
namespace {

namespace fs = std::filesystem;

struct DraFlags {
  DaemonGpuFlags gpu;
  std::string node_name;
  std::string kubeconfig;
  std::string driver = dra::kDriverName;
  std::string registry_dir = "/var/lib/kubelet/plugins_registry";
  std::string plugin_dir;
  std::string cdi_dir = "/var/run/cdi";
  std::string state_dir = "/var/lib/vgpu/dra";
  std::string libvgpu = "/usr/local/vgpu/libvgpu.so";
  std::string arbiter_dir = "/run/vgpu/arbiter";
  std::string nvidia_cdi_kind = "nvidia.com/gpu";
  std::string gpu_modes;
  std::string slice_layout = "auto";
  std::string health_listen = ":9395";
  bool dry_run = false;
  bool no_preload = false;
  int sample_interval_ms = 5000;
  int log_level = 3;
};

// --slice-layout: null for "auto" (the API server's version decides).
Result<std::optional<dra::SliceLayout>> ParseSliceLayout(const std::string& text) {
  if (text == "auto") return std::optional<dra::SliceLayout>();
  for (dra::SliceLayout l :
       {dra::SliceLayout::kCountersApart, dra::SliceLayout::kCountersWithDevices}) {
    if (text == dra::SliceLayoutName(l)) return std::optional<dra::SliceLayout>(l);
  }
  return BadFlag("--slice-layout", "\"" + text + "\" is not auto, 1.34 or 1.35");
}

dra::DriverOptions DriverOptionsOf(const DraFlags& f, const std::string& node) {
  dra::DriverOptions options;
  options.driver = f.driver;
  options.pool = node;
  options.cdi_dir = f.cdi_dir;
  options.state_dir = f.state_dir;
  options.slices.host_libvgpu = f.libvgpu;
  options.slices.container_libvgpu = f.libvgpu;
  options.slices.arbiter_dir = f.arbiter_dir;
  options.slices.preload = !f.no_preload;
  if (f.gpu.sim) options.slices.context_overhead = 0;
  options.nvidia_cdi_kind = f.nvidia_cdi_kind;
  return options;
}

// --dry-run: the slices and CDI specs of this node's GPUs on stdout; nothing is changed.
Status DryRun(const DraFlags& f, const std::string& node, const node::GpuModeConfig& modes,
              std::optional<dra::SliceLayout> layout) {
  auto backend = OpenDaemonBackend(f.gpu);
  if (!backend) return backend.error();
  auto gpus = (*backend)->Discover();
  if (!gpus) return gpus.error();
  if (gpus->empty()) return Status::FailedPrecondition("no GPU found");
  dra::DryRunInput in;
  in.options = DriverOptionsOf(f, node);
  in.gpus = *gpus;
  in.offers = dra::PlanGpuOffers(backend->get(), *gpus, modes);
  in.slice_gpus = dra::Agent(dra::AgentOptions{}, backend->get(), *gpus, nullptr).Gpus();
  in.backend = backend->get();
  in.layout = layout.value_or(dra::SliceLayout::kCountersApart);
  const std::string text = dra::DryRun(in).dump(2) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  return Status::Ok();
}

std::string DraMetrics(const dra::Driver& driver, const dra::SlicePublisher& publisher,
                       const dra::PluginServer& server) {
  std::string out;
  const auto gauge = [&out](const char* name, const char* type, const char* help, double v) {
    char line[64];
    std::snprintf(line, sizeof line, "%.17g", v);
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
           name + " " + line + "\n";
  };
  gauge("vgpu_dra_prepared_claims", "gauge", "ResourceClaims prepared on this node.",
        static_cast<double>(driver.prepared_count()));
  gauge("vgpu_dra_resourceslice_generation", "gauge",
        "Pool generation of the node's published ResourceSlices (0: none yet).",
        static_cast<double>(publisher.generation()));
  gauge("vgpu_dra_resourceslices_published", "gauge",
        "1 when the last ResourceSlice publication succeeded, else 0.",
        publisher.published() ? 1.0 : 0.0);
  gauge("vgpu_dra_kubelet_registrations_total", "counter",
        "Registrations kubelet confirmed (NotifyRegistrationStatus).",
        static_cast<double>(server.registrations()));
  return out;
}

Status RunDraPlugin(const DraFlags& f) {
  // Taken at the end; blocked before anything starts a thread.
  StopSignals stop;
  VGPU_RETURN_IF_ERROR(SetUpDaemonLog(f.log_level, "vgpu dra"));
  VGPU_RETURN_IF_ERROR(CheckDaemonGpuFlags(f.gpu));
  if (f.sample_interval_ms < 100) return BadFlag("--sample-interval-ms", "must be >= 100");
  const std::string node = f.node_name.empty() ? DefaultNodeName() : f.node_name;
  if (node.empty()) return BadFlag("--node-name", "not given, and no $NODE_NAME or host name");
  auto layout = ParseSliceLayout(f.slice_layout);
  if (!layout) return layout.error();
  const std::string health_listen = f.health_listen == "off" ? "" : f.health_listen;
  if (!health_listen.empty()) {
    std::string host;
    int port = 0;
    if (Status s = node::ParseListenAddress(health_listen, &host, &port); !s.ok()) {
      return BadFlag("--health-listen", s.message());
    }
  }

  node::GpuModeConfig modes;
  if (!f.gpu_modes.empty()) {
    auto loaded = node::LoadGpuModeConfig(f.gpu_modes);
    if (!loaded) return BadFlag("--gpu-modes", loaded.error().message());
    modes = std::move(*loaded);
  }
  if (f.dry_run) return DryRun(f, node, modes, *layout);

  auto config = k8s::LoadDefaultConfig(f.kubeconfig);
  if (!config)
    return f.kubeconfig.empty() ? config.error()
                                : BadFlag("--kubeconfig", config.error().message());
  k8s::ClientOptions client_options;
  client_options.user_agent = "vgpu-dra";
  auto client = k8s::HttpKubeClient::Create(*config, client_options);
  if (!client) return client.error();

  auto backend = OpenDaemonBackend(f.gpu);
  if (!backend) return backend.error();
  auto gpus = (*backend)->Discover();
  if (!gpus) return gpus.error();
  if (gpus->empty()) return Status::FailedPrecondition("no GPU found");
  std::vector<int> present;
  for (const device::DeviceInfo& d : *gpus) present.push_back(d.index);
  if (Status s = node::CheckGpuModeDevices(modes, present); !s.ok()) {
    return BadFlag("--gpu-modes", s.message());
  }

  dra::SlicePublisher publisher(client->get(), node, f.driver, *layout);
  dra::Agent agent(dra::AgentOptions{.sample_interval_ms = f.sample_interval_ms}, backend->get(),
                   *gpus, &publisher);
  dra::KubeClaimSource claims(client->get());
  dra::Driver driver(DriverOptionsOf(f, node), *gpus, &claims,
                     [&agent](const std::string& uuid) { return agent.Healthy(uuid); });
  VGPU_RETURN_IF_ERROR(driver.Init());
  // The GPUs' modes (MIG), leaving alone those that prepared claims use.
  const std::vector<dra::GpuOffer> offers =
      dra::SetUpGpuOffers(backend->get(), *gpus, modes, driver.GpusInUse());
  VGPU_RETURN_IF_ERROR(driver.EnableMig(backend->get(), offers));
  agent.SetOffers(offers);
  dra::PluginServer server(
      dra::PluginServerOptions{.registry_dir = f.registry_dir, .plugin_dir = f.plugin_dir},
      &driver);
  VGPU_RETURN_IF_ERROR(server.Start());
  // Live while the process serves; ready once kubelet registered the plugin and the node's
  // ResourceSlices are published.
  node::MetricsServer health([&] { return DraMetrics(driver, publisher, server); }, nullptr);
  health.SetNotReadyReason([&]() -> std::string {
    if (server.registrations() == 0) return "not registered with kubelet";
    if (!publisher.published()) return "ResourceSlices not published (the log says why)";
    return "";
  });
  if (!health_listen.empty()) {
    if (Status s = health.Start(health_listen); !s.ok()) {
      server.Stop();
      return Status(s.code(), "--health-listen: " + s.message());
    }
  }
  agent.Start();
  VGPU_LOG_INFO("DRA driver %s on node %s: %zu GPUs", f.driver.c_str(), node.c_str(), gpus->size());
  stop.Wait();
  health.Stop();
  server.Stop();
  agent.Stop();
  return Status::Ok();
}

}  // namespace

int RunDra(int argc, char** argv) {
  CLI::App app(
      "Runs the vgpu Kubernetes DRA driver (resource.k8s.io/v1, Kubernetes 1.34 or later) on this "
      "node: publishes the GPUs as ResourceSlices (shareable by memory and cores), registers with "
      "kubelet as a DRA plugin, and prepares each allocated ResourceClaim as an enforced slice "
      "(libvgpu.so, a read-only limits file, an accounting region) handed to the container "
      "by a CDI spec. Stops on SIGTERM. See docs/dra.md.",
      "vgpu dra");
  DraFlags f;
  AddDaemonGpuFlags(app, &f.gpu);
  app.add_option("--node-name", f.node_name,
                 "This node's name, the pool of its ResourceSlices (default: $NODE_NAME, else "
                 "the host name)");
  app.add_option("--kubeconfig", f.kubeconfig,
                 "kubeconfig file (default: in-cluster service account, $KUBECONFIG, "
                 "~/.kube/config)");
  app.add_option("--driver-name", f.driver, "DRA driver name")->capture_default_str();
  app.add_option("--registry-dir", f.registry_dir, "kubelet's plugin registration directory")
      ->capture_default_str();
  app.add_option("--plugin-dir", f.plugin_dir,
                 "Directory of the driver's dra.sock (default /var/lib/kubelet/plugins/<driver>)");
  app.add_option("--cdi-dir", f.cdi_dir, "Directory of the CDI specs the runtime reads")
      ->capture_default_str();
  app.add_option("--state-dir", f.state_dir,
                 "Directory of the checkpoint and the claims' slices (host path)")
      ->capture_default_str();
  app.add_option("--libvgpu", f.libvgpu, "Host path of libvgpu.so, mounted into containers")
      ->capture_default_str();
  app.add_option("--arbiter-dir", f.arbiter_dir,
                 "Host directory of the per-GPU compute arbiters (shared with vgpu node)")
      ->capture_default_str();
  app.add_option("--nvidia-cdi-kind", f.nvidia_cdi_kind,
                 "Also return <kind>=<GPU UUID> CDI ids for the NVIDIA runtime's spec "
                 "(nvidia-ctk cdi generate --device-name-strategy=uuid); '' for none")
      ->capture_default_str();
  app.add_option("--gpu-modes", f.gpu_modes,
                 "GPU mode file (docs/mig.md, \"The node\"): mig GPUs offer their instances, "
                 "mig-dynamic GPUs every MIG placement and software slices (docs/dra.md)");
  app.add_option("--slice-layout", f.slice_layout,
                 "ResourceSlice layout: 1.35 (counter sets in slices of their own, Kubernetes "
                 "1.35 and later), 1.34 (counter sets with the devices that consume them), or "
                 "auto (by the API server's version; --dry-run: 1.35)")
      ->capture_default_str();
  app.add_option("--health-listen", f.health_listen,
                 "Address of /healthz (live), /readyz (registered with kubelet and ResourceSlices "
                 "published) and /metrics; off for none")
      ->capture_default_str();
  app.add_flag("--dry-run", f.dry_run,
               "Print the ResourceSlices and CDI specs this node would publish (JSON) and exit: "
               "no API server, kubelet or GPU change needed (with --sim, simulated GPUs)");
  app.add_flag("--no-preload", f.no_preload,
               "Do not mount /etc/ld.so.preload (the image preloads libvgpu.so itself)");
  app.add_option("--sample-interval-ms", f.sample_interval_ms, "How often GPUs are sampled")
      ->capture_default_str();
  AddLogLevelFlag(app, &f.log_level);
  AllowEmptyValues(app, {"--nvidia-cdi-kind"});
  if (auto code = ParseArgs(app, argc, argv)) return *code;
  return ReportStatus("dra", RunDraPlugin(f));
}

}  // namespace vgpu::cli
