#include "sim/progress.h"

#include <algorithm>
#include <cstdio>

namespace vgpu::sim {

void ProgressBar::Update(int64_t done, int64_t total) {
  if (total <= 0) return;
  const int permille = static_cast<int>(std::clamp<int64_t>(done * 1000 / total, 0, 1000));
  if (permille == last_permille_) return;
  last_permille_ = permille;
  constexpr int kWidth = 40;
  const int filled = permille * kWidth / 1000;
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(kWidth - filled), '.');
  std::fprintf(stderr, "\r%s [%s] %5.1f%%", label_.c_str(), bar.c_str(), permille / 10.0);
  std::fflush(stderr);
}

void ProgressBar::Finish() {
  if (last_permille_ < 0) return;
  std::fprintf(stderr, "\r%*s\r", static_cast<int>(label_.size()) + 52, "");
  std::fflush(stderr);
  last_permille_ = -1;
}

}  // namespace vgpu::sim
