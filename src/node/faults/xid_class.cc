#include "node/faults/xid_class.h"

#include <algorithm>
#include <iterator>

namespace vgpu::node::faults {
namespace {

constexpr XidInfo kTable[] = {
#include "node/faults/xid_table_data.inc"
};

}  // namespace

const XidInfo* FindXid(uint64_t xid) {
  auto it = std::lower_bound(std::begin(kTable), std::end(kTable), xid,
                             [](const XidInfo& row, uint64_t x) { return row.xid < x; });
  return it != std::end(kTable) && it->xid == xid ? &*it : nullptr;
}

XidClass ClassifyXid(uint64_t xid) {
  const XidInfo* row = FindXid(xid);
  return row != nullptr ? row->cls : XidClass::kUnknown;
}

const XidInfo* XidTable(size_t* count) {
  *count = std::size(kTable);
  return kTable;
}

XidClass EffectiveClass(XidClass table_class, std::optional<RecoveryAction> driver_action) {
  if (!driver_action) return table_class;
  switch (*driver_action) {
    case RecoveryAction::kGpuReset:
    case RecoveryAction::kDrainAndReset:
    case RecoveryAction::kDrainP2P:
      return XidClass::kReset;
    case RecoveryAction::kNodeReboot:
      return XidClass::kReboot;
    case RecoveryAction::kNone:
    case RecoveryAction::kRecoverImexDomain:
      break;
  }
  return table_class == XidClass::kApplication ? XidClass::kApplication : XidClass::kIgnore;
}

std::string_view XidClassName(XidClass c) {
  switch (c) {
    case XidClass::kApplication:
      return "application";
    case XidClass::kIgnore:
      return "ignore";
    case XidClass::kReset:
      return "reset";
    case XidClass::kReboot:
      return "reboot";
    case XidClass::kRecovery:
      return "recovery";
    case XidClass::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<RecoveryAction> RecoveryActionFromValue(uint64_t value) {
  if (value > 5) return std::nullopt;
  return static_cast<RecoveryAction>(value);
}

std::string_view RecoveryActionName(RecoveryAction a) {
  switch (a) {
    case RecoveryAction::kNone:
      return "none";
    case RecoveryAction::kGpuReset:
      return "gpu-reset";
    case RecoveryAction::kNodeReboot:
      return "node-reboot";
    case RecoveryAction::kDrainP2P:
      return "drain-p2p";
    case RecoveryAction::kDrainAndReset:
      return "drain-and-reset";
    case RecoveryAction::kRecoverImexDomain:
      break;
  }
  return "recover-imex-domain";
}

}  // namespace vgpu::node::faults
