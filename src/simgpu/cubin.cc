// ELF cubins: kernels, their parameter layouts and module globals (image.h has the sources).
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "simgpu/image.h"

namespace vgpu::simgpu {
namespace {

constexpr uint8_t kStoCudaEntry = 0x10;  // st_other of a kernel's symbol
constexpr uint8_t kEifmtSval = 0x04;     // an EIATTR record with a size and that many bytes
constexpr uint8_t kEiattrKparamInfo = 0x17;
constexpr uint8_t kEiattrCbankParamSize = 0x19;

template <typename T>
bool Read(const uint8_t* data, size_t n, uint64_t at, T* out) {
  if (at > n || sizeof(T) > n - at) return false;
  std::memcpy(out, data + at, sizeof(T));
  return true;
}

struct Elf {
  const uint8_t* data;
  size_t n;
  std::vector<Elf64_Shdr> sections;
  const char* shstrtab = nullptr;
  size_t shstrtab_size = 0;

  // The bytes of section `s`, or null if they are not inside the image (or it has none).
  const uint8_t* Bytes(const Elf64_Shdr& s) const {
    if (s.sh_type == SHT_NOBITS || s.sh_offset > n || s.sh_size > n - s.sh_offset) return nullptr;
    return data + s.sh_offset;
  }
  std::string SectionName(const Elf64_Shdr& s) const {
    if (shstrtab == nullptr || s.sh_name >= shstrtab_size) return "";
    return std::string(shstrtab + s.sh_name,
                       strnlen(shstrtab + s.sh_name, shstrtab_size - s.sh_name));
  }
};

bool OpenElf(const uint8_t* data, size_t n, Elf* elf, std::string* why) {
  Elf64_Ehdr eh;
  if (!Read(data, n, 0, &eh) || std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
    *why = "not an ELF image";
    return false;
  }
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB) {
    *why = "not a little-endian ELF-64 image";
    return false;
  }
  if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0) {
    *why = "ELF image without section headers";
    return false;
  }
  elf->data = data;
  elf->n = n;
  for (uint64_t i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr sh;
    if (!Read(data, n, eh.e_shoff + i * sizeof(Elf64_Shdr), &sh)) {
      *why = "ELF section headers run past the image";
      return false;
    }
    elf->sections.push_back(sh);
  }
  if (eh.e_shstrndx < elf->sections.size()) {
    const Elf64_Shdr& s = elf->sections[eh.e_shstrndx];
    elf->shstrtab = reinterpret_cast<const char*>(elf->Bytes(s));
    elf->shstrtab_size = elf->shstrtab != nullptr ? s.sh_size : 0;
  }
  return true;
}

struct ParamInfo {
  std::map<uint32_t, KernelParam> by_ordinal;
  uint32_t bank_size = 0;
};

// The EIATTR records of a ".nv.info.<kernel>" section.
ParamInfo ReadNvInfo(const uint8_t* p, size_t n) {
  ParamInfo info;
  size_t at = 0;
  while (at + 4 <= n) {
    uint8_t format = p[at];
    uint8_t attribute = p[at + 1];
    uint16_t value = 0;
    std::memcpy(&value, p + at + 2, 2);
    if (format != kEifmtSval) {
      if (attribute == kEiattrCbankParamSize) info.bank_size = value;
      at += 4;
      continue;
    }
    size_t size = value;
    if (size > n - at - 4) break;
    const uint8_t* v = p + at + 4;
    if (attribute == kEiattrKparamInfo && size >= 12) {
      uint16_t ordinal = 0;
      uint16_t offset = 0;
      uint32_t bits = 0;
      std::memcpy(&ordinal, v + 4, 2);
      std::memcpy(&offset, v + 6, 2);
      std::memcpy(&bits, v + 8, 4);
      info.by_ordinal[ordinal] = KernelParam{offset, bits >> 18};
    }
    at += 4 + size;
  }
  return info;
}

ImageKernel MakeKernel(const std::string& name, const ParamInfo* info) {
  ImageKernel k;
  k.name = name;
  if (info == nullptr) return k;
  uint32_t end = 0;
  if (!info->by_ordinal.empty()) {
    k.params.resize(info->by_ordinal.rbegin()->first + 1);
    for (const auto& [ordinal, param] : info->by_ordinal) {
      k.params[ordinal] = param;
      end = std::max(end, param.offset + param.size);
    }
  }
  k.param_bytes = std::max(end, info->bank_size);
  return k;
}

}  // namespace

size_t ElfImageSize(const uint8_t* data) {
  if (std::memcmp(data, ELFMAG, SELFMAG) != 0) return 0;  // before reading a whole header
  Elf64_Ehdr eh;
  std::memcpy(&eh, data, sizeof(eh));
  if (eh.e_ident[EI_CLASS] != ELFCLASS64) return 0;
  uint64_t end = std::max<uint64_t>(sizeof(eh), eh.e_shoff + uint64_t{eh.e_shnum} * eh.e_shentsize);
  end = std::max<uint64_t>(end, eh.e_phoff + uint64_t{eh.e_phnum} * eh.e_phentsize);
  if (eh.e_shentsize == sizeof(Elf64_Shdr)) {
    for (uint64_t i = 0; i < eh.e_shnum; ++i) {
      Elf64_Shdr sh;
      std::memcpy(&sh, data + eh.e_shoff + i * sizeof(sh), sizeof(sh));
      if (sh.sh_type != SHT_NOBITS) end = std::max<uint64_t>(end, sh.sh_offset + sh.sh_size);
    }
  }
  return static_cast<size_t>(end);
}

ImageInfo ReadCubin(const uint8_t* data, size_t n) {
  ImageInfo info;
  info.kind = ImageKind::kElf;
  Elf elf;
  if (!OpenElf(data, n, &elf, &info.note)) return info;

  std::map<std::string, ParamInfo> nv_info;  // by kernel name
  const Elf64_Shdr* symtab = nullptr;
  for (const Elf64_Shdr& s : elf.sections) {
    if (s.sh_type == SHT_SYMTAB) symtab = &s;
    std::string name = elf.SectionName(s);
    if (name.rfind(".nv.info.", 0) != 0) continue;
    const uint8_t* bytes = elf.Bytes(s);
    if (bytes != nullptr) nv_info[name.substr(9)] = ReadNvInfo(bytes, s.sh_size);
  }

  std::map<std::string, bool> kernels;  // name -> seen
  if (symtab != nullptr && symtab->sh_entsize == sizeof(Elf64_Sym) &&
      symtab->sh_link < elf.sections.size()) {
    const uint8_t* syms = elf.Bytes(*symtab);
    const Elf64_Shdr& strtab = elf.sections[symtab->sh_link];
    const char* strings = reinterpret_cast<const char*>(elf.Bytes(strtab));
    size_t count = syms != nullptr ? symtab->sh_size / sizeof(Elf64_Sym) : 0;
    for (size_t i = 0; i < count && strings != nullptr; ++i) {
      Elf64_Sym sym;
      std::memcpy(&sym, syms + i * sizeof(sym), sizeof(sym));
      if (sym.st_name >= strtab.sh_size) continue;
      std::string name(strings + sym.st_name,
                       strnlen(strings + sym.st_name, strtab.sh_size - sym.st_name));
      if (name.empty()) continue;
      int type = ELF64_ST_TYPE(sym.st_info);
      if (type == STT_FUNC && ((sym.st_other & kStoCudaEntry) != 0 || nv_info.count(name) != 0)) {
        if (kernels.emplace(name, true).second) {
          auto it = nv_info.find(name);
          info.kernels.push_back(MakeKernel(name, it != nv_info.end() ? &it->second : nullptr));
        }
      } else if (type == STT_OBJECT && sym.st_size > 0 && sym.st_shndx != SHN_UNDEF &&
                 sym.st_shndx < elf.sections.size()) {
        const Elf64_Shdr& home = elf.sections[sym.st_shndx];
        ImageGlobal g;
        g.name = name;
        g.size = sym.st_size;
        const uint8_t* bytes = elf.Bytes(home);
        uint64_t at = sym.st_value >= home.sh_addr ? sym.st_value - home.sh_addr : sym.st_value;
        if (bytes != nullptr && at <= home.sh_size && sym.st_size <= home.sh_size - at) {
          g.init.assign(bytes + at, bytes + at + sym.st_size);
        }
        info.globals.push_back(std::move(g));
      }
    }
  }
  // A kernel described by its .nv.info section but without a symbol still has its name.
  for (const auto& [name, params] : nv_info) {
    if (kernels.emplace(name, true).second) info.kernels.push_back(MakeKernel(name, &params));
  }
  info.symbols_known = true;
  return info;
}

}  // namespace vgpu::simgpu
