#include "mig/profiles.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>

namespace vgpu::mig {
namespace {

constexpr std::string_view kNvidiaPrefix = "NVIDIA ";

bool EqualFold(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

// NVML names carry "NVIDIA " in front since R470 ("NVIDIA A100-SXM4-40GB"); older drivers and
// some tools print the same name without it ("A100-SXM4-40GB").
bool SameName(std::string_view table_name, std::string_view name) {
  if (EqualFold(table_name, name)) return true;
  return table_name.starts_with(kNvidiaPrefix) &&
         EqualFold(table_name.substr(kNvidiaPrefix.size()), name);
}

bool HasName(std::span<const std::string_view> names, std::string_view name) {
  return std::any_of(names.begin(), names.end(),
                     [&](std::string_view n) { return SameName(n, name); });
}

bool HasId(std::span<const uint32_t> ids, uint32_t id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

// One of the model's NVML names, or its simulated GPU's name.
bool NamesModel(const hw::GpuModel& g, std::string_view name) {
  return HasName(g.nvml_names, name) || (g.sim != nullptr && SameName(g.sim->name, name));
}

bool MemoryFits(const hw::GpuModel& g, int64_t memory_mib) {
  const double d = static_cast<double>(memory_mib - g.memory_mib);
  return memory_mib > 0 && std::abs(d) <= kMemoryTolerance * static_cast<double>(g.memory_mib);
}

std::string Describe(const GpuIdentity& g) {
  std::string out = "\"" + std::string(g.name) + "\"";
  if (g.memory_mib > 0) out += " with " + std::to_string(g.memory_mib) + " MiB";
  if (g.pci_device_id != 0) {
    char buf[24];
    std::snprintf(buf, sizeof buf, ", PCI device 0x%08X", g.pci_device_id);
    out += buf;
  }
  return out;
}

// `full_names`: only names as NVML spells them ("NVIDIA H100", not "H100", which a user typing a
// model key means otherwise).
const UntabledModel* FindUntabled(std::string_view name, uint32_t pci, bool full_names) {
  for (const UntabledModel& u : UntabledModels()) {
    const hw::GpuModel& g = *u.gpu;
    const bool named = full_names
                           ? std::any_of(g.nvml_names.begin(), g.nvml_names.end(),
                                         [&](std::string_view n) { return EqualFold(n, name); })
                           : HasName(g.nvml_names, name);
    if (named || (pci != 0 && HasId(g.pci_device_ids, pci)) || EqualFold(g.display, name)) {
      return &u;
    }
  }
  return nullptr;
}

std::string NoTable(const UntabledModel& u) {
  return "vgpu has no MIG table for the " + std::string(u.gpu->display) + ": " +
         std::string(u.why) + "; it gets no MIG offers";
}

}  // namespace

std::vector<int> Profile::Starts() const {
  std::vector<int> out;
  for (int s = 0; s < kMemorySlices; ++s) {
    if (LegalStart(s)) out.push_back(s);
  }
  return out;
}

const Profile* ModelTable::Find(std::string_view name) const {
  for (const Profile& p : profiles) {
    if (EqualFold(p.name, name)) return &p;
    // NVIDIA's resource names spell "+me" as ".me".
    if (p.media_extensions && name.size() == p.name.size() &&
        EqualFold(p.name.substr(0, p.name.size() - 3), name.substr(0, name.size() - 3)) &&
        EqualFold(name.substr(name.size() - 3), ".me")) {
      return &p;
    }
  }
  return nullptr;
}

const Profile* ModelTable::FindById(int profile_id) const {
  for (const Profile& p : profiles) {
    if (p.profile_id == profile_id) return &p;
  }
  return nullptr;
}

int ModelTable::IndexOf(const Profile* p) const {
  for (size_t i = 0; i < profiles.size(); ++i) {
    if (&profiles[i] == p) return static_cast<int>(i);
  }
  return -1;
}

int ModelTable::IndexOf(std::string_view name) const {
  const Profile* p = Find(name);
  return p ? IndexOf(p) : -1;
}

std::vector<int> ModelTable::Fitting(int64_t memory_mib) const {
  std::vector<int> out;
  for (int q = 0; q < static_cast<int>(profiles.size()); ++q) {
    if (!profiles[q].media_extensions && profiles[q].memory_mib >= memory_mib) out.push_back(q);
  }
  std::stable_sort(out.begin(), out.end(), [&](int a, int b) {
    const Profile &pa = profiles[a], &pb = profiles[b];
    return std::pair(pa.memory_mib, pa.memory_slices + pa.compute_slices) <
           std::pair(pb.memory_mib, pb.memory_slices + pb.compute_slices);
  });
  return out;
}

Engines ModelTable::EngineBudget() const {
  for (const Profile& p : profiles) {
    if (p.memory_slices == memory_slices) return p.engines;
  }
  return {};
}

ModelMatch IdentifyModel(const GpuIdentity& gpu) {
  ModelMatch out;
  const ModelTable* named = nullptr;
  for (const ModelTable& m : AllModels()) {
    if (NamesModel(*m.gpu, gpu.name)) named = &m;
  }
  if (named == nullptr) {
    const UntabledModel* u = FindUntabled(gpu.name, gpu.pci_device_id, false);
    out.why = Describe(gpu) + ": " +
              (u ? NoTable(*u) : "not a MIG model vgpu has a table for (" + ModelKeys() + ")");
    return out;
  }
  if (!MemoryFits(*named->gpu, gpu.memory_mib)) {
    out.why = Describe(gpu) + ": the " + std::string(named->key) + " table is for " +
              std::to_string(named->gpu->memory_mib) + " MiB (within 3%); " +
              (gpu.memory_mib > 0 ? "another memory size is another model, without a table"
                                  : "the memory size is unknown") +
              ": no MIG offers";
    return out;
  }
  if (gpu.pci_device_id != 0 && !named->gpu->pci_device_ids.empty() &&
      !HasId(named->gpu->pci_device_ids, gpu.pci_device_id)) {
    out.why = Describe(gpu) + ": not a PCI device id of the " + std::string(named->key) +
              " table: no MIG offers";
    return out;
  }
  out.table = named;
  return out;
}

const ModelTable* ModelByKey(std::string_view key) {
  for (const ModelTable& m : AllModels()) {
    if (EqualFold(m.key, key)) return &m;
  }
  return nullptr;
}

std::string ModelKeys() {
  std::string out;
  for (const ModelTable& m : AllModels()) out += (out.empty() ? "" : ", ") + std::string(m.key);
  return out;
}

Result<const ModelTable*> LookupModel(std::string_view key_or_name) {
  if (const ModelTable* m = ModelByKey(key_or_name)) return m;
  for (const ModelTable& m : AllModels()) {
    if (NamesModel(*m.gpu, key_or_name)) return &m;
  }
  if (const UntabledModel* u = FindUntabled(key_or_name, 0, true)) {
    return Status::NotFound("'" + std::string(key_or_name) + "': " + NoTable(*u));
  }
  return Status::NotFound("unknown model '" + std::string(key_or_name) +
                          "' (known: " + ModelKeys() + ", or one of their exact NVML names)");
}

OwnedTable::OwnedTable(std::vector<ReportedProfile> reported) {
  names_.reserve(reported.size());
  for (const ReportedProfile& r : reported) names_.push_back(r.name);
  int memory_slices = 0, compute_slices = 0, max_instances = 0;
  for (size_t i = 0; i < reported.size(); ++i) {
    const ReportedProfile& r = reported[i];
    Profile p;
    p.name = names_[i];
    p.profile_id = r.profile_id;
    p.memory_slices = r.memory_slices;
    p.compute_slices = r.compute_slices;
    p.sm_count = r.sm_count;
    p.memory_mib = r.memory_mib;
    p.max_count = r.max_count;
    for (int s : r.starts) {
      if (s >= 0 && s < kMemorySlices) p.start_mask |= static_cast<uint8_t>(1u << s);
    }
    p.engines = r.engines;
    p.media_extensions = p.name.ends_with("+me");
    profiles_.push_back(p);
    memory_slices = std::max(memory_slices, r.memory_slices);
    compute_slices = std::max(compute_slices, r.compute_slices);
    max_instances = std::max(max_instances, r.max_count);
  }
  table_.key = "reported";
  table_.memory_slices = memory_slices;
  table_.compute_slices = compute_slices;
  table_.max_instances = max_instances;
  table_.profiles = profiles_;
}

std::string ResourceNameOf(const Profile& p) { return ResourceNameOfProfile(p.name); }

std::string ResourceNameOfProfile(std::string_view profile) {
  std::string name(profile);
  if (const size_t plus = name.find('+'); plus != std::string::npos) name[plus] = '.';
  return std::string(kMigResourcePrefix) + name;
}

}  // namespace vgpu::mig
