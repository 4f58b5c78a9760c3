// What the host can give a spill slice: MemAvailable of /proc/meminfo (the I/O half of spill
// admission; the rule itself, slice/spill_admission.h, is pure).
#pragma once

#include <cstdint>

namespace vgpu::slice {

// MemAvailable of /proc/meminfo (or the file at `meminfo_path`) in bytes, or 0 when it cannot be
// read (which admits no spill: fail closed).
uint64_t ReadMemAvailable(const char* meminfo_path = "/proc/meminfo");

}  // namespace vgpu::slice
