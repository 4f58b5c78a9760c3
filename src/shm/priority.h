// Priority levels of a slice, their names and how they are spelled on input: the one home of
// these facts for libvgpu.so (the limits file), `vgpu run` and `vgpu resize` (--priority), the
// node daemon (the vgpu.io/compute annotation) and the reports that print a level.
// Exception-free and allocation-free: libvgpu.so links it.
#pragma once

#include <cstdint>
#include <string_view>

namespace vgpu::shm {

// A smaller number is more important. HAMi's CUDA_TASK_PRIORITY 0 is kPriorityHigh and 1 (its
// default) kPriorityNormal.
enum PriorityLevel : int32_t {
  kPriorityRealtime = 0,
  kPriorityHigh = 1,
  kPriorityNormal = 2,
  kPriorityLow = 3,
  kPriorityIdle = 4,
};
inline constexpr int kPriorityLevels = 5;

// "realtime", "high", "normal", "low" or "idle"; "?" for a number outside the levels.
const char* PriorityName(int32_t level);

// A level from its name in any case, or from HAMi's numbers ("0" high, "1" normal). False, with
// *level untouched, for anything else.
bool ParsePriority(std::string_view text, int32_t* level);

// The level of HAMi's priority number (CUDA_TASK_PRIORITY, the nvidia.com/priority resource):
// 0 kPriorityHigh, 1 kPriorityNormal. False, with *level untouched, for any other number (-1:
// not given).
bool HamiPriorityLevel(int64_t number, int32_t* level);

// What ParsePriority accepts, for error messages.
inline constexpr const char* kPriorityChoices =
    "realtime, high, normal, low or idle (or HAMi's 0 = high, 1 = normal)";

}  // namespace vgpu::shm
