// Probes of the GPUs through the CUDA driver, loaded from `library` with dlopen (it stays loaded:
// unloading libcuda after cuInit is not supported).
//
// ProbeSmCounts: the number of streaming multiprocessors of each GPU (NVML does not report it for
// whole GPUs): cuInit and cuDeviceGetAttribute; creates no context. Keys are normalised PCI bus
// ids ("0000:18:00.0"). Errors (kUnavailable) when the driver library is missing or cuInit fails.
//
// ProbeGpuWork: the recovery probe of a quarantined GPU (node/faults/gpu_health.h): on the GPU at
// `pci_bus_id` it creates a context, allocates 1 MiB of device and of pinned host memory, copies
// a pattern host-to-device, runs a kernel (PTX, JIT-compiled by the driver) that inverts every
// word, copies the result back, all on one stream, and waits for the stream at most
// `timeout_ms`. It passes when everything completed in time and the words read back are the
// inverted pattern; on the simulated GPU, whose kernels take time but compute nothing
// (docs/simgpu.md), they must be the pattern itself. Then it frees what it made and destroys
// the context, also after a timeout (the stream's work is abandoned). kUnavailable naming the
// step that failed, or "did not complete within N ms".
#pragma once

#include <map>
#include <string>

#include "common/result.h"

namespace vgpu::device {

Result<std::map<std::string, int>> ProbeSmCounts(const std::string& library);

Status ProbeGpuWork(const std::string& library, const std::string& pci_bus_id, int timeout_ms);

}  // namespace vgpu::device
