// The opaque configuration a ResourceClaim (or its DeviceClass) gives the vgpu DRA driver:
//
//   config:
//   - requests: [gpu]
//     opaque:
//       driver: gpu.vgpu.io
//       parameters:
//         apiVersion: vgpu.io/v1alpha1
//         kind: GpuConfig
//         priority: high          # realtime | high | normal | low | idle
//         guarantee: 30           # 0..100: reserved share of each GPU (elastic unless mode says)
//         mode: elastic           # capped | elastic
//         weight: 2               # 1..10000
//         timeSlice: 2ms          # 500us..1s
//         copyH2D: 10GB/s         # copy caps, 1MB/s..10TB/s or unlimited (docs/copy-qos.md)
//         copyD2H: 5GB/s
//         copyBorrow: "on"        # on | off: copies may use idle host-link bandwidth
//
// The fields map one to one onto the node daemon's compute settings (slice/compute_settings.h,
// docs/compute.md). Unknown fields, another apiVersion or kind, and values out of range are
// errors naming `where` and the field. Pure logic.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "common/result.h"
#include "slice/compute_settings.h"

namespace vgpu::dra {

inline constexpr const char* kConfigApiVersion = "vgpu.io/v1alpha1";
inline constexpr const char* kConfigKind = "GpuConfig";

// `where` names the config in messages, e.g. "claim default/a: config[0].opaque.parameters".
Result<slice::ComputeSettings> ParseGpuConfig(const nlohmann::json& parameters,
                                              const std::string& where);

}  // namespace vgpu::dra
