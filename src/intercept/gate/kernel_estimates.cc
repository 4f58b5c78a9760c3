#include "intercept/gate/kernel_estimates.h"

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

// Measurements err only on the long side, so shorter ones move the estimate faster.
uint64_t Blend(uint64_t old_ns, uint64_t new_ns) {
  return new_ns < old_ns ? (old_ns + new_ns + 1) / 2 : (3 * old_ns + new_ns + 2) / 4;
}

}  // namespace

uint64_t KernelEstimates::KernelKey(const void* function, uint64_t grid_blocks) {
  uint64_t k = Mix(reinterpret_cast<uint64_t>(function) ^ Mix(grid_blocks + 1));
  return k == 0 ? 1 : k;
}

uint64_t KernelEstimates::FamilyKey(const void* function) {
  uint64_t k = Mix(reinterpret_cast<uint64_t>(function) ^ 0x66616d696c79ULL);
  return k == 0 ? 1 : k;
}

uint64_t KernelEstimates::GraphKey(const void* exec) {
  uint64_t k = Mix(reinterpret_cast<uint64_t>(exec) ^ 0x6772617068ULL);
  return k == 0 ? 1 : k;
}

const KernelEstimates::Entry* KernelEstimates::Find(uint64_t key) const {
  if (key == 0) return nullptr;
  uint64_t home = key % kCapacity;
  for (int i = 0; i < kProbe; ++i) {
    const Entry& e = entries_[(home + i) % kCapacity];
    if (e.key == key) return &e;
    if (e.key == 0) break;
  }
  return nullptr;
}

KernelEstimates::Estimate KernelEstimates::Get(uint64_t key, uint64_t family) const {
  if (const Entry* e = Find(key)) return {e->ns, true};
  if (const Entry* e = Find(family)) return {e->ns, true};
  return {0, false};
}

bool KernelEstimates::Update(uint64_t key, uint64_t family, uint64_t measured_ns) {
  bool accepted = Put(key, measured_ns);
  if (family != key) Put(family, measured_ns);
  return accepted;
}

bool KernelEstimates::Put(uint64_t key, uint64_t measured_ns) {
  if (key == 0) return false;
  ++stamp_;
  uint64_t home = key % kCapacity;
  Entry* victim = nullptr;
  for (int i = 0; i < kProbe; ++i) {
    Entry& e = entries_[(home + i) % kCapacity];
    if (e.key == key) {
      e.stamp = stamp_;
      // A measurement can only be too long (a wait it could not see), so one far above the
      // estimate is set aside; a run of them means the kernel really got longer.
      if (measured_ns <= e.ns + e.ns / 4 + kSlackNs) {
        e.ns = Blend(e.ns, measured_ns);
        e.highs = 0;
        return true;
      }
      e.high_ns = e.highs == 0 || measured_ns < e.high_ns ? measured_ns : e.high_ns;
      if (++e.highs < kHighsToAccept) return false;
      e.ns = e.high_ns;
      e.highs = 0;
      return true;
    }
    if (e.key == 0) {
      victim = &e;
      break;
    }
    if (victim == nullptr || e.stamp < victim->stamp) victim = &e;
  }
  *victim = Entry{key, measured_ns, stamp_, 0, 0};
  return true;
}

void KernelEstimates::Clear() {
  for (Entry& e : entries_) e = Entry{};
  stamp_ = 0;
}

}  // namespace vgpu::intercept
