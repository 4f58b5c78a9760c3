// XID classification: what an XID asks of the node, from NVIDIA's Xid catalog
// (data/xid/xid_catalog.csv, compiled into xid_table_data.inc by scripts/gen-xid-table), and how
// the driver's own recovery action (XID 154, NVML_FI_DEV_GET_GPU_RECOVERY_ACTION, event
// nvmlEventTypeGpuRecoveryAction) overrides it at run time.
//
// Classes:
//   kApplication  concerns the application that caused it (RESTART_APP): never the GPU's health
//   kIgnore       informational (IGNORE): counted; a storm makes the GPU Suspect, nothing more
//   kReset        the GPU must be reset (RESET_GPU, WORKFLOW_XID_48, NVLink workflows)
//   kReboot       the node must be rebooted or serviced (RESTART_BM, RESTART_VM, ...)
//   kRecovery     XID 154 itself: its meaning is the recovery action it carries
//   kUnknown      not in the catalog, or CONTACT_SUPPORT: handled like kReset (fail closed)
// Pure functions over a static table; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace vgpu::node::faults {

enum class XidClass { kApplication, kIgnore, kReset, kReboot, kRecovery, kUnknown };

struct XidInfo {
  uint32_t xid;
  XidClass cls;
  const char* mnemonic;
  const char* action;  // NVIDIA's immediate action, as in the catalog
};

// nvmlDeviceGpuRecoveryAction_t (nvml.h).
enum class RecoveryAction : uint32_t {
  kNone = 0,
  kGpuReset = 1,
  kNodeReboot = 2,
  kDrainP2P = 3,
  kDrainAndReset = 4,
  kRecoverImexDomain = 5,
};

// The catalog row of `xid`; nullptr when the catalog does not list it.
const XidInfo* FindXid(uint64_t xid);
// The catalog's class of `xid` (kUnknown when not listed).
XidClass ClassifyXid(uint64_t xid);
// The whole table, ordered by XID (for docs and `vgpu node --xid-table`).
const XidInfo* XidTable(size_t* count);

// What the node acts on: the catalog's class, unless the driver states a recovery action, which
// wins: GPU reset / drain and reset / drain P2P -> kReset, node reboot -> kReboot, none or an
// IMEX-domain recovery (not the GPU's) -> kApplication for application XIDs, else kIgnore.
XidClass EffectiveClass(XidClass table_class, std::optional<RecoveryAction> driver_action);

// True for the classes that take the GPU out of service.
inline bool IsFatal(XidClass c) {
  return c == XidClass::kReset || c == XidClass::kReboot || c == XidClass::kUnknown;
}

// "application", "ignore", "reset", "reboot", "recovery", "unknown".
std::string_view XidClassName(XidClass c);
// "none", "gpu-reset", "node-reboot", "drain-p2p", "drain-and-reset", "recover-imex-domain";
// nullopt for a value nvml.h does not define.
std::optional<RecoveryAction> RecoveryActionFromValue(uint64_t value);
std::string_view RecoveryActionName(RecoveryAction a);

}  // namespace vgpu::node::faults
