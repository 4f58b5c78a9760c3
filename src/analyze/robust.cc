#include "analyze/robust.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace vgpu::analyze {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double SortedQuantile(const std::vector<double>& s, double q) {
  if (s.empty()) return kNaN;
  double pos = q * static_cast<double>(s.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, s.size() - 1);
  double frac = pos - static_cast<double>(lo);
  return s[lo] + (s[hi] - s[lo]) * frac;
}

std::vector<double> PresentSorted(const std::vector<double>& v, size_t begin, size_t end) {
  std::vector<double> s;
  end = std::min(end, v.size());
  for (size_t i = begin; i < end; ++i) {
    if (!std::isnan(v[i])) s.push_back(v[i]);
  }
  std::sort(s.begin(), s.end());
  return s;
}
}  // namespace

double Quantile(const std::vector<double>& v, size_t begin, size_t end, double q) {
  return SortedQuantile(PresentSorted(v, begin, end), q);
}

double Median(std::vector<double> v) { return Quantile(v, 0, v.size(), 0.5); }

double MadSigma(const std::vector<double>& v, size_t begin, size_t end) {
  std::vector<double> s = PresentSorted(v, begin, end);
  if (s.empty()) return kNaN;
  double med = SortedQuantile(s, 0.5);
  for (double& x : s) x = std::fabs(x - med);
  std::sort(s.begin(), s.end());
  return 1.4826 * SortedQuantile(s, 0.5);
}

double TheilSenSlope(const std::vector<double>& v, size_t begin, size_t end, size_t max_points) {
  end = std::min(end, v.size());
  std::vector<size_t> idx;
  for (size_t i = begin; i < end; ++i) {
    if (!std::isnan(v[i])) idx.push_back(i);
  }
  if (idx.size() < 2) return kNaN;
  if (idx.size() > max_points) {
    std::vector<size_t> thin;
    for (size_t k = 0; k < max_points; ++k)
      thin.push_back(idx[k * (idx.size() - 1) / (max_points - 1)]);
    idx.swap(thin);
  }
  std::vector<double> slopes;
  for (size_t a = 0; a < idx.size(); ++a) {
    for (size_t b = a + 1; b < idx.size(); ++b) {
      slopes.push_back((v[idx[b]] - v[idx[a]]) / static_cast<double>(idx[b] - idx[a]));
    }
  }
  return Median(std::move(slopes));
}

std::vector<double> CentredMedian(const std::vector<double>& v, size_t half) {
  std::vector<double> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    out[i] = Median(v, i >= half ? i - half : 0, std::min(v.size(), i + half + 1));
  }
  return out;
}

}  // namespace vgpu::analyze
