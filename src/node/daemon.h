// Daemon: the node daemon's parts wired together, with their threads.
//
//   discovery   DeviceBackend::Discover() once at Start(); the GPUs do not change while it runs
//   plugin      PluginRunner: serve the device plugin, register, follow kubelet restarts; one
//               more per MIG profile of the GPUs in mode mig (NVIDIA's nvidia.com/mig-<profile>)
//   health      a thread waiting for driver events; a sampler thread (every sample_interval)
//               that also feeds failures to the health rules (node/health.h, docs/faults.md);
//               health changes reach kubelet through ListAndWatch and the API server through
//               the inventory annotation and an Event on the node; the resets and probes of
//               quarantined GPUs run on these threads
//   pods        a watch of the node's pods (when the cluster client can watch and watch_pods
//               is set) updates the assignments as pods are bound; a housekeeping thread
//               (every pod_refresh) lists the node's pods when there is no live watch, removes
//               the slices of pods that are gone, publishes the inventory
//   metrics     MetricsServer on metrics_listen (empty: none)
//
// Start() fails (and starts nothing) when discovery fails or no GPU is found. Stop() ends
// everything and is safe to call twice.
//
// With `observe_only` (`vgpu node --print-metrics`) Start() only discovers the GPUs, lists the
// node's pods and takes one sample, and HousekeepNow() only lists the pods again: no directory,
// file or socket is created, no slice is removed, nothing is written to the API server, no
// thread is started. Metrics() then tells what the daemon would report.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "common/clock.h"
#include "device/device_backend.h"
#include "device/injecting_backend.h"
#include "node/cluster/cluster.h"
#include "node/cluster/pod_sync.h"
#include "node/faults/tenant_levels.h"
#include "node/health.h"
#include "node/inventory.h"
#include "node/metrics/metrics_server.h"
#include "node/modes/gpu_mode_setup.h"
#include "node/modes/gpu_modes.h"
#include "node/modes/mig_manager.h"
#include "node/modes/mps.h"
#include "node/node_state.h"
#include "node/plugin/allocator.h"
#include "node/plugin/assignment_store.h"
#include "node/plugin/device_list.h"
#include "node/plugin/plugin_runner.h"
#include "node/plugin/pod_resources.h"
#include "node/rules/spill_thrash.h"
#include "node/slice.h"
#include "node/slice_quarantine.h"
#include "node/slice_region.h"

namespace vgpu::node {

struct DaemonOptions {
  std::string node_name;
  int units_per_gpu = 10;
  PluginOptions plugin;
  SliceLayout slices;
  HealthRules health;
  // Per-tenant quarantine levels (docs/faults.md).
  faults::TenantLevelRules tenant_levels;
  // Thrash of spilling slices into `thrash` signals (node/rules/spill_thrash.h).
  ThrashRules thrash;
  // Admission of containers in memory mode spill (node/plugin/allocator.h; the host's memory is
  // read from <proc_root>/meminfo).
  slice::SpillPolicy spill;
  std::string metrics_listen = ":9394";
  bool hami_aliases = false;
  bool dcgm_aliases = false;  // dcgm-exporter's names too (node/metrics/metrics_telemetry.h)
  int sample_interval_ms = 5000;
  int pod_refresh_ms = 5000;
  // Watch the node's pods (ClusterClient::WatchPodsOnNode) rather than only listing them.
  bool watch_pods = true;
  int64_t slice_grace_seconds = 60;
  std::string proc_root = "/proc";
  // kubelet's PodResources socket, to verify each container's slice at PreStartContainer;
  // empty: no verification (PreStartContainer is then not requested).
  std::string pod_resources_socket;
  std::string version = "dev";
  bool observe_only = false;
  // How Allocate hands a container its GPUs (NVIDIA_VISIBLE_DEVICES, CDI, device nodes).
  DeviceListOptions device_list;
  // Per-GPU modes (node/modes/gpu_modes.h; empty: every GPU shared), applied at Start on idle GPUs.
  GpuModeConfig gpu_modes;
  // The MIG manager's claims journal (node/modes/mig_manager.h); empty: <slice root>/../mig-claims.
  std::string mig_journal;
  MpsOptions mps;
  // Tuning rules (analyze/rules.h, docs/analyze.md) evaluated every evaluation_interval over
  // the node's signals and carried out on its slices and GPUs (node/rules/rule_engine.h); empty:
  // none.
  std::string rules_file;
  // The rules' actions are logged and counted, not carried out.
  bool rules_dry_run = false;
  // The analyses online (node/rules/online_analysis.h, docs/analyze.md): anomalies per slice and
  // GPU, utilization forecasts per GPU and for the node, memory right-sizing per slice, on a grid
  // of analyze_step_ms, fed by the rules' rounds (every evaluation_interval; every step without
  // --rules). The step is at least the rules' evaluation_interval.
  bool analyze = false;
  int64_t analyze_step_ms = 60'000;
  // The analyses' clock (tests); null: the monotonic clock.
  const Clock* analysis_clock = nullptr;
};

class RuleEngine;
class OnlineAnalysis;

class Daemon {
 public:
  // `backend` is owned. `cluster` is not owned and must outlive the daemon. `injector`, when
  // not null, is the backend itself seen as an InjectingBackend (enables /sim/health).
  Daemon(DaemonOptions options, std::unique_ptr<device::DeviceBackend> backend,
         ClusterClient* cluster, device::InjectingBackend* injector = nullptr);
  ~Daemon();

  Status Start();
  void Stop();

  std::string Metrics() const;
  int metrics_port() const { return metrics_ ? metrics_->port() : 0; }
  NodeState* state() { return state_.get(); }
  Allocator* allocator() { return allocator_.get(); }
  PluginRunner* runner() { return runner_.get(); }
  // The plugins of NVIDIA's MIG resources (one per profile of the GPUs in mode mig at Start).
  const std::vector<std::unique_ptr<PluginRunner>>& mig_runners() const { return mig_runners_; }
  AssignmentStore* store() { return &store_; }
  PodSync* pods() { return pods_.get(); }
  SliceManager* slices() { return &slices_; }
  InventoryPublisher* inventory() { return inventory_.get(); }
  MigManager* mig() { return mig_.get(); }
  const std::vector<GpuModeOutcome>& mode_outcomes() const { return mode_outcomes_; }
  // Runs one sampling round, one health tick, one tenant round and one housekeeping round now
  // (tests).
  void SampleNow();
  // Tenants' quarantine levels (a copy).
  std::vector<faults::TenantStatus> Tenants() const;
  // Feeds a tenant signal as the attributed-signal paths do (tests, a rules engine).
  void TenantSignal(const std::string& slice, faults::TenantSignal signal, int count,
                    const std::string& what);
  void HousekeepNow();
  // One evaluation of the tuning rules now (tests); nothing without --rules.
  void RulesNow();
  RuleEngine* rules() { return rules_.get(); }
  // The online analyses (--analyze), null without.
  OnlineAnalysis* analysis() { return analysis_.get(); }

 private:
  void HealthLoop();
  void SampleLoop();
  void HousekeepingLoop();
  Status SetUpModes();
  void OnHealthChanged();
  // Carries out what the health rules asked for: resets, probes, Kubernetes Events.
  void RunHealthActions();
  // Counters and memory of every slice into the tenant levels; their quiet periods.
  void TenantRound();
  // The slice whose region lists host pid `pid` (*why says why there is none).
  std::optional<std::string> SliceOfHostPid(uint32_t pid, std::string* why) const;
  // An XID that names its process: a signal for that process's slice.
  void AttributeXid(const device::HealthEvent& event);
  // An application or ignore class XID with MIG instance ids and no process: a signal for the
  // instance's only tenant (node/modes/mig_tenant.h). True when it was attributed.
  bool AttributeMigXid(const device::HealthEvent& event);
  // The kernel running on GPU `uuid` (where the backend reports it): past the kernel deadline,
  // the GPU is Suspect and the kernel's tenant gets a signal (once per kernel). True when the
  // GPU's schedulable state changed.
  bool CheckRunningKernel(const std::string& uuid,
                          const std::optional<device::DeviceSample::RunningKernel>& kernel);
  Status Inject(const MetricsServer::InjectRequest& request);
  // kInvalidArgument unless (gi, ci) is a complete MIG instance of `gpu` now.
  Status CheckInjectedInstance(const device::DeviceInfo& gpu, uint32_t gi, uint32_t ci) const;
  bool WaitStop(int ms);
  // Loads options_.rules_file and sets up the engine (daemon_rules.cc).
  Status StartRules();
  void RulesLoop();
  void RulesRound(int64_t scheduled_ns);
  std::string RulesMetrics() const;
  // Sets up the online analyses, fed by the rules' rounds (daemon_analysis.cc).
  Status StartAnalysis();
  void AnalysisRound(const std::vector<std::tuple<std::string, std::string, double>>& samples);
  std::string AnalysisMetrics() const;

  DaemonOptions options_;
  std::unique_ptr<device::DeviceBackend> backend_;
  ClusterClient* cluster_;
  device::InjectingBackend* injector_;
  std::unique_ptr<NodeState> state_;
  AssignmentStore store_;
  SliceManager slices_;
  std::unique_ptr<PodSync> pods_;
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<PodResourcesSource> pod_resources_;
  std::unique_ptr<PluginRunner> runner_;
  std::vector<std::unique_ptr<PluginRunner>> mig_runners_;
  std::unique_ptr<InventoryPublisher> inventory_;
  mutable RegionCache regions_;  // the slices' regions, mapped between scrapes (metrics)
  std::unique_ptr<MpsManager> mps_;
  std::unique_ptr<MigManager> mig_;
  std::vector<GpuModeOutcome> mode_outcomes_;
  std::unique_ptr<MetricsServer> metrics_;
  std::unique_ptr<SliceQuarantine> quarantine_;
  mutable std::mutex tenant_mu_;  // guards tenants_
  std::unique_ptr<faults::TenantLevels> tenants_;
  std::mutex rules_mu_;  // one rule round at a time
  // The rules' clock: each round's scheduled time (monotonic), so that `for:` counts whole
  // intervals however late a round starts (as Prometheus evaluates at its scheduled times).
  SimulatedClock rules_clock_;
  std::unique_ptr<RuleEngine> rules_;
  mutable std::mutex analysis_mu_;  // guards analysis_'s state
  std::unique_ptr<OnlineAnalysis> analysis_;
  std::mutex stuck_mu_;  // guards stuck_kernels_
  // GPUs with a kernel past the deadline: its pid and how long it had run at the last round.
  std::map<std::string, std::pair<uint32_t, int64_t>> stuck_kernels_;
  std::unique_ptr<SpillThrash> thrash_;  // guarded by tenant_mu_
  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::mutex health_actions_mu_;  // one RunHealthActions() at a time
  std::condition_variable cv_;
  bool stop_ = false;
  bool started_ = false;
  std::atomic<bool> watching_{false};  // a pod watch was started
  std::atomic<bool> inventory_dirty_{true};
};

}  // namespace vgpu::node
