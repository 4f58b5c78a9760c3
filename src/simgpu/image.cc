// Fatbin containers, PTX text and the choice among image kinds (image.h has the sources).
#include "simgpu/image.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <set>

namespace vgpu::simgpu {
namespace {

constexpr uint32_t kWrapperMagic = 0x466243B1;  // __fatBinC_Wrapper_t.magic
constexpr uint32_t kFatbinMagic = 0xBA55ED50;   // the fatbin container's header
constexpr uint16_t kEntryPtx = 1;
constexpr uint16_t kEntryElf = 2;
constexpr uint64_t kFlagLz4 = 0x2000;
constexpr uint64_t kFlagZstd = 0x8000;
constexpr size_t kMaxUncompressed = 1ULL << 30;  // an entry larger than this is refused

struct Wrapper {
  uint32_t magic;
  uint32_t version;
  const uint8_t* data;
  const void* filename_or_fatbins;
};

struct FatbinHeader {
  uint32_t magic;
  uint16_t version;
  uint16_t header_size;
  uint64_t entries_size;
};
static_assert(sizeof(FatbinHeader) == 16);

struct EntryHeader {
  uint16_t kind;
  uint16_t version;
  uint32_t header_size;
  uint32_t payload_size;
  uint32_t unknown0;
  uint32_t compressed_size;
  uint32_t unknown1;
  uint32_t unknown2;
  uint32_t sm_version;
  uint32_t bit_width;
  uint32_t unknown3;
  uint64_t flags;
  uint64_t unknown5;
  uint64_t uncompressed_size;
};
static_assert(sizeof(EntryHeader) == 64);

// Adds the kernels and globals of `from` that `into` does not have yet (by name).
void Merge(const ImageInfo& from, ImageInfo* into) {
  std::set<std::string> kernels;
  std::set<std::string> globals;
  for (const ImageKernel& k : into->kernels) kernels.insert(k.name);
  for (const ImageGlobal& g : into->globals) globals.insert(g.name);
  for (const ImageKernel& k : from.kernels) {
    if (kernels.insert(k.name).second) into->kernels.push_back(k);
  }
  for (const ImageGlobal& g : from.globals) {
    if (globals.insert(g.name).second) into->globals.push_back(g);
  }
  into->symbols_known = true;
}

size_t TypeSize(const std::string& t) {
  if (t == ".b8" || t == ".u8" || t == ".s8" || t == ".pred") return 1;
  if (t == ".b16" || t == ".u16" || t == ".s16" || t == ".f16" || t == ".bf16") return 2;
  if (t == ".b32" || t == ".u32" || t == ".s32" || t == ".f32" || t == ".f16x2" || t == ".bf16x2") {
    return 4;
  }
  if (t == ".b64" || t == ".u64" || t == ".s64" || t == ".f64") return 8;
  if (t == ".b128") return 16;
  return 0;
}

std::vector<std::string> Tokens(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// One ".param" declaration of an entry: its size and alignment, 0 if not understood.
KernelParam ParseParam(const std::string& decl, uint32_t* offset) {
  size_t size = 0;
  size_t align = 0;
  size_t count = 1;
  std::vector<std::string> t = Tokens(decl);
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == ".align" && i + 1 < t.size()) {
      align = std::strtoul(t[i + 1].c_str(), nullptr, 10);
      ++i;
    } else if (size_t s = TypeSize(t[i]); s != 0) {
      size = s;
    } else if (size_t open = t[i].find('['); open != std::string::npos) {
      count = std::strtoul(t[i].c_str() + open + 1, nullptr, 10);
    }
  }
  if (align == 0) align = size;
  KernelParam p;
  p.size = static_cast<uint32_t>(size * count);
  if (align > 1) *offset = static_cast<uint32_t>((*offset + align - 1) / align * align);
  p.offset = *offset;
  *offset += p.size;
  return p;
}

std::string StripComments(const char* text, size_t n) {
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n && text[i] != '\0'; ++i) {
    if (text[i] == '/' && i + 1 < n && text[i + 1] == '/') {
      while (i < n && text[i] != '\n' && text[i] != '\0') ++i;
      out += '\n';
    } else if (text[i] == '/' && i + 1 < n && text[i + 1] == '*') {
      i += 2;
      while (i + 1 < n && !(text[i] == '*' && text[i + 1] == '/')) ++i;
      ++i;
    } else {
      out += text[i];
    }
  }
  return out;
}

bool IsNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '$' || c == '.';
}

}  // namespace

ImageInfo ReadPtx(const char* text, size_t n) {
  ImageInfo info;
  info.kind = ImageKind::kPtx;
  std::string s = StripComments(text, n);
  if (s.find(".version") == std::string::npos && s.find(".entry") == std::string::npos) {
    info.note = "not a PTX module";
    return info;
  }
  size_t at = 0;
  while ((at = s.find(".entry", at)) != std::string::npos) {
    at += 6;
    if (at < s.size() && IsNameChar(s[at])) continue;  // ".entryx" is no directive
    size_t name_start = s.find_first_not_of(" \t\r\n", at);
    if (name_start == std::string::npos) break;
    size_t name_end = name_start;
    while (name_end < s.size() && IsNameChar(s[name_end])) ++name_end;
    ImageKernel k;
    k.name = s.substr(name_start, name_end - name_start);
    size_t open = s.find_first_not_of(" \t\r\n", name_end);
    if (open != std::string::npos && s[open] == '(') {
      size_t close = s.find(')', open);
      if (close == std::string::npos) close = s.size();
      std::string list = s.substr(open + 1, close - open - 1);
      uint32_t offset = 0;
      size_t p = 0;
      while (p < list.size()) {
        size_t comma = list.find(',', p);
        if (comma == std::string::npos) comma = list.size();
        std::string decl = list.substr(p, comma - p);
        if (decl.find(".param") != std::string::npos) k.params.push_back(ParseParam(decl, &offset));
        p = comma + 1;
      }
      k.param_bytes = offset;
      at = close;
    }
    if (!k.name.empty()) info.kernels.push_back(std::move(k));
  }
  info.symbols_known = true;
  return info;
}

ImageInfo ReadFatbin(const uint8_t* data, size_t n, const Decompressor& decompress) {
  ImageInfo out;
  out.kind = ImageKind::kFatbin;
  FatbinHeader h;
  if (n < sizeof(h)) {
    out.note = "fatbin shorter than its header";
    return out;
  }
  std::memcpy(&h, data, sizeof(h));
  if (h.magic != kFatbinMagic || h.header_size < sizeof(h) || h.header_size > n) {
    out.note = "not a fatbin container";
    return out;
  }
  size_t end = h.entries_size > n - h.header_size ? n : h.header_size + h.entries_size;
  std::vector<ImageInfo> elves;
  std::vector<ImageInfo> ptxes;
  std::string skipped;
  size_t at = h.header_size;
  while (at + sizeof(EntryHeader) <= end) {
    EntryHeader e;
    std::memcpy(&e, data + at, sizeof(e));
    if (e.header_size < sizeof(e) || e.header_size > end - at) break;
    size_t stored = std::max(e.payload_size, e.compressed_size);
    const uint8_t* payload = data + at + e.header_size;
    size_t avail = end - at - e.header_size;
    size_t next = e.header_size + std::min(stored, avail);
    std::vector<uint8_t> plain;
    const uint8_t* bytes = payload;
    size_t size = std::min<size_t>(e.payload_size, avail);
    if ((e.flags & (kFlagLz4 | kFlagZstd)) != 0) {
      Codec codec = (e.flags & kFlagZstd) != 0 ? Codec::kZstd : Codec::kLz4;
      size_t csize = std::min<size_t>(e.compressed_size != 0 ? e.compressed_size : size, avail);
      plain.resize(std::min<size_t>(e.uncompressed_size, kMaxUncompressed));
      if (!decompress || plain.empty() || !decompress(codec, payload, csize, &plain)) {
        skipped = codec == Codec::kZstd ? "Zstandard" : "LZ4";
        at += next;
        continue;
      }
      bytes = plain.data();
      size = plain.size();
    }
    if (e.kind == kEntryElf) {
      ImageInfo elf = ReadCubin(bytes, size);
      if (elf.symbols_known) elves.push_back(std::move(elf));
    } else if (e.kind == kEntryPtx) {
      ImageInfo ptx = ReadPtx(reinterpret_cast<const char*>(bytes), size);
      if (ptx.symbols_known) ptxes.push_back(std::move(ptx));
    }
    at += next;
  }
  for (const ImageInfo& i : elves) Merge(i, &out);  // cubins first: they know the globals' bytes
  for (const ImageInfo& i : ptxes) Merge(i, &out);
  if (!out.symbols_known) {
    out.note = skipped.empty()
                   ? "fatbin without a readable ELF or PTX entry"
                   : "fatbin entries compressed with " + skipped + " could not be decompressed";
  }
  return out;
}

ImageInfo ReadImage(const void* image, const Decompressor& decompress) {
  ImageInfo info;
  if (image == nullptr) return info;
  const auto* p = static_cast<const uint8_t*>(image);
  // No magic has a zero byte: text shorter than four bytes is not read past its end.
  if (p[0] == 0 || p[1] == 0 || p[2] == 0 || p[3] == 0) {
    const char* text = static_cast<const char*>(image);
    info = ReadPtx(text, std::strlen(text));
    info.kind = ImageKind::kUnknown;
    return info;
  }
  uint32_t magic;
  std::memcpy(&magic, p, sizeof(magic));
  if (magic == kWrapperMagic) {
    Wrapper w;
    std::memcpy(&w, p, sizeof(w));
    ImageInfo out;
    if (w.version == 1 && w.data != nullptr) {
      FatbinHeader h;
      std::memcpy(&h, w.data, sizeof(h));
      out = ReadFatbin(w.data, h.header_size + h.entries_size, decompress);
    } else if (w.version == 2 && w.filename_or_fatbins != nullptr) {
      // A list of prelinked fatbins, ended by a null pointer.
      auto* list = static_cast<const uint8_t* const*>(w.filename_or_fatbins);
      for (size_t i = 0; list[i] != nullptr && i < 4096; ++i) {
        FatbinHeader h;
        std::memcpy(&h, list[i], sizeof(h));
        ImageInfo part = ReadFatbin(list[i], h.header_size + h.entries_size, decompress);
        if (part.symbols_known) {
          Merge(part, &out);
        } else if (out.note.empty()) {
          out.note = part.note;
        }
      }
    } else {
      out.note = "fatbin wrapper of unknown version " + std::to_string(w.version);
    }
    out.kind = ImageKind::kFatbinWrapper;
    return out;
  }
  if (magic == kFatbinMagic) {
    FatbinHeader h;
    std::memcpy(&h, p, sizeof(h));
    return ReadFatbin(p, h.header_size + h.entries_size, decompress);
  }
  if (size_t n = ElfImageSize(p); n != 0) return ReadCubin(p, n);
  const char* text = static_cast<const char*>(image);
  info = ReadPtx(text, std::strlen(text));
  if (!info.symbols_known) info.kind = ImageKind::kUnknown;
  return info;
}

}  // namespace vgpu::simgpu
