// A stand-in for the driver's /proc/driver/nvidia-caps/mig-minors in tests: the capability
// minors of every GPU instance (0..15) and compute instance (0..7) of GPUs with minor numbers
// 0..max_gpu_minor, in the driver's format ("gpu0/gi1/access 12", "gpu0/gi1/ci0/access 13"),
// so that Prepare of a MIG device finds its /dev/nvidia-caps nodes (node/plugin/device_list.h).
#pragma once

#include <string>

namespace vgpu::dra::testing {

// Writes <probe_root>/proc/driver/nvidia-caps/mig-minors. False when it cannot.
bool WriteMigMinors(const std::string& probe_root, int max_gpu_minor);

}  // namespace vgpu::dra::testing
