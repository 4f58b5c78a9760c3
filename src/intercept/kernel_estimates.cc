#include "intercept/kernel_estimates.h"

namespace vgpu::intercept {
namespace {

uint64_t Mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t Blend(uint64_t old_ns, uint64_t new_ns) { return (3 * old_ns + new_ns + 2) / 4; }

}  // namespace

uint64_t KernelEstimates::KernelKey(const void* function, uint64_t grid_blocks) {
  uint64_t k = Mix(reinterpret_cast<uint64_t>(function) ^ Mix(grid_blocks + 1));
  return k == 0 ? 1 : k;
}

uint64_t KernelEstimates::GraphKey(const void* exec) {
  uint64_t k = Mix(reinterpret_cast<uint64_t>(exec) ^ 0x6772617068ULL);
  return k == 0 ? 1 : k;
}

KernelEstimates::Estimate KernelEstimates::Get(uint64_t key) const {
  uint64_t home = key % kCapacity;
  for (int i = 0; i < kProbe; ++i) {
    const Entry& e = entries_[(home + i) % kCapacity];
    if (e.key == key) return {e.ns, true};
    if (e.key == 0) break;
  }
  return {any_ ? average_ns_ : 0, false};
}

void KernelEstimates::Update(uint64_t key, uint64_t measured_ns) {
  average_ns_ = any_ ? (7 * average_ns_ + measured_ns + 4) / 8 : measured_ns;
  any_ = true;
  ++stamp_;
  uint64_t home = key % kCapacity;
  Entry* victim = nullptr;
  for (int i = 0; i < kProbe; ++i) {
    Entry& e = entries_[(home + i) % kCapacity];
    if (e.key == key) {
      e.ns = Blend(e.ns, measured_ns);
      e.stamp = stamp_;
      return;
    }
    if (e.key == 0) {
      victim = &e;
      break;
    }
    if (victim == nullptr || e.stamp < victim->stamp) victim = &e;
  }
  victim->key = key;
  victim->ns = measured_ns;
  victim->stamp = stamp_;
}

void KernelEstimates::Clear() {
  for (Entry& e : entries_) e = Entry{};
  stamp_ = 0;
  average_ns_ = 0;
  any_ = false;
}

}  // namespace vgpu::intercept
