// GPU models interned to small ids, and sets of allowed models.
//
// Contract:
// - A ModelRegistry maps model names ("T4", "V100M32", ...) to ids 0..63 in the order they are
// first
//   interned. Names are case-sensitive and may not be empty or contain '|'.
// - A ModelSet is a bitmask over ids. The empty set means "any model" (a pod without a GPU-model
//   constraint), so Allows() is true for every model when the set is empty.
// - ParseSet("A|B") accepts the Alibaba trace's `gpu_spec` syntax: names joined by '|', duplicates
//   allowed, "" = any model. An unknown name is kNotFound naming the model; callers add the file,
//   line and column.
// - Value types; a registry is not thread-safe for Intern, const methods may run concurrently.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace vgpu::sched {

using ModelId = uint8_t;
inline constexpr int kMaxModels = 64;

class ModelSet {
 public:
  constexpr ModelSet() = default;
  static constexpr ModelSet FromBits(uint64_t bits) {
    ModelSet s;
    s.bits_ = bits;
    return s;
  }
  static constexpr ModelSet Of(ModelId m) { return FromBits(uint64_t{1} << m); }

  // True when the set places no constraint (empty).
  constexpr bool IsAny() const { return bits_ == 0; }
  constexpr bool Allows(ModelId m) const { return bits_ == 0 || ((bits_ >> m) & 1u) != 0; }
  constexpr void Add(ModelId m) { bits_ |= uint64_t{1} << m; }
  constexpr uint64_t bits() const { return bits_; }

  friend constexpr bool operator==(ModelSet a, ModelSet b) { return a.bits_ == b.bits_; }

 private:
  uint64_t bits_ = 0;
};

class ModelRegistry {
 public:
  // Returns the id of `name`, adding it if new. Errors: empty name, '|' in the name, more than
  // kMaxModels models (kInvalidArgument / kResourceExhausted).
  Result<ModelId> Intern(std::string_view name);
  std::optional<ModelId> Find(std::string_view name) const;
  // REQUIRES: id < size().
  const std::string& Name(ModelId id) const { return names_[id]; }
  size_t size() const { return names_.size(); }

  // Parses "A|B|..." into a set of known models; "" is the any-model set.
  Result<ModelSet> ParseSet(std::string_view spec) const;
  // The set's names in alphabetical order joined by '|'; "" for the any-model set.
  std::string Format(ModelSet set) const;

 private:
  std::vector<std::string> names_;
};

}  // namespace vgpu::sched
