#include "k8s/extender/name_index.h"

#include <cstring>

namespace vgpu::k8s {
namespace {

// A 64-bit hash of a name, eight bytes at a time (node names are short: one or two words), with
// a multiply-xorshift finish so that both the low bits (the slot) and the high bits (the tag)
// depend on every byte.
uint64_t NameHash(std::string_view s) {
  uint64_t h = 0x9e3779b97f4a7c15ULL ^ s.size();
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, sizeof w);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ULL;
    h ^= h >> 31;
  }
  uint64_t tail = 0;
  if (s.size() >= 8) {
    std::memcpy(&tail, s.data() + s.size() - 8, sizeof tail);  // the last word, overlapping
  } else {
    for (size_t k = 0; k < s.size(); ++k) {
      tail |= uint64_t{static_cast<unsigned char>(s[k])} << (8 * k);
    }
  }
  h = (h ^ tail) * 0x94d049bb133111ebULL;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 32);
}

}  // namespace

void NameIndex::Build(const std::vector<std::string>* names) {
  names_ = names;
  size_t size = 16;
  while (size < names->size() * 2) size *= 2;
  slots_.assign(size, Slot{});
  mask_ = size - 1;
  for (size_t id = 0; id < names->size(); ++id) {
    const uint64_t h = NameHash((*names)[id]);
    size_t i = h & mask_;
    while (slots_[i].id_plus_one != 0) i = (i + 1) & mask_;
    slots_[i] = Slot{static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(id + 1)};
  }
}

std::optional<uint32_t> NameIndex::Find(std::string_view name) const {
  if (slots_.empty()) return std::nullopt;
  const uint64_t h = NameHash(name);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id_plus_one == 0) return std::nullopt;
    if (s.hash == tag && (*names_)[s.id_plus_one - 1] == name) return s.id_plus_one - 1;
  }
}

}  // namespace vgpu::k8s
