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
#include "slice/spec.h"

namespace vgpu::slice {

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

// A safe slice name from a command or tenant name.
std::string SliceName(const std::string& text);

}  // namespace vgpu::slice
