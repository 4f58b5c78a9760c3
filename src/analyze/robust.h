// Robust statistics on samples with gaps (NaN = missing): medians, quantiles, MAD, Theil-Sen
// slope. Pure functions; every one ignores NaN and returns NaN when no sample is present.
#pragma once

#include <cstddef>
#include <vector>

namespace vgpu::analyze {

// The q-quantile (0..1, linear interpolation) of the present samples of v[begin, end).
double Quantile(const std::vector<double>& v, size_t begin, size_t end, double q);
inline double Median(const std::vector<double>& v, size_t begin, size_t end) {
  return Quantile(v, begin, end, 0.5);
}
double Median(std::vector<double> v);
// 1.4826 x the median absolute deviation of v[begin, end) (a consistent estimate of sigma).
double MadSigma(const std::vector<double>& v, size_t begin, size_t end);
// Theil-Sen slope (median of pairwise slopes, per slot) of v[begin, end); at most `max_points`
// evenly spaced present samples are used.
double TheilSenSlope(const std::vector<double>& v, size_t begin, size_t end,
                     size_t max_points = 40);
// The median of v[i - half, i + half] for every i (NaN where none is present).
std::vector<double> CentredMedian(const std::vector<double>& v, size_t half);

}  // namespace vgpu::analyze
