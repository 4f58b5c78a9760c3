// The one writer of limits files: every key libvgpu.so reads from a file (its reader is
// src/intercept/config/limits_file.cc; the format, markers and memory modes are
// common/limits_format.h; the keys are described in docs/intercept.md, docs/compute.md and
// docs/copy-qos.md). The node daemon writes one per container (node/slice.h), `vgpu run` one per
// command (cli/slice_setup.h).
//
// A key is written only when it is set, except memory_mode (always: the environment may lower the
// mode, never raise it) and region. Comments are escaped to printable ASCII (common/printable.h)
// and cut, so nothing a pod or a command line names can break a line. The text opens with
// kLimitsFileHeader and closes with kLimitsFileEnd; writers store it atomically
// (common/atomic_file.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/limits_format.h"
#include "shm/region.h"

namespace vgpu::slice {

struct LimitsFile {
  std::vector<std::string> comments;  // one "# ..." line each, after the header

  // Limits per device, in CUDA index order inside the container (uuid.<i>, memory.<i>, cores.<i>).
  struct Device {
    std::string uuid;
    uint64_t memory = 0;  // bytes
    int cores = 100;      // percent
  };
  std::vector<Device> devices;
  // Limits for every device at once (memory=, cores=): shm::kNoLimit / 0 for none.
  uint64_t memory = shm::kNoLimit;
  int cores = 0;

  // Compute (docs/compute.md); each "not given" value writes no key.
  int guarantee = -1;             // percent; -1: not given
  int weight = 0;                 // 0: not given
  std::string mode;               // "capped", "elastic", "": not given
  std::optional<int> priority;    // a shm::PriorityLevel
  uint64_t time_slice_ns = 0;     // 0: not given
  int64_t latency_slack_ns = -1;  // -1: not given

  // Copy caps (docs/copy-qos.md): bytes/s, 0 for none; borrowing of idle host-link bandwidth.
  uint64_t copy_h2d = 0;
  uint64_t copy_d2h = 0;
  bool copy_borrow = false;

  MemoryMode memory_mode = MemoryMode::kStrict;
  std::string region;             // the slice's accounting region (absolute path)
  std::string arbiter_dir;        // the per-GPU arbiters' directory; "": none
  int64_t context_overhead = -1;  // bytes charged per CUDA context; -1: libvgpu.so's default
};

std::string LimitsFileText(const LimitsFile& limits);

}  // namespace vgpu::slice
