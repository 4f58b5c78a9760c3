// Creating a slice on this machine for a command: the slice directory in the registry (a
// read-only limits file, the accounting region, a meta file) and the environment that makes the
// command run inside it (libvgpu.so preloaded, the simulated GPU's libraries first with --sim).
// Shared by `vgpu run` and `vgpu bench share` (whose tenants are slices too).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "shm/arbiter.h"
#include "shm/region.h"

namespace vgpu::cli {

// A slice's settings as given on a command line (text, validated by ParseSliceSpec).
struct SliceFlags {
  std::string memory;
  std::string cores;      // max share
  std::string guarantee;  // guaranteed share (makes the slice elastic unless --capped)
  std::string weight;
  std::string priority;       // realtime, high, normal, low, idle (or 0 / 1)
  std::string time_slice;     // e.g. 5ms
  std::string latency_slack;  // e.g. 1ms (docs/compute.md, "Priorities that conserve work")
  bool elastic = false;
  std::string devices;
  std::string copy_bandwidth;  // H2D[,D2H] caps (docs/copy-qos.md)
  bool copy_borrow = false;    // copies may use idle host-link bandwidth beyond the caps
  std::string memory_mode;     // strict, overcommit or spill (docs/oversubscription.md)
};

struct SliceSpec {
  uint64_t memory = shm::kNoLimit;
  int cores = 0;       // max share; 0: none
  int guarantee = -1;  // -1: not given
  int weight = 0;      // 0: not given
  int priority = shm::kPriorityNormal;
  bool priority_given = false;
  bool elastic = false;
  bool mode_given = false;        // write the mode even when capped (takes part in arbitration)
  uint64_t time_slice_ns = 0;     // 0: not given
  int64_t latency_slack_ns = -1;  // -1: not given
  std::vector<std::string> devices;
  uint64_t copy_h2d = 0;  // bytes/s; 0: no cap
  uint64_t copy_d2h = 0;
  bool copy_borrow = false;
  int memory_mode = 0;      // 0 strict, 1 overcommit, 2 spill (intercept/config.h MemoryMode)
  std::string arbiter_dir;  // "" : <state>/arbiter (a nested slice uses its outer slice's)
};

inline constexpr const char* kMemoryModeNames[] = {"strict", "overcommit", "spill"};
inline constexpr int kMemoryModeSpill = 2;

// Parses a copy cap: a rate between 1MB/s and 10TB/s, or "unlimited" (0). `what` names it.
Result<uint64_t> ParseCopyCap(const std::string& text, const std::string& what);

// A compute share (--cores, and a bench tenant's max=): an integer percent 1-100, "30" or "30%".
// Every command words its range the same way, in --help (kCoresRange) and in the error:
// `--cores: "0": must be 1-100 (percent of each GPU's time, e.g. 30 or 30%)`.
inline constexpr const char* kCoresRange = "percent of each GPU's time, 1-100 (30 or 30%)";
Result<int> ParseCores(const std::string& text, const std::string& what);

// Validates the flags; errors name the flag and the value (`--cores: "120": ...`). `prefix` is
// prepended to flag names in messages (the bench's "tenant a: ").
Result<SliceSpec> ParseSliceSpec(const SliceFlags& flags, const std::string& prefix = "");

// The limits file text of a slice (key=value lines, see docs/intercept.md and docs/compute.md).
std::string LimitsText(const SliceSpec& spec, const std::string& dir, bool sim,
                       const std::string& arbiter_dir, const std::string& comment);

// A slice directory that lives as long as this object.
class SliceDir {
 public:
  // Creates <state>/slices/<name>-XXXXXX with its limits file, region and meta file.
  static Result<SliceDir> Create(const std::string& name, const SliceSpec& spec, bool sim,
                                 const std::string& command_text);
  SliceDir() = default;
  ~SliceDir();
  SliceDir(SliceDir&& other) noexcept;
  SliceDir& operator=(SliceDir&& other) noexcept;
  SliceDir(const SliceDir&) = delete;
  SliceDir& operator=(const SliceDir&) = delete;

  const std::string& path() const { return path_; }
  // Leaves the directory in place when this object goes (processes still use it).
  void Keep() { path_.clear(); }
  std::string region_path() const { return path_ + "/region"; }
  // The environment for a command in this slice: the current environment with LD_PRELOAD,
  // VGPU_LIMITS_FILE, CUDA_DEVICE_MEMORY_SHARED_CACHE (and CUDA_VISIBLE_DEVICES, and with
  // --sim the simulated GPU's libraries) set.
  std::vector<std::string> ChildEnvironment(const std::string& libvgpu,
                                            const std::string& simgpu_dir) const;

 private:
  std::string path_;
  SliceSpec spec_;
  bool sim_ = false;
};

// Where the interception library and the simulated GPU are (next to the executable); an error
// message when they are missing.
struct Libraries {
  std::string libvgpu;
  std::string simgpu_dir;
};
Result<Libraries> FindLibraries(bool sim, const std::string& who);

// A safe slice name from a command or tenant name.
std::string SliceName(const std::string& text);

}  // namespace vgpu::cli
