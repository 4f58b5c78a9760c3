// CDI specs (container-device-interface) for prepared claims: one spec file
// per claim, `<dir>/vgpu.io-gpu_<claim uid>.json`, kind `vgpu.io/gpu`, one device named
// `claim-<claim uid>` whose container edits are the slice's allocation (node/slice.h
// BuildAllocation): libvgpu.so preloaded, the limits file read-only, the region's directory and
// the arbiter directory read-write, NVIDIA_VISIBLE_DEVICES and the HAMi-core variables.
// The container runtime (containerd, CRI-O with CDI enabled) applies the edits of the device
// ids the DRA driver returns. Files are written atomically (common/atomic_file.h).
// A spec's cdiVersion is the lowest version whose features it uses (MinimumCdiVersion), so that
// every runtime whose CDI library knows that version reads it: 0.3.0 for the driver's specs (env,
// bind mounts, device nodes at their host paths); a device node at another path than the host's
// would make it 0.5.0 (deviceNodes.hostPath).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "node/slice.h"

namespace vgpu::dra {

inline constexpr const char* kCdiKind = "vgpu.io/gpu";

std::string CdiDeviceName(const std::string& claim_uid);  // "claim-<uid>"
std::string CdiDeviceId(const std::string& claim_uid);    // "vgpu.io/gpu=claim-<uid>"
std::string CdiSpecPath(const std::string& dir, const std::string& claim_uid);

// The lowest CDI spec version that has every feature `spec` uses, by the CDI specification's
// table of released versions (SPEC.md; specs-go/version.go computes the same):
//   0.3.0  the earliest a runtime accepts: env, mounts (hostPath, containerPath, options),
//          deviceNodes without hostPath, hooks
//   0.4.0  mounts[].type
//   0.5.0  deviceNodes[].hostPath; device names that do not start with a letter
//   0.6.0  annotations (spec or device); a '.' in the class of the kind ("vendor.com/a.b")
//   0.7.0  containerEdits.intelRdt, containerEdits.additionalGids
// The spec's own cdiVersion field is not read.
std::string MinimumCdiVersion(const nlohmann::json& spec);

// The spec of one claim; its cdiVersion is MinimumCdiVersion of its content.
nlohmann::json CdiSpec(const std::string& claim_uid, const node::ContainerAllocation& allocation);

// Writes the spec of one claim (mode 0644). The Status names the path and the step on failure.
Status WriteCdiSpec(const std::string& dir, const std::string& claim_uid,
                    const node::ContainerAllocation& allocation);
// Removes it; OK when it is already gone.
Status RemoveCdiSpec(const std::string& dir, const std::string& claim_uid);

}  // namespace vgpu::dra
