// A one-line progress bar on standard error, redrawn in place ("\r"). Draw it only when stderr is
// a terminal (the caller decides). Not thread-safe: call from one thread.
#pragma once

#include <cstdint>
#include <string>

namespace vgpu::sim {

class ProgressBar {
 public:
  explicit ProgressBar(std::string label) : label_(std::move(label)) {}
  void Update(int64_t done, int64_t total);
  // Clears the line.
  void Finish();

 private:
  std::string label_;
  int last_permille_ = -1;
};

}  // namespace vgpu::sim
