// Defaults of DeviceBackend's optional parts: a backend without MIG or compute-mode control.
#include "device/device_backend.h"

namespace vgpu::device {
namespace {

Status NoMig() { return Status::FailedPrecondition("MIG is not supported by this device backend"); }

}  // namespace

Result<MigModeState> DeviceBackend::GetMigMode(int) { return NoMig(); }
Status DeviceBackend::SetMigMode(int, bool) { return NoMig(); }
Result<std::vector<MigProfileInfo>> DeviceBackend::MigProfiles(int) { return NoMig(); }
Result<std::vector<MigInstance>> DeviceBackend::MigInstances(int) { return NoMig(); }
Result<MigInstance> DeviceBackend::CreateMigInstance(int, int, int) { return NoMig(); }
Status DeviceBackend::DestroyMigInstance(int, int) { return NoMig(); }
Status DeviceBackend::SetComputeMode(int, ComputeMode) {
  return Status::FailedPrecondition("this device backend cannot set the compute mode");
}

}  // namespace vgpu::device
