#include "estimate/caching_allocator.h"

#include <algorithm>
#include <iterator>

namespace vgpu::estimate {

int64_t CachingAllocatorModel::RoundSize(int64_t bytes) {
  if (bytes < kMinBlockSize) return kMinBlockSize;
  return kMinBlockSize * ((bytes + kMinBlockSize - 1) / kMinBlockSize);
}

int64_t CachingAllocatorModel::SegmentSize(int64_t rounded) {
  if (rounded <= kSmallSize) return kSmallBuffer;
  if (rounded < kMinLargeAlloc) return kLargeBuffer;
  return kRoundLarge * ((rounded + kRoundLarge - 1) / kRoundLarge);
}

CachingAllocatorModel::BlockId CachingAllocatorModel::Add(Block block) {
  const BlockId id = next_id_++;
  if (!block.allocated) free_[block.small].insert({block.size, block.segment, block.offset, id});
  blocks_[id] = block;
  return id;
}

void CachingAllocatorModel::RemoveFree(BlockId id) {
  const Block& b = blocks_.at(id);
  free_[b.small].erase({b.size, b.segment, b.offset, id});
  blocks_.erase(id);
}

CachingAllocatorModel::BlockId CachingAllocatorModel::Malloc(int64_t bytes) {
  const int64_t size = RoundSize(std::max<int64_t>(bytes, 1));
  const bool small = size <= kSmallSize;
  Block found;
  auto& pool = free_[small];
  auto it = pool.lower_bound({size, 0, 0, 0});
  if (it != pool.end()) {
    const BlockId id = std::get<3>(*it);
    found = blocks_.at(id);
    RemoveFree(id);
  } else {
    found.segment = next_segment_++;
    found.offset = 0;
    found.size = SegmentSize(size);
    found.small = small;
    reserved_ += found.size;
  }
  const int64_t rest = found.size - size;
  const bool split = small ? rest >= kMinBlockSize : rest > kSmallSize;
  Block used = found;
  used.allocated = true;
  if (split) {
    used.size = size;
    Block remainder = found;
    remainder.offset = found.offset + size;
    remainder.size = rest;
    remainder.allocated = false;
    Add(remainder);
  }
  allocated_ += used.size;
  return Add(used);
}

void CachingAllocatorModel::Free(BlockId id) {
  auto it = blocks_.find(id);
  if (it == blocks_.end() || !it->second.allocated) return;
  Block merged = it->second;
  allocated_ -= merged.size;
  blocks_.erase(it);
  merged.allocated = false;
  // Merge with the free neighbours in the same segment.
  for (bool changed = true; changed;) {
    changed = false;
    for (const auto& [other_id, other] : blocks_) {
      if (other.allocated || other.segment != merged.segment) continue;
      if (other.offset + other.size == merged.offset ||
          merged.offset + merged.size == other.offset) {
        merged.offset = std::min(merged.offset, other.offset);
        merged.size += other.size;
        RemoveFree(other_id);
        changed = true;
        break;
      }
    }
  }
  Add(merged);
}

}  // namespace vgpu::estimate
