#include "mig_minors.h"

#include <filesystem>
#include <fstream>

namespace vgpu::dra::testing {

bool WriteMigMinors(const std::string& probe_root, int max_gpu_minor) {
  const std::string dir = probe_root + "/proc/driver/nvidia-caps";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream out(dir + "/mig-minors");
  int next = 1;
  for (int gpu = 0; gpu <= max_gpu_minor; ++gpu) {
    for (int gi = 0; gi < 16; ++gi) {
      const std::string g = "gpu" + std::to_string(gpu) + "/gi" + std::to_string(gi);
      out << g << "/access " << next++ << "\n";
      for (int ci = 0; ci < 8; ++ci) {
        out << g << "/ci" << ci << "/access " << next++ << "\n";
      }
    }
  }
  return static_cast<bool>(out);
}

}  // namespace vgpu::dra::testing
