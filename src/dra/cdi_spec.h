// CDI specs (container-device-interface, cdiVersion 0.6.0) for prepared claims: one spec file
// per claim, `<dir>/vgpu.io-gpu_<claim uid>.json`, kind `vgpu.io/gpu`, one device named
// `claim-<claim uid>` whose container edits are the slice's allocation (node/slice.h
// BuildAllocation): libvgpu.so preloaded, the limits file read-only, the region's directory and
// the arbiter directory read-write, NVIDIA_VISIBLE_DEVICES and the HAMi-core variables.
// The container runtime (containerd, CRI-O with CDI enabled) applies the edits of the device
// ids the DRA driver returns. Files are written atomically (common/atomic_file.h).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "node/slice.h"

namespace vgpu::dra {

inline constexpr const char* kCdiKind = "vgpu.io/gpu";
inline constexpr const char* kCdiVersion = "0.6.0";

std::string CdiDeviceName(const std::string& claim_uid);  // "claim-<uid>"
std::string CdiDeviceId(const std::string& claim_uid);    // "vgpu.io/gpu=claim-<uid>"
std::string CdiSpecPath(const std::string& dir, const std::string& claim_uid);

nlohmann::json CdiSpec(const std::string& claim_uid, const node::ContainerAllocation& allocation);

// Writes the spec of one claim (mode 0644). The Status names the path and the step on failure.
Status WriteCdiSpec(const std::string& dir, const std::string& claim_uid,
                    const node::ContainerAllocation& allocation);
// Removes it; OK when it is already gone.
Status RemoveCdiSpec(const std::string& dir, const std::string& claim_uid);

}  // namespace vgpu::dra
