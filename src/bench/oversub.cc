// vgpu bench oversub: the slowdown of managed memory against working set on the simulated GPU's
// UVM model (simgpu/uvm_model.h), and what a spilling low-priority tenant costs a high-priority
// one. Pure model: no processes, deterministic (seeded).
//
// For working sets of 0.25x to 3x the device, a streaming pattern (passes over the working set in
// order) and a random one (uniform page touches) run for three passes after a warm-up pass in
// order; the slowdown is the time per touch over the time per touch of a resident page. Then a
// high-priority tenant with half the device and a low-priority one spilling twice the other half
// touch their pages in turn.
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/oversub.h"
#include "common/rng.h"
#include "common/units.h"
#include "simgpu/uvm_model.h"

namespace vgpu::bench {
namespace {

using simgpu::UvmModel;
using simgpu::UvmParams;

// The model's time for a resident page (rounded up to whole nanoseconds, as the model does).
double ResidentNs(const UvmParams& p) {
  return std::ceil(static_cast<double>(p.page_bytes) * 1e9 /
                   static_cast<double>(p.device_bytes_per_s));
}

// Slowdown of one pattern at `ratio` x the device's pages.
double Slowdown(const UvmParams& params, double ratio, bool random) {
  UvmModel m(params);
  int owner = m.AddOwner(false);
  uint64_t pages = static_cast<uint64_t>(static_cast<double>(m.capacity_pages()) * ratio);
  if (pages == 0) pages = 1;
  uint64_t first = m.Allocate(owner, pages);
  uint64_t ns = 0, total = 0, touches = 0;
  Rng rng(42);
  for (uint64_t i = 0; i < pages; ++i) m.Touch(first + i, false, &ns);  // warm-up, in order
  for (int pass = 0; pass < 3; ++pass) {
    for (uint64_t i = 0; i < pages; ++i) {
      m.Touch(first + (random ? rng.UniformInt(pages) : i), false, &ns);
      total += ns;
      ++touches;
    }
  }
  return static_cast<double>(total) / static_cast<double>(touches) / ResidentNs(params);
}

struct Priorities {
  double high_slowdown = 0;
  uint64_t high_evicted = 0, low_evicted = 0, low_faults = 0;
  double low_slowdown = 0;
};

// printf into the end of `out`.
__attribute__((format(printf, 2, 3))) void Appendf(std::string* out, const char* format, ...) {
  va_list args;
  va_start(args, format);
  va_list again;
  va_copy(again, args);
  int n = std::vsnprintf(nullptr, 0, format, args);
  va_end(args);
  if (n > 0) {
    size_t at = out->size();
    out->resize(at + static_cast<size_t>(n) + 1);
    std::vsnprintf(out->data() + at, static_cast<size_t>(n) + 1, format, again);
    out->resize(at + static_cast<size_t>(n));
  }
  va_end(again);
}

Priorities RunPriorities(const UvmParams& params) {
  UvmModel m(params);
  int high = m.AddOwner(true), low = m.AddOwner(false);
  uint64_t half = m.capacity_pages() / 2;
  uint64_t h = m.Allocate(high, half);
  uint64_t l = m.Allocate(low, 2 * (m.capacity_pages() - half));  // twice its share
  uint64_t ns = 0;
  for (uint64_t i = 0; i < half; ++i) m.Touch(h + i, true, &ns);  // the high tenant starts first
  uint64_t high_ns = 0, high_touches = 0, low_ns = 0, low_touches = 0;
  Rng rng(7);
  uint64_t low_pages = 2 * (m.capacity_pages() - half);
  for (uint64_t step = 0; step < 8 * low_pages; ++step) {
    m.Touch(h + rng.UniformInt(half), false, &ns);
    high_ns += ns;
    ++high_touches;
    m.Touch(l + rng.UniformInt(low_pages), true, &ns);
    low_ns += ns;
    ++low_touches;
  }
  Priorities r;
  r.high_slowdown =
      static_cast<double>(high_ns) / static_cast<double>(high_touches) / ResidentNs(params);
  r.low_slowdown =
      static_cast<double>(low_ns) / static_cast<double>(low_touches) / ResidentNs(params);
  r.high_evicted = m.stats(high).evicted;
  r.low_evicted = m.stats(low).evicted;
  r.low_faults = m.stats(low).faults;
  return r;
}

}  // namespace

std::string RunOversub(const OversubModel& model, bool json) {
  UvmParams p;
  p.device_bytes = model.device_bytes;
  p.link_bytes_per_s = model.link_bytes_per_s;
  p.fault_latency_ns = model.fault_latency_ns;
  const double ratios[] = {0.25, 0.5, 0.75, 0.9, 1.0, 1.05, 1.1, 1.25, 1.5, 2.0, 3.0};
  std::vector<double> stream, random;
  for (double r : ratios) {
    stream.push_back(Slowdown(p, r, false));
    random.push_back(Slowdown(p, r, true));
  }
  Priorities pr = RunPriorities(p);
  if (json) {
    std::string out = "{\"model\":{\"page_bytes\":" + std::to_string(p.page_bytes) +
                      ",\"device_bytes\":" + std::to_string(p.device_bytes) +
                      ",\"device_bytes_per_s\":" + std::to_string(p.device_bytes_per_s) +
                      ",\"link_bytes_per_s\":" + std::to_string(p.link_bytes_per_s) +
                      ",\"fault_latency_ns\":" + std::to_string(p.fault_latency_ns) +
                      "},\"curve\":[";
    for (size_t i = 0; i < stream.size(); ++i) {
      char b[160];
      std::snprintf(b, sizeof b, "%s{\"working_set\":%.2f,\"stream\":%.3f,\"random\":%.3f}",
                    i ? "," : "", ratios[i], stream[i], random[i]);
      out += b;
    }
    char b[256];
    std::snprintf(b, sizeof b,
                  "],\"priorities\":{\"high_slowdown\":%.4f,\"high_evicted\":%llu,"
                  "\"low_slowdown\":%.3f,\"low_evicted\":%llu}}\n",
                  pr.high_slowdown, static_cast<unsigned long long>(pr.high_evicted),
                  pr.low_slowdown, static_cast<unsigned long long>(pr.low_evicted));
    out += b;
    return out;
  }
  std::string out;
  Appendf(&out,
          "UVM model: %s device, 2 MiB pages, device %.2f TB/s, host link %.1f GB/s, fault %.1f "
          "us\n",
          FormatBytes(p.device_bytes).c_str(), static_cast<double>(p.device_bytes_per_s) / 1e12,
          static_cast<double>(p.link_bytes_per_s) / 1e9,
          static_cast<double>(p.fault_latency_ns) / 1e3);
  Appendf(&out, "%-12s %-10s %-10s\n", "working set", "stream", "random");
  for (size_t i = 0; i < stream.size(); ++i) {
    Appendf(&out, "%-12.2f %-10.2f %-10.2f\n", ratios[i], stream[i], random[i]);
  }
  Appendf(&out,
          "high priority (half the device) beside a low one spilling twice its share: high "
          "slowdown %.4f, high pages evicted %llu; low slowdown %.2f, low pages evicted %llu\n",
          pr.high_slowdown, static_cast<unsigned long long>(pr.high_evicted), pr.low_slowdown,
          static_cast<unsigned long long>(pr.low_evicted));
  return out;
}

}  // namespace vgpu::bench
