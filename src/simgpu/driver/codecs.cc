// Decompression of compressed fatbin entries (nvcc compresses PTX with Zstandard by default, and
// cubins too with --compress-mode=size): through the system's liblz4.so.1 and libzstd.so.1,
// opened with dlopen when first needed, so that the simulated driver links nothing but libc.
// Without them, compressed entries are skipped and the module's kernels are not known
// (module.cc then finds any name, as for an image it cannot read).
#include <dlfcn.h>

#include <mutex>

#include "common/log.h"
#include "simgpu/driver/driver.h"

namespace vgpu::simgpu::driver {
namespace {

using Lz4Decompress = int (*)(const char* src, char* dst, int src_size, int dst_capacity);
using ZstdDecompress = size_t (*)(void* dst, size_t dst_capacity, const void* src, size_t src_size);
using ZstdIsError = unsigned (*)(size_t code);

struct Codecs {
  Lz4Decompress lz4 = nullptr;
  ZstdDecompress zstd = nullptr;
  ZstdIsError zstd_is_error = nullptr;
};

const Codecs& Load() {
  static Codecs c;
  static std::once_flag once;
  std::call_once(once, [] {
    if (void* h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL); h != nullptr) {
      c.lz4 = reinterpret_cast<Lz4Decompress>(dlsym(h, "LZ4_decompress_safe"));
    }
    if (void* h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL); h != nullptr) {
      c.zstd = reinterpret_cast<ZstdDecompress>(dlsym(h, "ZSTD_decompress"));
      c.zstd_is_error = reinterpret_cast<ZstdIsError>(dlsym(h, "ZSTD_isError"));
    }
  });
  return c;
}

bool Decompress(Codec codec, const uint8_t* in, size_t n, std::vector<uint8_t>* out) {
  const Codecs& c = Load();
  if (codec == Codec::kLz4) {
    if (c.lz4 == nullptr) {
      VGPU_LOG_WARN("a fatbin entry is LZ4-compressed and liblz4.so.1 is not available");
      return false;
    }
    if (n > INT32_MAX || out->size() > INT32_MAX) return false;
    int got = c.lz4(reinterpret_cast<const char*>(in), reinterpret_cast<char*>(out->data()),
                    static_cast<int>(n), static_cast<int>(out->size()));
    if (got < 0) return false;
    out->resize(static_cast<size_t>(got));
    return true;
  }
  if (c.zstd == nullptr || c.zstd_is_error == nullptr) {
    VGPU_LOG_WARN("a fatbin entry is Zstandard-compressed and libzstd.so.1 is not available");
    return false;
  }
  size_t got = c.zstd(out->data(), out->size(), in, n);
  if (c.zstd_is_error(got) != 0) return false;
  out->resize(got);
  return true;
}

}  // namespace

const Decompressor& SystemDecompressor() {
  static const Decompressor d = Decompress;
  return d;
}

}  // namespace vgpu::simgpu::driver
