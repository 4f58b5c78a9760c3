// A MIG layout: the GPU instances on one GPU, as (profile, start) pairs over a model's table, and
// the pure operations on it: validation, the feasible starts of a profile, add and remove.
//
// Contract:
// - Instance::profile is the profile's index in ModelTable::profiles; start its first memory
//   slice. A Layout keeps its instances sorted by start.
// - A layout is valid when every profile is the table's, every start is legal for its profile,
//   no two instances share a memory slice, no profile exceeds its max count, at most the table's
//   max_instances instances exist, their compute slices add up to at most its compute_slices,
//   and their engines (copy, decoder, JPEG, OFA) to at most the whole-GPU profile's
//   (ModelTable::EngineBudget: on an A30 the 1g.6gb+me and 2g.12gb+me profiles share its one OFA
//   and JPEG engine). Validate reports the first violation, naming the instance(s) ("2g.35gb@2
//   overlaps 3g.71gb@0 on memory slices 2-3").
// - CheckAdd says why (profile, start) cannot be added, and which memory slices block it;
//   FeasibleStarts lists the starts where it can. A request is refused only when FeasibleStarts
//   is empty.
// - Text form (`vgpu mig plan --layout`, configs): "3g.71gb@0,1g.18gb@4"; "" is the empty
//   layout. ParseLayout errors name the item and say what is wrong.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/status.h"
#include "mig/profiles.h"

namespace vgpu::mig {

struct Instance {
  int profile = 0;  // index in ModelTable::profiles
  int start = 0;    // first memory slice
  friend bool operator==(const Instance&, const Instance&) = default;
};

struct NamedInstance {
  std::string profile;
  int start = 0;
};

struct Layout {
  const ModelTable* table = nullptr;
  std::vector<Instance> instances;  // sorted by start
  friend bool operator==(const Layout& a, const Layout& b) {
    return a.table == b.table && a.instances == b.instances;
  }
};

enum class Refusal {
  kNone,            // it fits
  kUnknownProfile,  // not a profile of this table
  kIllegalStart,    // the profile cannot start there
  kOverlap,         // a memory slice it needs is taken
  kMaxCount,        // the profile's max count is reached
  kInstanceCount,   // the table's max_instances instances exist
  kComputeSlices,   // not enough compute slices left
  kEngines,         // an engine (copy, decoder, JPEG, OFA) the instance needs is taken
};

struct AddCheck {
  Refusal refusal = Refusal::kNone;
  uint8_t blocking_slices = 0;  // for kOverlap: the taken memory slices it needs
  bool ok() const { return refusal == Refusal::kNone; }
};

// "3g.71gb@0".
std::string InstanceName(const ModelTable& table, const Instance& inst);
// "3g.71gb@0,1g.18gb@4" ("" when empty).
std::string FormatLayout(const Layout& layout);
// Memory slices of a bit mask as text: "2-3", "0,4-5".
std::string SliceText(uint8_t mask);

// The memory slices in use, as a bit mask.
uint8_t UsedSlices(const Layout& layout);
int UsedComputeSlices(const Layout& layout);
int CountOf(const Layout& layout, int profile);

Status Validate(const Layout& layout);
AddCheck CheckAdd(const Layout& layout, Instance inst);
// The starts where `profile` can be added, increasing.
std::vector<int> FeasibleStarts(const Layout& layout, int profile);
// Why CheckAdd refuses, in words ("needs 2 compute slices, 1 left"); "" when it fits.
std::string RefusalText(const Layout& layout, Instance inst, const AddCheck& check);
// Adds `inst` (kFailedPrecondition naming the blocking slices or the limit when CheckAdd refuses).
Status Add(Layout* layout, Instance inst);
// Removes the instance that starts at `start` (kNotFound when there is none).
Status Remove(Layout* layout, int start);

// The layout of these named instances, validated; errors name the instance.
Result<Layout> LayoutFromNames(const ModelTable& table, std::span<const NamedInstance> named);
// Parses "3g.71gb@0,1g.18gb@4" against `table` and validates it.
Result<Layout> ParseLayout(const ModelTable& table, std::string_view text);

}  // namespace vgpu::mig
