#include "mig/profiles.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace vgpu::mig {
namespace {

// Legal starts (bit s = start s), from `nvidia-smi mig -lgipp` on A100/H100.
constexpr uint8_t kStarts1 = 0x7F;    // {0,1,2,3,4,5,6}:1
constexpr uint8_t kStarts2x1 = 0x55;  // {0,2,4,6}:2 (1g with double memory)
constexpr uint8_t kStarts2 = 0x15;    // {0,2,4}:2
constexpr uint8_t kStarts3 = 0x11;    // {0,4}:4
constexpr uint8_t kStarts0 = 0x01;    // {0}:4 and {0}:8

// NVML profile indices (NVML_GPU_INSTANCE_PROFILE_*).
constexpr int k1Slice = 0x0, k2Slice = 0x1, k3Slice = 0x2, k4Slice = 0x3, k7Slice = 0x4;
constexpr int k1SliceRev1 = 0x7, k1SliceRev2 = 0x9;

// H200 141GB: MIG guide v580 Table 8 (slices, engines, max counts); `nvidia-smi mig -lgip` output
// in NVIDIA/mig-parted#120 (ids, SMs, 16.00/32.25/69.50 GiB), the 7g row from an H200 -lgip
// fixture (140.00 GiB). Placements assumed equal to H100's (unconfirmed).
// Engines are {copy, decoder, encoder, jpeg, ofa}.
constexpr Profile kH200[] = {
    {"1g.18gb", 19, k1Slice, 1, 1, 16, 16384, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.18gb+me", 20, k1SliceRev1, 1, 1, 16, 16384, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.35gb", 15, k1SliceRev2, 2, 1, 26, 33024, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.35gb", 14, k2Slice, 2, 2, 32, 33024, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.71gb", 9, k3Slice, 4, 3, 60, 71168, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.71gb", 5, k4Slice, 4, 4, 64, 71168, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.141gb", 0, k7Slice, 8, 7, 132, 143360, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// H100 80GB: `nvidia-smi mig -lgip` (9.75/19.62/39.50/79.25 GiB) and -lgipp; MIG guide Table 7.
constexpr Profile kH100_80[] = {
    {"1g.10gb", 19, k1Slice, 1, 1, 16, 9984, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.10gb+me", 20, k1SliceRev1, 1, 1, 16, 9984, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.20gb", 15, k1SliceRev2, 2, 1, 26, 20096, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.20gb", 14, k2Slice, 2, 2, 32, 20096, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.40gb", 9, k3Slice, 4, 3, 60, 40448, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.40gb", 5, k4Slice, 4, 4, 64, 40448, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.80gb", 0, k7Slice, 8, 7, 132, 81152, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// H100 NVL 94GB: H100's ids, SMs, counts and placements; memory H100's scaled to 94 GB
// (nominal, not captured output).
constexpr Profile kH100_94[] = {
    {"1g.12gb", 19, k1Slice, 1, 1, 16, 11776, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.12gb+me", 20, k1SliceRev1, 1, 1, 16, 11776, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.24gb", 15, k1SliceRev2, 2, 1, 26, 23552, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.24gb", 14, k2Slice, 2, 2, 32, 23552, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.47gb", 9, k3Slice, 4, 3, 60, 47360, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.47gb", 5, k4Slice, 4, 4, 64, 47360, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.94gb", 0, k7Slice, 8, 7, 132, 95232, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// A100 40GB: MIG guide Table 6 and -lgip (4.75/9.75/19.62/39.50 GiB); 108 SMs in all. The
// 1g.10gb (id 15) profile came with later drivers; its placements follow H100's {0,2,4,6}:2.
constexpr Profile kA100_40[] = {
    {"1g.5gb", 19, k1Slice, 1, 1, 14, 4864, 7, kStarts1, {1, 0, 0, 0, 0}, false},
    {"1g.5gb+me", 20, k1SliceRev1, 1, 1, 14, 4864, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.10gb", 15, k1SliceRev2, 2, 1, 14, 9984, 4, kStarts2x1, {1, 1, 0, 0, 0}, false},
    {"2g.10gb", 14, k2Slice, 2, 2, 28, 9984, 3, kStarts2, {2, 1, 0, 0, 0}, false},
    {"3g.20gb", 9, k3Slice, 4, 3, 42, 20096, 2, kStarts3, {3, 2, 0, 0, 0}, false},
    {"4g.20gb", 5, k4Slice, 4, 4, 56, 20096, 1, kStarts0, {4, 2, 0, 0, 0}, false},
    {"7g.40gb", 0, k7Slice, 8, 7, 98, 40448, 1, kStarts0, {7, 5, 0, 1, 1}, false},
};

// A100 80GB: A100-40GB's geometry with the guide's 80GB profile names; memory nominal.
constexpr Profile kA100_80[] = {
    {"1g.10gb", 19, k1Slice, 1, 1, 14, 9728, 7, kStarts1, {1, 0, 0, 0, 0}, false},
    {"1g.10gb+me", 20, k1SliceRev1, 1, 1, 14, 9728, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.20gb", 15, k1SliceRev2, 2, 1, 14, 19968, 4, kStarts2x1, {1, 1, 0, 0, 0}, false},
    {"2g.20gb", 14, k2Slice, 2, 2, 28, 19968, 3, kStarts2, {2, 1, 0, 0, 0}, false},
    {"3g.40gb", 9, k3Slice, 4, 3, 42, 40192, 2, kStarts3, {3, 2, 0, 0, 0}, false},
    {"4g.40gb", 5, k4Slice, 4, 4, 56, 40192, 1, kStarts0, {4, 2, 0, 0, 0}, false},
    {"7g.80gb", 0, k7Slice, 8, 7, 98, 80640, 1, kStarts0, {7, 5, 0, 1, 1}, false},
};

constexpr std::string_view kA100_40Names[] = {"NVIDIA A100-SXM4-40GB", "NVIDIA A100-PCIE-40GB",
                                              "NVIDIA A100 40GB PCIe"};
constexpr std::string_view kA100_80Names[] = {"NVIDIA A100-SXM4-80GB", "NVIDIA A100 80GB PCIe",
                                              "NVIDIA A100-PCIE-80GB"};
constexpr std::string_view kH100_80Names[] = {"NVIDIA H100 80GB HBM3", "NVIDIA H100 PCIe",
                                              "NVIDIA H100"};
constexpr std::string_view kH100_94Names[] = {"NVIDIA H100 NVL"};
constexpr std::string_view kH200Names[] = {"NVIDIA H200", "NVIDIA H200 NVL"};

const std::array<ModelTable, 5> kModels = {{
    {"A100-40GB", "NVIDIA A100 40GB", kA100_40Names, 108, 40536, kA100_40, true, true},
    {"A100-80GB", "NVIDIA A100 80GB", kA100_80Names, 108, 81920, kA100_80, true, false},
    {"H100-80GB", "NVIDIA H100 80GB", kH100_80Names, 132, 81559, kH100_80, true, true},
    {"H100-94GB", "NVIDIA H100 NVL 94GB", kH100_94Names, 132, 95830, kH100_94, true, false},
    {"H200", "NVIDIA H200 141GB", kH200Names, 132, 143771, kH200, false, true},
}};

bool EqualFold(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

bool Has(const std::string& s, std::string_view part) { return s.find(part) != s.npos; }

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

std::span<const ModelTable> AllModels() { return kModels; }

const ModelTable* ModelByKey(std::string_view key) {
  for (const ModelTable& m : kModels) {
    if (EqualFold(m.key, key)) return &m;
  }
  if (EqualFold(key, "H100")) return &kModels[2];
  if (EqualFold(key, "A100")) return &kModels[0];
  if (EqualFold(key, "H100-NVL")) return &kModels[3];
  if (EqualFold(key, "H200-141GB")) return &kModels[4];
  return nullptr;
}

const ModelTable* ModelByNvmlName(std::string_view name) {
  for (const ModelTable& m : kModels) {
    for (std::string_view n : m.nvml_names) {
      if (EqualFold(n, name) || (n.size() > 7 && EqualFold(n.substr(7), name))) return &m;
    }
  }
  // Other spellings (HAMi's "H200-SXM5", the simulated GPU's "vgpu simulated H200 (140 GiB)"):
  // by the chip and the memory size in the name.
  const std::string u = Upper(name);
  if (Has(u, "H200")) return &kModels[4];
  if (Has(u, "H100")) return Has(u, "NVL") || Has(u, "94") ? &kModels[3] : &kModels[2];
  if (Has(u, "A100")) return Has(u, "80") ? &kModels[1] : &kModels[0];
  return nullptr;
}

const ModelTable* FindModel(std::string_view key_or_name) {
  const ModelTable* m = ModelByKey(key_or_name);
  return m ? m : ModelByNvmlName(key_or_name);
}

std::string ResourceNameOf(const Profile& p) { return ResourceNameOfProfile(p.name); }

std::string ResourceNameOfProfile(std::string_view profile) {
  std::string name(profile);
  if (const size_t plus = name.find('+'); plus != std::string::npos) name[plus] = '.';
  return std::string(kMigResourcePrefix) + name;
}

}  // namespace vgpu::mig
