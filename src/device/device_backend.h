// DeviceBackend: what the node daemon knows about the GPUs of one machine, behind one small
// interface so that everything above it runs against NVML, the simulated GPU or a scripted fake.
//
// Contract:
// - Discover() lists the GPUs once (static facts: identity, memory size, topology). The list is
//   ordered by NVML index; indices are dense from 0.
// - Sample(index) reads what changes (memory in use, utilization, sensors, link counters,
//   processes). Fields a GPU or driver does not report are std::nullopt, never a made-up 0.
//   An error (kUnavailable) means the GPU did not answer: the health rules treat that as a fault.
// - WaitForEvents(timeout) blocks up to `timeout_ms` for health events (NVML XID and ECC events
//   on real hardware; injected ones on the fake) and returns those that arrived, possibly none.
//   Backends without event support sleep for the timeout and return none.
// - MIG: the Mig* methods read and change a GPU's MIG state through the driver (NVML on real and
//   simulated GPUs; scripted on the fake). What the driver reports wins over any table. A backend
//   without MIG answers kFailedPrecondition ("not supported"). Errors: kFailedPrecondition when the
//   GPU is busy (NVML IN_USE) or the mode needs a reset, kResourceExhausted when a placement is
//   occupied (NVML INSUFFICIENT_RESOURCES), kNotFound for an unknown instance, kUnavailable when
//   the driver fails otherwise. Create and destroy are not atomic on a real driver: a crash between
//   the GPU instance and its compute instance leaves a GPU instance without one, which
//   MigInstances() lists (ci_id < 0) and DestroyMigInstance() removes.
// - Thread safety: every method may be called from any thread, concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "topo/topology.h"

namespace vgpu::device {

// Static facts about one GPU.
struct DeviceInfo {
  int index = 0;           // NVML index
  std::string uuid;        // "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx"
  std::string name;        // product name, e.g. "NVIDIA H100 80GB HBM3"
  std::string pci_bus_id;  // "0000:18:00.0" (domain:bus:device.function, lower case)
  uint64_t memory_total_bytes = 0;
  int sm_count = 0;    // streaming multiprocessors; 0 when unknown
  int numa_node = -1;  // -1 when the platform does not say
  // UUIDs of the other GPUs of this node that an active NVLink connects to (each listed once),
  // and the number of active links.
  std::vector<std::string> nvlink_peers;
  int nvlink_active_links = 0;
  int minor_number = -1;       // N of /dev/nvidiaN; -1 when the driver does not say
  uint32_t pci_device_id = 0;  // nvmlPciInfo_t.pciDeviceId (0x233510DE); 0 when not told
};

// One process that holds memory on a GPU, as the driver sees it (host pid namespace).
struct ProcessUsage {
  uint32_t pid = 0;
  uint64_t used_memory_bytes = 0;
  std::optional<double> sm_utilization;  // 0..1, share of the last sample period
};

// Counters of one NVLink link.
struct NvLinkLinkSample {
  int link = 0;
  std::optional<uint64_t> replay_errors_total;
  std::optional<uint64_t> recovery_errors_total;
  std::optional<uint64_t> crc_errors_total;  // flit + data CRC errors
};

// What changes on one GPU. Ratios are 0..1.
// GPM metrics (GPU Performance Monitoring, Hopper and later; nvml_gpm.h) over the interval
// between two samples: shares 0..1 of the interval, rates in bytes/s. Unset: not given.
struct GpmMetrics {
  std::optional<double> graphics_activity;  // NVML_GPM_METRIC_GRAPHICS_UTIL
  std::optional<double> sm_activity;        // SM_UTIL: share of SMs busy
  std::optional<double> sm_occupancy;       // SM_OCCUPANCY: resident warps / maximum
  std::optional<double> tensor_activity;    // ANY_TENSOR_UTIL
  std::optional<double> dram_activity;      // DRAM_BW_UTIL: DRAM bandwidth / theoretical maximum
  std::optional<double> pcie_transmit_bytes_per_second;
  std::optional<double> pcie_receive_bytes_per_second;
  std::optional<double> nvlink_transmit_bytes_per_second;
  std::optional<double> nvlink_receive_bytes_per_second;
};

struct MigGpmSample {
  int gi_id = 0;  // the GPU instance (MigInstance::gi_id)
  GpmMetrics metrics;
};

struct DeviceSample {
  uint64_t memory_used_bytes = 0;
  std::optional<double> sm_utilization;                // share of time a kernel ran
  std::optional<double> memory_bandwidth_utilization;  // share of time memory was read/written
  std::optional<double> temperature_celsius;
  std::optional<double> memory_temperature_celsius;  // device memory (HBM); NVML field 82
  std::optional<double> power_watts;
  std::optional<double> power_limit_watts;
  std::optional<double> energy_joules_total;  // since the driver was loaded
  std::optional<double> sm_clock_hz;          // clocks now
  std::optional<double> memory_clock_hz;
  std::optional<double> encoder_utilization;  // share of the driver's sampling period
  std::optional<double> decoder_utilization;
  // Memory rows remapped after errors (Ampere and later), and whether a remapping failed.
  std::optional<uint64_t> remapped_rows_corrected_total;
  std::optional<uint64_t> remapped_rows_uncorrected_total;
  std::optional<bool> row_remap_failed;
  std::optional<double> pcie_transmit_bytes_per_second;
  std::optional<double> pcie_receive_bytes_per_second;
  std::optional<uint64_t> pcie_replay_errors_total;
  // Memory errors over the GPU's life (NVML's aggregate ECC counters); unset without ECC.
  std::optional<uint64_t> ecc_corrected_errors_total;
  std::optional<uint64_t> ecc_uncorrected_errors_total;
  std::optional<uint64_t> nvlink_transmit_bytes_total;  // data payload, all links
  std::optional<uint64_t> nvlink_receive_bytes_total;
  std::vector<NvLinkLinkSample> nvlink_links;  // active links only
  std::vector<ProcessUsage> processes;
  // The kernel running now (its process, host pid; how long it has run), where the backend can
  // tell: the simulated GPU can, NVML cannot. The node's stuck-kernel detection reads it.
  struct RunningKernel {
    uint32_t pid = 0;
    int64_t running_ns = 0;
  };
  std::optional<RunningKernel> running_kernel;
  // GPM over the interval since the previous sample (unset on the first sample, on GPUs
  // without GPM and where NVML lacks it), for the whole GPU and per MIG GPU instance.
  std::optional<GpmMetrics> gpm;
  std::vector<MigGpmSample> mig_gpm;
};

// A health event reported by the driver (or injected on a fake or simulated GPU).
struct HealthEvent {
  enum class Kind {
    kXid,           // an XID error; `code` is the XID number
    kDoubleBitEcc,  // uncorrectable memory error
    kSingleBitEcc,  // corrected memory error (informational)
    kRecovered,     // injected only: the fault is cleared (a reset, a repaired link)
    // The driver's recovery action for the GPU changed (XID 154, nvmlEventTypeGpuRecoveryAction);
    // `code` is the nvmlDeviceGpuRecoveryAction_t value (0 none, 1 GPU reset, 2 node reboot, ...).
    kRecoveryAction,
  };
  static constexpr uint32_t kNoInstance = 0xFFFFFFFFu;  // NVML's "not attributable"
  std::string uuid;  // the GPU; empty: every GPU (e.g. the event set itself failed)
  Kind kind = Kind::kXid;
  uint64_t code = 0;
  std::string description;
  // Attribution, where the driver gives it: the process (host pid; 0 unknown) and the MIG
  // instance (nvmlEventData_t gpuInstanceId / computeInstanceId; kNoInstance when unset).
  uint32_t pid = 0;
  uint32_t gpu_instance_id = kNoInstance;
  uint32_t compute_instance_id = kNoInstance;
};

// A GPU instance profile as the driver reports it.
struct MigProfileInfo {
  int profile_id = 0;      // NVML profile id (19 for 1g.*, 9 for 3g.*, ...)
  std::string name;        // "1g.18gb", "1g.18gb+me" (NVML's name without "MIG ")
  int memory_slices = 0;   // placement size
  int compute_slices = 0;  // sliceCount
  int sm_count = 0;
  uint64_t memory_bytes = 0;
  int max_count = 0;        // instanceCount
  std::vector<int> starts;  // legal placement starts
  // copyEngineCount, decoderCount, encoderCount, jpegCount, ofaCount (0 when not reported).
  int copy_engines = 0, decoders = 0, encoders = 0, jpegs = 0, ofas = 0;
};

// One GPU instance with (normally) one compute instance over all its slices: a MIG device.
struct MigInstance {
  int gpu_index = 0;
  std::string uuid;  // "MIG-..." of its compute instance; empty when it has none
  int gi_id = 0;
  int ci_id = -1;  // -1: a GPU instance without a compute instance (a half-made one)
  int profile_id = 0;
  std::string profile;  // "3g.71gb"
  int start = 0;        // memory slices [start, start + size)
  int size = 0;
  uint64_t memory_bytes = 0;
  int sm_count = 0;
};

struct MigModeState {
  bool current = false;  // MIG enabled now
  bool pending = false;  // after the next reset
};

enum class ComputeMode { kDefault, kExclusiveProcess, kProhibited };

// Human-readable name of an event kind: "xid", "ecc-dbe", "ecc-sbe", "recovered",
// "recovery-action".
const char* HealthEventKindName(HealthEvent::Kind kind);

class DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  // One line for logs: "NVML 12.550.54 (driver 550.54.15)", "fake (3 GPUs)".
  virtual std::string Describe() const = 0;
  virtual Result<std::vector<DeviceInfo>> Discover() = 0;
  virtual Result<DeviceSample> Sample(int index) = 0;
  virtual std::vector<HealthEvent> WaitForEvents(int timeout_ms) = 0;
  // True when health events come from the driver (false: only sampling failures are seen).
  virtual bool SupportsEvents() const = 0;
  // Recovery of a quarantined GPU (node/faults/gpu_health.h). Reset: reset the GPU, which no
  // process holds; backends that cannot (NVML has no reset call) return kFailedPrecondition and the
  // GPU waits for a reported recovery. Probe: check the GPU works (allocation, kernel, copy
  // where the backend can run them; at least a sample); kUnavailable with the reason when not.
  virtual Status Reset(int /*index*/) {
    return Status::FailedPrecondition(
        "this backend cannot reset a GPU (nvidia-smi -r, then report the recovery)");
  }
  virtual Status Probe(int index) { return Sample(index).status(); }

  // --- MIG and compute mode (see the contract above). ---
  virtual Result<MigModeState> GetMigMode(int index);
  // Enables or disables MIG. kFailedPrecondition if the GPU is in use, or if the change waits for
  // a GPU reset (the pending mode is then set).
  virtual Status SetMigMode(int index, bool enabled);
  virtual Result<std::vector<MigProfileInfo>> MigProfiles(int index);
  virtual Result<std::vector<MigInstance>> MigInstances(int index);
  // Creates a GPU instance of `profile_id` at `start` and one compute instance over all of it.
  virtual Result<MigInstance> CreateMigInstance(int index, int profile_id, int start);
  // Destroys the GPU instance with id `gi_id` and its compute instances.
  virtual Status DestroyMigInstance(int index, int gi_id);
  virtual Status SetComputeMode(int index, ComputeMode mode);
  // How the GPUs are joined (topo/topology.h), indexed as Discover() lists them. kUnavailable
  // when the backend or driver cannot tell; the default has no topology.
  virtual Result<topo::Topology> ReadTopology() {
    return Status::Unavailable(Describe() + " reports no GPU topology");
  }
};

}  // namespace vgpu::device
