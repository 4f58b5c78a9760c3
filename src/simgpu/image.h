// Module images as the CUDA runtime and driver API programs hand them to the driver
// (cuModuleLoadData, cuLibraryLoadData, the runtime's fatbin registration): read far enough to
// know each kernel's name and parameter layout, and each module global's name, size and initial
// bytes. Kernels are not compiled or run (docs/simgpu.md).
//
// Formats, from public descriptions:
//  - fatbin wrapper (__fatBinC_Wrapper_t: magic 0x466243B1, version 1 or 2, data pointer) and
//    the fatbin container it points to (magic 0xBA55ED50, version 1, header size, size of the
//    entries that follow): the toolkit's include/fatbinary_section.h; the entry headers (kind 1
//    PTX / 2 ELF, header size, payload size, compressed size, sm version, flags with 0x2000 LZ4
//    and 0x8000 Zstandard compression, uncompressed size) as ZLUDA's cuda_types/src/dark_api.rs
//    and VivekPanyam/cudaparsers document them.
//  - ELF cubins: the ELF-64 specification; kernels are STT_FUNC symbols marked as entries
//    (st_other 0x10) or described by a ".nv.info.<kernel>" section, whose EIATTR records
//    (format byte, attribute byte, then a 16-bit value or a 16-bit size and that many bytes) give
//    the parameters: EIATTR_KPARAM_INFO (0x17: index, ordinal, offset, size in bits 18..31 of the
//    last word) and EIATTR_CBANK_PARAM_SIZE (0x19), as cudaparsers' cubin.rs reads them.
//  - PTX text: the PTX ISA's ".entry name(.param ...)" declarations.
//
// Pure functions over memory: no I/O. Everything is bounds-checked against the sizes the
// containers declare; an image given by a bare pointer (cuModuleLoadData) is trusted to be as
// long as its own headers say, as the real driver trusts it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace vgpu::simgpu {

struct KernelParam {
  uint32_t offset = 0;  // in the parameter buffer
  uint32_t size = 0;
};

struct ImageKernel {
  std::string name;
  std::vector<KernelParam> params;  // by ordinal
  uint32_t param_bytes = 0;         // size of the parameter buffer
};

struct ImageGlobal {
  std::string name;
  uint64_t size = 0;
  std::vector<uint8_t> init;  // initial bytes (empty: zero-initialized)
};

enum class ImageKind { kUnknown, kFatbinWrapper, kFatbin, kElf, kPtx };

struct ImageInfo {
  ImageKind kind = ImageKind::kUnknown;
  // True when the kernels and globals of the image are known (an ELF or PTX entry was read);
  // false for images that are not recognised or whose entries could not be decompressed.
  bool symbols_known = false;
  std::vector<ImageKernel> kernels;
  std::vector<ImageGlobal> globals;
  std::string note;  // why symbols are not known, for the log
};

// Codecs of compressed fatbin entries.
enum class Codec { kLz4, kZstd };
// Decompresses `n` bytes at `in` into `out` (sized to the expected uncompressed size on entry;
// may be resized). False if the codec is unavailable or the data is corrupt.
using Decompressor =
    std::function<bool(Codec, const uint8_t* in, size_t n, std::vector<uint8_t>* out)>;

// Reads an image given by a bare pointer: a fatbin wrapper, a fatbin, an ELF cubin or PTX text
// (NUL-terminated). `decompress` may be empty (compressed entries are then skipped).
ImageInfo ReadImage(const void* image, const Decompressor& decompress);

// The parts, on bounded buffers.
ImageInfo ReadFatbin(const uint8_t* data, size_t n, const Decompressor& decompress);
ImageInfo ReadCubin(const uint8_t* data, size_t n);
ImageInfo ReadPtx(const char* text, size_t n);

// Bytes an ELF image at `data` spans according to its own headers (0 if not ELF-64).
size_t ElfImageSize(const uint8_t* data);

}  // namespace vgpu::simgpu
