// A container's compute settings beyond the SM limit (`cores`, from nvidia.com/gpucores through
// the scheduler's assignment): the guarantee, weight, mode, priority level and time slice that
// libvgpu.so's launch gate and the per-GPU arbiter use (docs/compute.md).
//
// Sources, most specific last (each key overrides the previous source's):
//   1. nvidia.com/priority, carried in the assignment as 0 (high) or 1 (normal; HAMi's "low",
//      which is its default). docs/compute.md's mapping of HAMi's numbers.
//   2. the pod annotation  vgpu.io/compute             = "guarantee=30,weight=2,mode=elastic"
//   3. the pod annotation  vgpu.io/compute.<container> = "priority=realtime"
//
// Keys (separated by ',' or ';', spaces allowed around them):
//   guarantee=PCT    0..100 (or "30%"): reserved share of each of the container's GPUs
//   weight=N         1..10000: share of spare time among slices of the same rank
//   mode=M           capped | elastic (a guarantee without a mode is elastic)
//   priority=P       realtime | high | normal | low | idle, or HAMi's 0 (high) / 1 (normal)
//   time-slice=DUR   500us..1s (time_slice is accepted too)
//   memory-mode=M    strict | overcommit | spill (docs/oversubscription.md); not a compute
//                    setting (Any() ignores it), carried here with the container's settings
//   copy-h2d=RATE    1MB/s..10TB/s or unlimited: the cap on host-to-device copies, and
//   copy-d2h=RATE    device-to-host (docs/copy-qos.md); copy-borrow=on|off lets copies use idle
//                    host-link bandwidth beyond the caps. Not compute settings either.
// Unknown keys and bad values are errors naming the annotation, the key and the value: a pod
// whose compute settings cannot be read is not allocated (like a bad assignment).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"
#include "shm/priority.h"

namespace vgpu::slice {

inline constexpr const char* kComputeAnnotation = "vgpu.io/compute";

struct ComputeSettings {
  int guarantee = -1;          // percent; -1: not given
  int weight = 0;              // 0: not given
  std::string mode;            // "capped", "elastic", "": not given
  int level = -1;              // shm::PriorityLevel; -1: not given
  uint64_t time_slice_ns = 0;  // 0: not given
  std::string memory_mode;     // "strict", "overcommit", "spill", "": not given (strict)
  // Copy caps (docs/copy-qos.md), not compute settings either (Any() ignores them): bytes/s per
  // direction, 0 for "unlimited"; borrowing of idle host-link bandwidth.
  std::optional<uint64_t> copy_h2d;
  std::optional<uint64_t> copy_d2h;
  std::optional<bool> copy_borrow;

  bool Any() const {
    return guarantee >= 0 || weight > 0 || !mode.empty() || level >= 0 || time_slice_ns > 0;
  }
  // Each setting `other` gives replaces this one's.
  void OverrideWith(const ComputeSettings& other);
};

// Parses one annotation value. `where` names the annotation in messages.
Result<ComputeSettings> ParseComputeSettings(std::string_view text, const std::string& where);

// The settings of container `container` from the pod's annotations (vgpu.io/compute, then
// vgpu.io/compute.<container>). Errors name the annotation.
Result<ComputeSettings> ComputeSettingsOf(const std::map<std::string, std::string>& annotations,
                                          const std::string& container);

// A duration in the limits file's spelling: "5ms", "250us" or "1500ns".
std::string FormatTimeSlice(uint64_t ns);

}  // namespace vgpu::slice
