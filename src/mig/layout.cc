#include "mig/layout.h"

#include <algorithm>
#include <charconv>

namespace vgpu::mig {
namespace {

const Profile* ProfileOf(const Layout& layout, int profile) {
  if (layout.table == nullptr || profile < 0 ||
      profile >= static_cast<int>(layout.table->profiles.size())) {
    return nullptr;
  }
  return &layout.table->profiles[profile];
}

void SortByStart(std::vector<Instance>* v) {
  std::sort(v->begin(), v->end(), [](const Instance& a, const Instance& b) {
    return a.start < b.start || (a.start == b.start && a.profile < b.profile);
  });
}

std::string_view Trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t");
  if (b == std::string_view::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

std::string InstanceName(const ModelTable& table, const Instance& inst) {
  const std::string name =
      inst.profile >= 0 && inst.profile < static_cast<int>(table.profiles.size())
          ? std::string(table.profiles[inst.profile].name)
          : "profile#" + std::to_string(inst.profile);
  return name + "@" + std::to_string(inst.start);
}

std::string FormatLayout(const Layout& layout) {
  std::string out;
  for (const Instance& inst : layout.instances) {
    if (!out.empty()) out += ',';
    out += InstanceName(*layout.table, inst);
  }
  return out;
}

std::string SliceText(uint8_t mask) {
  std::string out;
  for (int s = 0; s < kMemorySlices;) {
    if (!((mask >> s) & 1)) {
      ++s;
      continue;
    }
    int e = s;
    while (e + 1 < kMemorySlices && ((mask >> (e + 1)) & 1)) ++e;
    if (!out.empty()) out += ',';
    out += std::to_string(s);
    if (e > s) out += "-" + std::to_string(e);
    s = e + 1;
  }
  return out;
}

uint8_t UsedSlices(const Layout& layout) {
  uint8_t used = 0;
  for (const Instance& inst : layout.instances) {
    if (const Profile* p = ProfileOf(layout, inst.profile)) used |= p->SliceMask(inst.start);
  }
  return used;
}

int UsedComputeSlices(const Layout& layout) {
  int used = 0;
  for (const Instance& inst : layout.instances) {
    if (const Profile* p = ProfileOf(layout, inst.profile)) used += p->compute_slices;
  }
  return used;
}

int CountOf(const Layout& layout, int profile) {
  return static_cast<int>(std::count_if(layout.instances.begin(), layout.instances.end(),
                                        [&](const Instance& i) { return i.profile == profile; }));
}

AddCheck CheckAdd(const Layout& layout, Instance inst) {
  const Profile* p = ProfileOf(layout, inst.profile);
  if (p == nullptr) return {Refusal::kUnknownProfile, 0};
  if (!p->LegalStart(inst.start) || inst.start + p->memory_slices > layout.table->memory_slices) {
    return {Refusal::kIllegalStart, 0};
  }
  const uint8_t blocking = UsedSlices(layout) & p->SliceMask(inst.start);
  if (blocking != 0) return {Refusal::kOverlap, blocking};
  if (CountOf(layout, inst.profile) >= p->max_count) return {Refusal::kMaxCount, 0};
  if (static_cast<int>(layout.instances.size()) >= layout.table->max_instances) {
    return {Refusal::kInstanceCount, 0};
  }
  if (UsedComputeSlices(layout) + p->compute_slices > layout.table->compute_slices) {
    return {Refusal::kComputeSlices, 0};
  }
  const Engines budget = layout.table->EngineBudget();
  if (budget.copy > 0) {
    Engines used = p->engines;
    for (const Instance& i : layout.instances) {
      if (const Profile* q = ProfileOf(layout, i.profile)) {
        used.copy += q->engines.copy;
        used.decoder += q->engines.decoder;
        used.jpeg += q->engines.jpeg;
        used.ofa += q->engines.ofa;
      }
    }
    if (used.copy > budget.copy || used.decoder > budget.decoder || used.jpeg > budget.jpeg ||
        used.ofa > budget.ofa) {
      return {Refusal::kEngines, 0};
    }
  }
  return {};
}

std::vector<int> FeasibleStarts(const Layout& layout, int profile) {
  std::vector<int> out;
  const Profile* p = ProfileOf(layout, profile);
  if (p == nullptr) return out;
  for (int s : p->Starts()) {
    if (CheckAdd(layout, {profile, s}).ok()) out.push_back(s);
  }
  return out;
}

std::string RefusalText(const Layout& layout, Instance inst, const AddCheck& check) {
  const Profile* p = ProfileOf(layout, inst.profile);
  const std::string table = layout.table ? std::string(layout.table->key) : "no table";
  switch (check.refusal) {
    case Refusal::kNone:
      return "";
    case Refusal::kUnknownProfile:
      return "not a profile of " + table;
    case Refusal::kIllegalStart:
      return std::string(p->name) + " cannot start at memory slice " + std::to_string(inst.start) +
             " (legal starts: " + SliceText(p->start_mask) + ")";
    case Refusal::kOverlap: {
      std::string by;
      for (const Instance& other : layout.instances) {
        const Profile* q = ProfileOf(layout, other.profile);
        if (q && (q->SliceMask(other.start) & check.blocking_slices)) {
          by += (by.empty() ? "" : ", ") + InstanceName(*layout.table, other);
        }
      }
      return "memory slices " + SliceText(check.blocking_slices) + " taken by " + by;
    }
    case Refusal::kMaxCount:
      return "at most " + std::to_string(p->max_count) + " " + std::string(p->name) + " per GPU";
    case Refusal::kInstanceCount:
      return "at most " + std::to_string(layout.table->max_instances) + " instances per GPU";
    case Refusal::kComputeSlices:
      return "needs " + std::to_string(p->compute_slices) + " compute slices, " +
             std::to_string(layout.table->compute_slices - UsedComputeSlices(layout)) + " left";
    case Refusal::kEngines:
      return "the engines it needs (copy, decoder, JPEG, OFA) are taken: the GPU has " +
             std::to_string(layout.table->EngineBudget().jpeg) + " JPEG and " +
             std::to_string(layout.table->EngineBudget().ofa) + " OFA engine(s) in all";
  }
  return "";
}

Status Add(Layout* layout, Instance inst) {
  const AddCheck check = CheckAdd(*layout, inst);
  if (!check.ok()) {
    const std::string what = InstanceName(*layout->table, inst);
    const std::string why = RefusalText(*layout, inst, check);
    switch (check.refusal) {
      case Refusal::kUnknownProfile:
      case Refusal::kIllegalStart:
        return Status::InvalidArgument(what + ": " + why);
      case Refusal::kOverlap:
        return Status::FailedPrecondition(what + " overlaps " +
                                          why.substr(why.find(" taken by ") + 10) +
                                          " on memory slices " + SliceText(check.blocking_slices));
      default:
        return Status::FailedPrecondition(what + ": " + why);
    }
  }
  layout->instances.push_back(inst);
  SortByStart(&layout->instances);
  return Status::Ok();
}

Status Remove(Layout* layout, int start) {
  auto it = std::find_if(layout->instances.begin(), layout->instances.end(),
                         [&](const Instance& i) { return i.start == start; });
  if (it == layout->instances.end()) {
    return Status::NotFound("no instance starts at memory slice " + std::to_string(start));
  }
  layout->instances.erase(it);
  return Status::Ok();
}

Status Validate(const Layout& layout) {
  if (layout.table == nullptr) return Status::InvalidArgument("layout has no model table");
  // Re-adding the instances one by one finds the first violation and names it.
  Layout rebuilt{layout.table, {}};
  std::vector<Instance> sorted = layout.instances;
  SortByStart(&sorted);
  for (const Instance& inst : sorted) VGPU_RETURN_IF_ERROR(Add(&rebuilt, inst));
  return Status::Ok();
}

Result<Layout> LayoutFromNames(const ModelTable& table, std::span<const NamedInstance> named) {
  Layout layout{&table, {}};
  for (const NamedInstance& n : named) {
    const int index = table.IndexOf(n.profile);
    if (index < 0) {
      return Status::InvalidArgument(n.profile + "@" + std::to_string(n.start) + ": " +
                                     std::string(table.key) + " has no MIG profile " + n.profile);
    }
    Status s = Add(&layout, {index, n.start});
    if (!s.ok()) return Status::InvalidArgument(s.message());
  }
  return layout;
}

Result<Layout> ParseLayout(const ModelTable& table, std::string_view text) {
  std::vector<NamedInstance> named;
  text = Trim(text);
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = Trim(text.substr(0, comma));
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
    const size_t at = item.find('@');
    int start = -1;
    const std::string_view num = at == std::string_view::npos ? "" : item.substr(at + 1);
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), start);
    if (item.empty() || at == std::string_view::npos || ec != std::errc() ||
        end != num.data() + num.size() || start < 0 || start >= kMemorySlices) {
      return Status::InvalidArgument("layout item '" + std::string(item) +
                                     "': want PROFILE@START with START 0..7, e.g. 3g.71gb@0");
    }
    named.push_back({std::string(item.substr(0, at)), start});
  }
  return LayoutFromNames(table, named);
}

}  // namespace vgpu::mig
