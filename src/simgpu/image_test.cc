#include "simgpu/image.h"

#include <elf.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace vgpu::simgpu {
namespace {

using Bytes = std::vector<uint8_t>;

void Put(Bytes* b, const void* p, size_t n) {
  const auto* c = static_cast<const uint8_t*>(p);
  b->insert(b->end(), c, c + n);
}
template <typename T>
void Put(Bytes* b, const T& v) {
  Put(b, &v, sizeof(v));
}

// An EIATTR record with a size and that many bytes (format 4), or with a 16-bit value (format 3).
void Sval(Bytes* b, uint8_t attr, const Bytes& v) {
  b->push_back(4);
  b->push_back(attr);
  Put(b, static_cast<uint16_t>(v.size()));
  Put(b, v.data(), v.size());
}
void Hval(Bytes* b, uint8_t attr, uint16_t v) {
  b->push_back(3);
  b->push_back(attr);
  Put(b, v);
}
Bytes KparamInfo(uint16_t ordinal, uint16_t offset, uint32_t size) {
  Bytes v;
  Put(&v, uint32_t{0});
  Put(&v, ordinal);
  Put(&v, offset);
  Put(&v, (size << 18) | 0x1f000);  // size in bits 18..31, cbank bits set as ptxas writes them
  return v;
}

// A cubin with kernel "_Z4kernPfid" (three parameters, described by its .nv.info section and
// marked as an entry), a device function "helper" (not a kernel), an initialized global "var"
// and a zero-initialized one "zeros".
Bytes MakeCubin() {
  struct Section {
    std::string name;
    uint32_t type;
    Bytes data;
    uint32_t link = 0;
    uint64_t entsize = 0;
    uint64_t nobits_size = 0;
  };
  Bytes info;
  Sval(&info, 0x17, KparamInfo(2, 16, 16));
  Sval(&info, 0x17, KparamInfo(0, 0, 8));
  Sval(&info, 0x17, KparamInfo(1, 8, 4));
  Hval(&info, 0x1b, 255);  // EIATTR_MAXREG_COUNT: ignored
  Hval(&info, 0x19, 32);   // EIATTR_CBANK_PARAM_SIZE
  std::string strtab("\0_Z4kernPfid\0helper\0var\0zeros\0", 31);
  std::vector<Section> s = {
      {"", SHT_NULL, {}},
      {".shstrtab", SHT_STRTAB, {}},
      {".strtab", SHT_STRTAB, Bytes(strtab.begin(), strtab.end())},
      {".symtab", SHT_SYMTAB, {}, 2, sizeof(Elf64_Sym)},
      {".nv.info._Z4kernPfid", SHT_LOPROC, info},
      {".text._Z4kernPfid", SHT_PROGBITS, Bytes(64, 0)},
      {".text.helper", SHT_PROGBITS, Bytes(32, 0)},
      {".nv.global.init", SHT_PROGBITS, {1, 2, 3, 4, 5, 6, 7, 8}},
      {".nv.global", SHT_NOBITS, {}, 0, 0, 16},
  };
  auto sym = [](uint32_t name, uint8_t type, uint8_t other, uint16_t shndx, uint64_t size) {
    Elf64_Sym y{};
    y.st_name = name;
    y.st_info = ELF64_ST_INFO(STB_GLOBAL, type);
    y.st_other = other;
    y.st_shndx = shndx;
    y.st_size = size;
    return y;
  };
  Bytes& syms = s[3].data;
  Put(&syms, Elf64_Sym{});
  Put(&syms, sym(1, STT_FUNC, 0x10, 5, 64));
  Put(&syms, sym(13, STT_FUNC, 0, 6, 32));
  Put(&syms, sym(20, STT_OBJECT, 0, 7, 8));
  Put(&syms, sym(24, STT_OBJECT, 0, 8, 16));
  std::vector<uint32_t> names;
  Bytes& shstr = s[1].data;
  shstr.push_back(0);
  for (Section& sec : s) {
    names.push_back(sec.name.empty() ? 0 : static_cast<uint32_t>(shstr.size()));
    if (!sec.name.empty()) Put(&shstr, sec.name.c_str(), sec.name.size() + 1);
  }
  Bytes out(sizeof(Elf64_Ehdr), 0);
  std::vector<uint64_t> offsets;
  for (Section& sec : s) {
    offsets.push_back(out.size());
    Put(&out, sec.data.data(), sec.data.size());
  }
  while (out.size() % 8 != 0) out.push_back(0);
  Elf64_Ehdr eh{};
  std::memcpy(eh.e_ident, ELFMAG, SELFMAG);
  eh.e_ident[EI_CLASS] = ELFCLASS64;
  eh.e_ident[EI_DATA] = ELFDATA2LSB;
  eh.e_ident[EI_VERSION] = EV_CURRENT;
  eh.e_type = ET_EXEC;
  eh.e_machine = 190;  // EM_CUDA
  eh.e_shoff = out.size();
  eh.e_ehsize = sizeof(Elf64_Ehdr);
  eh.e_shentsize = sizeof(Elf64_Shdr);
  eh.e_shnum = static_cast<uint16_t>(s.size());
  eh.e_shstrndx = 1;
  for (size_t i = 0; i < s.size(); ++i) {
    Elf64_Shdr sh{};
    sh.sh_name = names[i];
    sh.sh_type = s[i].type;
    sh.sh_offset = offsets[i];
    sh.sh_size = s[i].type == SHT_NOBITS ? s[i].nobits_size : s[i].data.size();
    sh.sh_link = s[i].link;
    sh.sh_entsize = s[i].entsize;
    Put(&out, sh);
  }
  std::memcpy(out.data(), &eh, sizeof(eh));
  return out;
}

const char* kPtx = R"(
.version 9.0
.target sm_90
.address_size 64
// .entry commented_out(.param .u32 x)
.visible .entry _Z5otherPv(
  .param .u64 .ptr .align 1 _Z5otherPv_param_0,
  .param .u32 _Z5otherPv_param_1,
  .param .align 8 .b8 _Z5otherPv_param_2[24]
)
{ ret; }
.visible .entry noargs()
{ ret; }
)";

// A fatbin container with the given entries (kind, flags, payload, uncompressed size).
struct Entry {
  uint16_t kind;
  uint64_t flags;
  Bytes payload;
  uint64_t uncompressed = 0;
};
Bytes MakeFatbin(const std::vector<Entry>& entries) {
  Bytes body;
  for (const Entry& e : entries) {
    Bytes h(64, 0);
    uint16_t version = 0x101;
    uint32_t header_size = 64;
    uint32_t payload = static_cast<uint32_t>((e.payload.size() + 7) / 8 * 8);
    uint32_t compressed = e.uncompressed != 0 ? static_cast<uint32_t>(e.payload.size()) : 0;
    uint32_t sm = 90;
    std::memcpy(&h[0], &e.kind, 2);
    std::memcpy(&h[2], &version, 2);
    std::memcpy(&h[4], &header_size, 4);
    std::memcpy(&h[8], &payload, 4);
    std::memcpy(&h[16], &compressed, 4);
    std::memcpy(&h[28], &sm, 4);
    std::memcpy(&h[40], &e.flags, 8);
    std::memcpy(&h[56], &e.uncompressed, 8);
    Put(&body, h.data(), h.size());
    Put(&body, e.payload.data(), e.payload.size());
    body.resize(body.size() + (payload - e.payload.size()), 0);
  }
  Bytes out;
  Put(&out, uint32_t{0xBA55ED50});
  Put(&out, uint16_t{1});
  Put(&out, uint16_t{16});
  Put(&out, uint64_t{body.size()});
  Put(&out, body.data(), body.size());
  return out;
}

Bytes Text(const char* s) { return Bytes(s, s + std::strlen(s) + 1); }

const ImageKernel* Kernel(const ImageInfo& i, const std::string& name) {
  for (const ImageKernel& k : i.kernels) {
    if (k.name == name) return &k;
  }
  return nullptr;
}
const ImageGlobal* Global(const ImageInfo& i, const std::string& name) {
  for (const ImageGlobal& g : i.globals) {
    if (g.name == name) return &g;
  }
  return nullptr;
}

TEST(Image, CubinGivesKernelsWithTheirParameterLayoutAndGlobals) {
  Bytes cubin = MakeCubin();
  EXPECT_EQ(ElfImageSize(cubin.data()), cubin.size());
  ImageInfo i = ReadImage(cubin.data(), {});
  EXPECT_EQ(i.kind, ImageKind::kElf);
  ASSERT_TRUE(i.symbols_known) << i.note;
  ASSERT_EQ(i.kernels.size(), 1u);  // helper is a device function, not an entry
  const ImageKernel* k = Kernel(i, "_Z4kernPfid");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->params.size(), 3u);
  EXPECT_EQ(k->params[0].offset, 0u);
  EXPECT_EQ(k->params[0].size, 8u);
  EXPECT_EQ(k->params[1].offset, 8u);
  EXPECT_EQ(k->params[1].size, 4u);
  EXPECT_EQ(k->params[2].offset, 16u);
  EXPECT_EQ(k->params[2].size, 16u);
  EXPECT_EQ(k->param_bytes, 32u);
  const ImageGlobal* var = Global(i, "var");
  ASSERT_NE(var, nullptr);
  EXPECT_EQ(var->size, 8u);
  EXPECT_EQ(var->init, (Bytes{1, 2, 3, 4, 5, 6, 7, 8}));
  const ImageGlobal* zeros = Global(i, "zeros");
  ASSERT_NE(zeros, nullptr);
  EXPECT_EQ(zeros->size, 16u);
  EXPECT_TRUE(zeros->init.empty());
}

TEST(Image, PtxEntriesGiveNaturallyAlignedParameters) {
  ImageInfo i = ReadImage(kPtx, {});
  EXPECT_EQ(i.kind, ImageKind::kPtx);
  ASSERT_TRUE(i.symbols_known);
  ASSERT_EQ(i.kernels.size(), 2u);
  const ImageKernel* k = Kernel(i, "_Z5otherPv");
  ASSERT_NE(k, nullptr);
  ASSERT_EQ(k->params.size(), 3u);
  EXPECT_EQ(k->params[1].offset, 8u);
  EXPECT_EQ(k->params[1].size, 4u);
  EXPECT_EQ(k->params[2].offset, 16u);  // .align 8 after 12 bytes
  EXPECT_EQ(k->params[2].size, 24u);
  EXPECT_EQ(k->param_bytes, 40u);
  const ImageKernel* none = Kernel(i, "noargs");
  ASSERT_NE(none, nullptr);
  EXPECT_TRUE(none->params.empty());
  EXPECT_EQ(Kernel(i, "commented_out"), nullptr);
}

TEST(Image, FatbinWrapperMergesItsCubinAndPtxEntries) {
  Bytes fatbin = MakeFatbin({{2, 0x11, MakeCubin()}, {1, 0x11, Text(kPtx)}});
  struct {
    uint32_t magic = 0x466243B1;
    uint32_t version = 1;
    const uint8_t* data;
    const void* unused = nullptr;
  } wrapper;
  wrapper.data = fatbin.data();
  ImageInfo i = ReadImage(&wrapper, {});
  EXPECT_EQ(i.kind, ImageKind::kFatbinWrapper);
  ASSERT_TRUE(i.symbols_known) << i.note;
  EXPECT_NE(Kernel(i, "_Z4kernPfid"), nullptr);
  EXPECT_NE(Kernel(i, "_Z5otherPv"), nullptr);
  EXPECT_NE(Kernel(i, "noargs"), nullptr);
  EXPECT_NE(Global(i, "var"), nullptr);
  ImageInfo direct = ReadImage(fatbin.data(), {});
  EXPECT_EQ(direct.kind, ImageKind::kFatbin);
  EXPECT_EQ(direct.kernels.size(), 3u);
}

TEST(Image, CompressedEntriesNeedTheirCodec) {
  Bytes cubin = MakeCubin();
  Bytes scrambled = cubin;
  for (uint8_t& b : scrambled) b ^= 0x5a;
  Bytes fatbin = MakeFatbin({{2, 0x8011, scrambled, cubin.size()}});
  ImageInfo without = ReadImage(fatbin.data(), {});
  EXPECT_FALSE(without.symbols_known);
  EXPECT_NE(without.note.find("Zstandard"), std::string::npos) << without.note;

  Codec seen = Codec::kLz4;
  Decompressor unscramble = [&](Codec c, const uint8_t* in, size_t n, Bytes* out) {
    seen = c;
    if (n != out->size()) return false;
    for (size_t k = 0; k < n; ++k) (*out)[k] = in[k] ^ 0x5a;
    return true;
  };
  ImageInfo with = ReadImage(fatbin.data(), unscramble);
  EXPECT_EQ(seen, Codec::kZstd);
  ASSERT_TRUE(with.symbols_known) << with.note;
  EXPECT_NE(Kernel(with, "_Z4kernPfid"), nullptr);
}

TEST(Image, OtherBytesAreNotRead) {
  ImageInfo i = ReadImage("any image", {});
  EXPECT_EQ(i.kind, ImageKind::kUnknown);
  EXPECT_FALSE(i.symbols_known);
  Bytes truncated = MakeCubin();
  truncated.resize(200);  // the section headers are gone
  ImageInfo t = ReadCubin(truncated.data(), truncated.size());
  EXPECT_FALSE(t.symbols_known);
  EXPECT_FALSE(t.note.empty());
}

}  // namespace
}  // namespace vgpu::simgpu
