// CachingAllocatorModel against hand-computed cases of PyTorch's CUDACachingAllocator rules,
// and VllmLoadedWeights against hand-computed parameter counts.
#include <gtest/gtest.h>

#include "estimate/architecture.h"
#include "estimate/caching_allocator.h"
#include "estimate/vllm_load.h"

namespace vgpu::estimate {
namespace {

constexpr int64_t kMi = 1 << 20;

TEST(CachingAllocatorModel, RoundsAndSizesSegmentsAsPyTorch) {
  EXPECT_EQ(CachingAllocatorModel::RoundSize(1), 512);
  EXPECT_EQ(CachingAllocatorModel::RoundSize(512), 512);
  EXPECT_EQ(CachingAllocatorModel::RoundSize(513), 1024);
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(kMi), 2 * kMi);         // small pool
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(kMi + 512), 20 * kMi);  // 1-10 MiB
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(10 * kMi), 10 * kMi);   // >= 10 MiB: 2 MiB steps
  EXPECT_EQ(CachingAllocatorModel::SegmentSize(25 * kMi), 26 * kMi);
}

TEST(CachingAllocatorModel, CountsTheUnsplitRestOfALargeSegment) {
  CachingAllocatorModel a;
  a.Malloc(25 * kMi);  // segment 26 MiB, rest 1 MiB is not more than 1 MiB: not split
  EXPECT_EQ(a.AllocatedBytes(), 26 * kMi);
  a.Malloc(742 * kMi + kMi / 2);  // segment 744 MiB, rest 1.5 MiB: split
  EXPECT_EQ(a.AllocatedBytes(), 26 * kMi + 742 * kMi + kMi / 2);
  EXPECT_EQ(a.ReservedBytes(), 26 * kMi + 744 * kMi);
  a.Malloc(100);  // small pool: 512 bytes from a 2 MiB segment
  EXPECT_EQ(a.AllocatedBytes(), 26 * kMi + 742 * kMi + kMi / 2 + 512);
  EXPECT_EQ(a.ReservedBytes(), 26 * kMi + 744 * kMi + 2 * kMi);
}

TEST(CachingAllocatorModel, SharesA20MiBSegmentAndReusesFreedBlocks) {
  CachingAllocatorModel a;
  const auto x = a.Malloc(3 * kMi);
  const auto y = a.Malloc(3 * kMi);  // the rest of the first 20 MiB segment
  EXPECT_EQ(a.AllocatedBytes(), 6 * kMi);
  EXPECT_EQ(a.ReservedBytes(), 20 * kMi);
  a.Free(x);
  a.Free(y);  // merges with x and the rest: one free 20 MiB block
  EXPECT_EQ(a.AllocatedBytes(), 0);
  a.Malloc(19 * kMi + kMi / 2);  // rest 0.5 MiB: the whole block is handed out
  EXPECT_EQ(a.AllocatedBytes(), 20 * kMi);
  EXPECT_EQ(a.ReservedBytes(), 20 * kMi);

  CachingAllocatorModel b;
  b.Free(b.Malloc(32 * kMi));
  b.Malloc(25 * kMi);  // from the cached 32 MiB block, rest 7 MiB split off
  EXPECT_EQ(b.AllocatedBytes(), 25 * kMi);
  EXPECT_EQ(b.ReservedBytes(), 32 * kMi);
  b.Free(12345);  // unknown: ignored
  EXPECT_EQ(b.AllocatedBytes(), 25 * kMi);
}

TEST(VllmLoadedWeights, PadsTheVocabularyTo64RowsPerRank) {
  EXPECT_EQ(VllmPaddedVocabPerRank(50272, 1), 50304);  // OPT
  EXPECT_EQ(VllmPaddedVocabPerRank(152064, 2), 76032);
  EXPECT_EQ(VllmPaddedVocabPerRank(128256, 1), 128256);
}

// Llama-3-8B: every weight is a multiple of 2 MiB (QKV 48 MiB, o 32, gate/up 224, down 112,
// embedding and head 1002 MiB), so the blocks equal the tensors: 8,030,261,248 parameters x 2
// bytes + the rotary cache 8192 x 128 x 2 bytes.
TEST(VllmLoadedWeights, Llama3WeightsAreTheParametersAndTheRotaryCache) {
  const VllmLoad l = VllmLoadedWeights(*FindArchitecture("llama-3-8b"), 1, 1, WeightFormat::kBf16,
                                       WeightFormat::kBf16);
  EXPECT_EQ(l.rotary_bytes, 8192 * 128 * 2);
  EXPECT_EQ(l.padding_bytes, 0);
  EXPECT_EQ(l.tensor_bytes, int64_t{8030261248} * 2 + 8192 * 128 * 2);
  EXPECT_EQ(l.allocated_bytes, l.tensor_bytes);
}

// OPT-125m: 125,239,296 parameters + 32 padding rows of 768, no rotary cache; the 3-4.5 MiB
// weights share 20 MiB segments and the embedding's 73.69 MiB opens a 74 MiB one, so the
// blocks are more than the tensors but by less than 1 MiB per segment.
TEST(VllmLoadedWeights, OptCountsPaddingAndSegmentRests) {
  const VllmLoad l = VllmLoadedWeights(*FindArchitecture("opt-125m"), 1, 1, WeightFormat::kBf16,
                                       WeightFormat::kBf16);
  EXPECT_EQ(l.rotary_bytes, 0);
  EXPECT_EQ(l.padding_bytes, 32 * 768 * 2);
  EXPECT_EQ(l.tensor_bytes, (int64_t{125239296} + 32 * 768) * 2);
  EXPECT_GT(l.allocated_bytes, l.tensor_bytes);
  EXPECT_LT(l.allocated_bytes, l.tensor_bytes + 12 * kMi);
}

}  // namespace
}  // namespace vgpu::estimate
