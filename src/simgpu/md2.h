// MD2 (RFC 1319) and HMAC (RFC 2104) over it: the keyed digest that the CUDA runtime asks the
// driver to compute over the process and its devices to confirm that it talks to a driver which
// knows its private interface (export_tables.cc). Pure functions, no state between calls.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace vgpu::simgpu {

using Md2Digest = std::array<uint8_t, 16>;

// An MD2 computation fed in pieces: Update() any number of times, then Final() once.
class Md2 {
 public:
  void Update(const void* data, size_t n);
  Md2Digest Final();

 private:
  void Byte(uint8_t b);
  uint8_t x_[48] = {};  // state (16) | block (16) | state ^ block (16)
  uint8_t checksum_[16] = {};
  uint8_t last_ = 0;   // last checksum byte written (L in RFC 1319)
  uint8_t count_ = 0;  // bytes of the current block
};

// HMAC-MD2 of the concatenation of `parts` (pointer, length pairs) under a 16-byte key (MD2's
// block size, so the key is used as it is).
struct Md2Part {
  const void* data;
  size_t size;
};
Md2Digest HmacMd2(const uint8_t (&key)[16], const Md2Part* parts, size_t n_parts);

}  // namespace vgpu::simgpu
