// CachingAllocatorModel: what PyTorch's CUDA caching allocator counts in
// torch.cuda.memory_allocated() for a sequence of allocations and frees, in a fresh process.
//
// The figures vLLM logs as "Loading model weights took" and torchtune as peak memory are this
// counter, and it counts the allocator's *blocks*, not the tensors' bytes. The rules follow
// c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.x, default settings: no expandable segments,
// no max_split_size):
// - a request is rounded up to a multiple of 512 bytes (kMinBlockSize);
// - requests up to 1 MiB (kSmallSize) come from the small pool, larger ones from the large pool;
// - the smallest cached free block of the pool that holds the request is used (best fit; ties
//   by address); without one a new segment is reserved: 2 MiB for small requests, 20 MiB for
//   requests under 10 MiB, otherwise the request rounded up to 2 MiB;
// - the block is split when the rest is at least 512 bytes (small pool) or more than 1 MiB
//   (large pool); otherwise the whole block is handed out and counted;
// - a freed block merges with free neighbours of its segment and stays cached.
// So a 25 MiB weight counts 26 MiB when it opens its own segment, and 67.5 MiB counts 68.
// Pure logic: no device, no clock.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <tuple>

namespace vgpu::estimate {

class CachingAllocatorModel {
 public:
  using BlockId = int64_t;

  // Allocates `bytes` (> 0) and returns the block's id.
  BlockId Malloc(int64_t bytes);
  // Frees a block returned by Malloc (an unknown id is ignored).
  void Free(BlockId id);

  int64_t AllocatedBytes() const { return allocated_; }  // torch.cuda.memory_allocated()
  int64_t ReservedBytes() const { return reserved_; }    // torch.cuda.memory_reserved()

  static constexpr int64_t kMinBlockSize = 512;
  static constexpr int64_t kSmallSize = 1 << 20;
  static constexpr int64_t kSmallBuffer = 2 << 20;
  static constexpr int64_t kLargeBuffer = 20 << 20;
  static constexpr int64_t kMinLargeAlloc = 10 << 20;
  static constexpr int64_t kRoundLarge = 2 << 20;

  static int64_t RoundSize(int64_t bytes);
  static int64_t SegmentSize(int64_t rounded);

 private:
  struct Block {
    int64_t segment = 0;
    int64_t offset = 0;
    int64_t size = 0;
    bool allocated = false;
    bool small = false;
  };
  // Free blocks ordered as the allocator's pool: by size, then address.
  using FreeKey = std::tuple<int64_t, int64_t, int64_t, BlockId>;  // size, segment, offset, id

  BlockId Add(Block block);
  void RemoveFree(BlockId id);

  std::map<BlockId, Block> blocks_;
  std::set<FreeKey> free_[2];  // [0] large pool, [1] small pool
  BlockId next_id_ = 1;
  int64_t next_segment_ = 1;
  int64_t allocated_ = 0;
  int64_t reserved_ = 0;
};

}  // namespace vgpu::estimate
