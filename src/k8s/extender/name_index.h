// NameIndex: node name -> dense id, built once per engine rebuild and read on every request.
// An open-addressing table of (hash, id) over a contiguous array: a lookup costs one hash and
// usually one string compare, with no allocation (a 1,000-name filter request does 1,000).
// Not thread-safe for Build; Find may run concurrently with other Finds.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vgpu::k8s {

class NameIndex {
 public:
  // names[i] gets id i. Names must be unique.
  void Build(const std::vector<std::string>* names);
  std::optional<uint32_t> Find(std::string_view name) const;

 private:
  struct Slot {
    uint32_t hash = 0;
    uint32_t id_plus_one = 0;  // 0 = empty
  };
  const std::vector<std::string>* names_ = nullptr;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace vgpu::k8s
