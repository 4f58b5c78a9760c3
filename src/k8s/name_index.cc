#include "k8s/name_index.h"

#include <functional>

namespace vgpu::k8s {

void NameIndex::Build(const std::vector<std::string>* names) {
  names_ = names;
  size_t size = 16;
  while (size < names->size() * 2) size *= 2;
  slots_.assign(size, Slot{});
  mask_ = size - 1;
  for (size_t id = 0; id < names->size(); ++id) {
    const size_t h = std::hash<std::string_view>()((*names)[id]);
    size_t i = h & mask_;
    while (slots_[i].id_plus_one != 0) i = (i + 1) & mask_;
    slots_[i] = Slot{static_cast<uint32_t>(h >> 32), static_cast<uint32_t>(id + 1)};
  }
}

std::optional<uint32_t> NameIndex::Find(std::string_view name) const {
  if (slots_.empty()) return std::nullopt;
  const size_t h = std::hash<std::string_view>()(name);
  const auto tag = static_cast<uint32_t>(h >> 32);
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const Slot& s = slots_[i];
    if (s.id_plus_one == 0) return std::nullopt;
    if (s.hash == tag && (*names_)[s.id_plus_one - 1] == name) return s.id_plus_one - 1;
  }
}

}  // namespace vgpu::k8s
