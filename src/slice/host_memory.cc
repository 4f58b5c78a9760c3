#include "slice/host_memory.h"

#include <cinttypes>
#include <cstdio>

namespace vgpu::slice {

uint64_t ReadMemAvailable(const char* meminfo_path) {
  FILE* f = std::fopen(meminfo_path, "r");
  if (f == nullptr) return 0;
  char line[256];
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    if (std::sscanf(line, "MemAvailable: %" SCNu64 " kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace vgpu::slice
