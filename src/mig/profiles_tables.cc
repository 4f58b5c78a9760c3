// The MIG profile tables (profiles.h) and the MIG-capable models without one.
//
// How the figures were read: `nvidia-smi mig -lgip` prints, per profile, the NVML profile id, the
// most instances, memorySizeMB / 1024 to two decimals ("GiB"), the SMs and the engines (DEC ENC on
// the first line, CE JPEG OFA on the second). Every size in these tables is a multiple of 64 MiB
// (1/16 GiB), so the printed value names it exactly: memory_mib = round(GiB x 16) x 64 (9.62 ->
// 9856, 21.50 -> 22016, 5.81 -> 5952; nvidia-smi's MIG device list confirms several: 5952,
// 9984, 40192). Where published outputs of one model differ (drivers change the sizes),
// the table keeps the smallest. Slices per profile and profile names follow the MIG user guide's
// "Supported MIG Profiles" tables; placements are `nvidia-smi mig -lgipp` output where it was
// published for the model (placements_confirmed), else the same chip family's.
#include "mig/profiles.h"

#include <array>

#include "hw/gpu_models_table.h"

namespace vgpu::mig {
namespace {

// Legal starts (bit s = start s).
constexpr uint8_t kStarts1 = 0x7F;     // {0,1,2,3,4,5,6}:1
constexpr uint8_t kStarts2x1 = 0x55;   // {0,2,4,6}:2 (1g with double memory)
constexpr uint8_t kStarts2 = 0x15;     // {0,2,4}:2
constexpr uint8_t kStarts3 = 0x11;     // {0,4}:4
constexpr uint8_t kStarts0 = 0x01;     // {0}:4 and {0}:8
constexpr uint8_t kA30Starts1 = 0x0F;  // {0,1,2,3}:1
constexpr uint8_t kA30Starts2 = 0x05;  // {0,2}:2

// NVML profile indices (NVML_GPU_INSTANCE_PROFILE_*).
constexpr int k1Slice = 0x0, k2Slice = 0x1, k3Slice = 0x2, k4Slice = 0x3, k7Slice = 0x4;
constexpr int k1SliceRev1 = 0x7, k2SliceRev1 = 0x8, k1SliceRev2 = 0x9;

// Engines are {copy, decoder, encoder, jpeg, ofa}.

// A30 24GB: -lgip and -lgipp on an A30, driver 535.183.01 (a published terminal log: 5.81 / 11.69 /
// 23.44 GiB, the MIG devices at 5952 and 11968 MiB in nvidia-smi; placements {0,1,2,3}:1,
// {0,2}:2, {0}:4); the same ids and sizes in a Siemens test fixture (ParseMIGAvailableProfiles).
// The profile ids differ from A100's. NVML indices are inferred from the profile kinds.
constexpr Profile kA30[] = {
    {"1g.6gb", 14, k1Slice, 1, 1, 14, 5952, 4, kA30Starts1, {1, 1, 0, 0, 0}, false},
    {"1g.6gb+me", 21, k1SliceRev1, 1, 1, 14, 5952, 1, kA30Starts1, {1, 1, 0, 1, 1}, true},
    {"2g.12gb", 5, k2Slice, 2, 2, 28, 11968, 2, kA30Starts2, {2, 2, 0, 0, 0}, false},
    {"2g.12gb+me", 6, k2SliceRev1, 2, 2, 28, 11968, 1, kA30Starts2, {2, 2, 0, 1, 1}, true},
    {"4g.24gb", 0, k4Slice, 4, 4, 56, 24000, 1, kStarts0, {4, 4, 0, 1, 1}, false},
};

// A100 40GB: -lgip from harvester/pcidevices pkg/util/gpuhelper/mig_test.go (A100-PCIE-40GB:
// 4.75/9.75/19.62/39.50 GiB) and from published terminal logs of newer drivers (9.62/19.50/39.25,
// and 39.38 for 7g): the smaller kept. -lgipp from the MIG user guide "Getting Started"
// (profile 15 {0,2,4,6}:2 with later drivers). 108 SMs in all, 98 in the 7g instance.
constexpr Profile kA100_40[] = {
    {"1g.5gb", 19, k1Slice, 1, 1, 14, 4864, 7, kStarts1, {1, 0, 0, 0, 0}, false},
    {"1g.5gb+me", 20, k1SliceRev1, 1, 1, 14, 4864, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.10gb", 15, k1SliceRev2, 2, 1, 14, 9856, 4, kStarts2x1, {1, 1, 0, 0, 0}, false},
    {"2g.10gb", 14, k2Slice, 2, 2, 28, 9856, 3, kStarts2, {2, 1, 0, 0, 0}, false},
    {"3g.20gb", 9, k3Slice, 4, 3, 42, 19968, 2, kStarts3, {3, 2, 0, 0, 0}, false},
    {"4g.20gb", 5, k4Slice, 4, 4, 56, 19968, 1, kStarts0, {4, 2, 0, 0, 0}, false},
    {"7g.40gb", 0, k7Slice, 8, 7, 98, 40192, 1, kStarts0, {7, 5, 0, 1, 1}, false},
};

// A100 80GB: -lgip in published terminal logs: A100 80GB PCIe, driver 515.86.01 (9.50 / 19.50 /
// 39.25 / 79.00 GiB; its 3g.40gb MIG device shows 40192 MiB), and others with 1g.20gb (id 15)
// 19.50 and 7g 78.75 to 79.25 GiB; the smallest kept. Placements: A100 40GB's (same GA100 chip),
// not read from an 80GB card.
constexpr Profile kA100_80[] = {
    {"1g.10gb", 19, k1Slice, 1, 1, 14, 9728, 7, kStarts1, {1, 0, 0, 0, 0}, false},
    {"1g.10gb+me", 20, k1SliceRev1, 1, 1, 14, 9728, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.20gb", 15, k1SliceRev2, 2, 1, 14, 19968, 4, kStarts2x1, {1, 1, 0, 0, 0}, false},
    {"2g.20gb", 14, k2Slice, 2, 2, 28, 19968, 3, kStarts2, {2, 1, 0, 0, 0}, false},
    {"3g.40gb", 9, k3Slice, 4, 3, 42, 40192, 2, kStarts3, {3, 2, 0, 0, 0}, false},
    {"4g.40gb", 5, k4Slice, 4, 4, 56, 40192, 1, kStarts0, {4, 2, 0, 0, 0}, false},
    {"7g.80gb", 0, k7Slice, 8, 7, 98, 80640, 1, kStarts0, {7, 5, 0, 1, 1}, false},
};

// H100 SXM5 80GB ("NVIDIA H100 80GB HBM3"): -lgip and -lgipp (9.75/19.62/39.50/79.25 GiB, 132 SMs)
// in the MIG user guide and published DGX H100 logs; a 3g.40gb GI reports 40448 MiB in the guide's
// MPS example.
constexpr Profile kH100_80[] = {
    {"1g.10gb", 19, k1Slice, 1, 1, 16, 9984, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.10gb+me", 20, k1SliceRev1, 1, 1, 16, 9984, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.20gb", 15, k1SliceRev2, 2, 1, 26, 20096, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.20gb", 14, k2Slice, 2, 2, 32, 20096, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.40gb", 9, k3Slice, 4, 3, 60, 40448, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.40gb", 5, k4Slice, 4, 4, 64, 40448, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.80gb", 0, k7Slice, 8, 7, 132, 81152, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// H100 PCIe 80GB ("NVIDIA H100 PCIe"): -lgip on a Scaleway H100 PCIe, driver 570.169 (a published
// walkthrough): the SXM5 card's sizes with 114 SMs in all (14/14/14/30/46/62/114 per profile);
// its 1g.10gb MIG devices show 9984 MiB. Placements: H100 SXM5's (not read from a PCIe card).
constexpr Profile kH100_PCIe[] = {
    {"1g.10gb", 19, k1Slice, 1, 1, 14, 9984, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.10gb+me", 20, k1SliceRev1, 1, 1, 14, 9984, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.20gb", 15, k1SliceRev2, 2, 1, 14, 20096, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.20gb", 14, k2Slice, 2, 2, 30, 20096, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.40gb", 9, k3Slice, 4, 3, 46, 40448, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.40gb", 5, k4Slice, 4, 4, 62, 40448, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.80gb", 0, k7Slice, 8, 7, 114, 81152, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// H100 NVL 94GB: -lgip in harvester/pcidevices pkg/util/gpuhelper/mig_test.go (10.62 / 21.50 /
// 46.12 / 92.62 GiB) and in NVIDIA/gpu-operator#900 and mig-parted#101 (10.75 / 21.62 / 46.38):
// the smaller kept. -lgipp of the H100 NVL in NVIDIA's MIG blog post.
constexpr Profile kH100_NVL[] = {
    {"1g.12gb", 19, k1Slice, 1, 1, 16, 10880, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.12gb+me", 20, k1SliceRev1, 1, 1, 16, 10880, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.24gb", 15, k1SliceRev2, 2, 1, 26, 22016, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.24gb", 14, k2Slice, 2, 2, 32, 22016, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.47gb", 9, k3Slice, 4, 3, 60, 47232, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.47gb", 5, k4Slice, 4, 4, 64, 47232, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.94gb", 0, k7Slice, 8, 7, 132, 94848, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// H200 141GB SXM ("NVIDIA H200", PCI 0x2335): -lgip of eight H200s in NVIDIA/mig-parted#120
// (16.00 / 32.25 / 69.50 / 139.75 GiB); a later fixture prints 32.50 and 140.00: the smaller kept.
// Slices, engines and counts also in the MIG user guide's H200 table. Placements: H100's (not
// read from an H200).
constexpr Profile kH200[] = {
    {"1g.18gb", 19, k1Slice, 1, 1, 16, 16384, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.18gb+me", 20, k1SliceRev1, 1, 1, 16, 16384, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.35gb", 15, k1SliceRev2, 2, 1, 26, 33024, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.35gb", 14, k2Slice, 2, 2, 32, 33024, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.71gb", 9, k3Slice, 4, 3, 60, 71168, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.71gb", 5, k4Slice, 4, 4, 64, 71168, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.141gb", 0, k7Slice, 8, 7, 132, 143104, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

// GH200 96GB ("NVIDIA GH200 480GB", PCI 0x2342, 97871 MiB): -lgip on a Grace Hopper node in a
// published Slurm MIG log (kf-cuanschutz/NVIDIA_Grace_Hopper_benchmarking_logs_: 11.00 / 23.00 /
// 46.50 / 93.00 GiB). Placements: H100's (not read from a GH200).
constexpr Profile kGH200_96[] = {
    {"1g.12gb", 19, k1Slice, 1, 1, 16, 11264, 7, kStarts1, {1, 1, 0, 1, 0}, false},
    {"1g.12gb+me", 20, k1SliceRev1, 1, 1, 16, 11264, 1, kStarts1, {1, 1, 0, 1, 1}, true},
    {"1g.24gb", 15, k1SliceRev2, 2, 1, 26, 23552, 4, kStarts2x1, {1, 1, 0, 1, 0}, false},
    {"2g.24gb", 14, k2Slice, 2, 2, 32, 23552, 3, kStarts2, {2, 2, 0, 2, 0}, false},
    {"3g.48gb", 9, k3Slice, 4, 3, 60, 47616, 2, kStarts3, {3, 3, 0, 3, 0}, false},
    {"4g.48gb", 5, k4Slice, 4, 4, 64, 47616, 1, kStarts0, {4, 4, 0, 4, 0}, false},
    {"7g.96gb", 0, k7Slice, 8, 7, 132, 95232, 1, kStarts0, {8, 7, 0, 7, 1}, false},
};

constexpr std::string_view kSrcLgip = "nvidia-smi mig -lgip output (docs/mig.md, Sources)";

// A table of the model `gpu_key` of src/hw's table (its names, PCI ids, SMs and memory), under that
// model's mig_table key. A key hw lacks does not compile (kModels is constexpr).
constexpr ModelTable Table(std::string_view gpu_key, int memory_slices, int compute_slices,
                           int max_instances, std::span<const Profile> profiles,
                           bool placements_confirmed) {
  const hw::GpuModel& gpu = *hw::ModelOfKey(gpu_key);
  return {gpu.mig_table, &gpu,     memory_slices,        compute_slices,
          max_instances, profiles, placements_confirmed, kSrcLgip};
}

// Fields: hw model key, memory slices, compute slices, most instances, profiles, placements
// confirmed.
constexpr std::array<ModelTable, 8> kModels = {{
    Table("a30", 4, 4, 4, kA30, true),
    Table("a100-40gb", 8, 7, 7, kA100_40, true),
    Table("a100-80gb", 8, 7, 7, kA100_80, false),
    Table("h100-80gb", 8, 7, 7, kH100_80, true),
    Table("h100-pcie", 8, 7, 7, kH100_PCIe, false),
    Table("h100-nvl", 8, 7, 7, kH100_NVL, true),
    Table("h200", 8, 7, 7, kH200, false),
    Table("gh200-96gb", 8, 7, 7, kGH200_96, false),
}};

constexpr UntabledModel Untabled(std::string_view gpu_key, std::string_view why) {
  return {&*hw::ModelOfKey(gpu_key), why};
}

// MIG-capable per the MIG user guide's "Supported GPUs", without a complete documented -lgip
// (their names and PCI ids: src/hw's table).
constexpr std::array<UntabledModel, 9> kUntabled = {{
    Untabled("h200-nvl",
             "no published nvidia-smi mig -lgip output of an H200 NVL gives its profile sizes"),
    Untabled("gh200-144gb",
             "its published -lgip output (NVIDIA/mig-parted#139) shows the 1g and 2g sizes only; "
             "the 3g, 4g and 7g sizes are not documented"),
    Untabled("b200",
             "its published -lgip outputs (NVIDIA/mig-parted#166, #187) show the 1g and 2g sizes "
             "only, and two drivers disagree on them (22.00 and 20.50 GiB)"),
    Untabled("gb200",
             "its published -lgip outputs (NVIDIA/gpu-operator#1303, mig-parted#227) show the 1g "
             "and 2g sizes only, with different profile names per board"),
    Untabled("b300", "no published -lgip output gives its profile sizes"),
    Untabled("gb300", "no published -lgip output gives its profile sizes"),
    Untabled("h100-sxm5-94gb",
             "no published -lgip output of the 94GB SXM5 card gives its profile sizes (its NVML "
             "name, \"NVIDIA H100\", is not the 80GB card's)"),
    Untabled("h20", "no published -lgip output gives its profile sizes"),
    Untabled("rtx-pro-6000-blackwell",
             "its MIG geometry (4 slices, +gfx and -me profiles) is not modelled"),
}};

}  // namespace

std::span<const ModelTable> AllModels() { return kModels; }
std::span<const UntabledModel> UntabledModels() { return kUntabled; }

}  // namespace vgpu::mig
