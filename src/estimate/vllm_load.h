// The memory vLLM reports as "Loading model weights took X GiB": torch.cuda.memory_allocated()
// after the model is built on the GPU minus before (vllm/utils DeviceMemoryProfiler around
// get_model()). It is not the parameter count times the dtype: it counts the caching
// allocator's blocks (caching_allocator.h) of the tensors in the order vLLM creates them,
// and the buffers created with them. What is modelled, with the source of each:
// - VocabParallelEmbedding / ParallelLMHead pad the vocabulary to a multiple of 64 rows
//   (vllm/model_executor/layers/vocab_parallel_embedding.py, DEFAULT_VOCAB_PADDING_SIZE), then
//   split it over the tensor-parallel ranks;
// - one fused QKV weight (QKVParallelLinear; KV heads fewer than TP ranks are replicated), the
//   output projection, one fused gate/up weight (MergedColumnParallelLinear), the down
//   projection; MoE experts as FusedMoE's w13 [E, 2I/tp, h] and w2 [E, h, I/tp] plus the router;
//   norms are replicated on every rank (vllm/model_executor/models/llama.py, qwen2.py, opt.py);
// - the rotary cos/sin cache (vllm/model_executor/layers/rotary_embedding.py,
//   _compute_cos_sin_cache): built in the first layer from fp32 temporaries (positions,
//   frequencies, cos, sin and their concatenation, max_position x rotary_dim) and kept in the
//   model dtype; get_rope caches it, so all layers share it. The freed temporaries stay in the
//   allocator's cache and later weights are carved out of them.
// The pipeline stage with the most memory (first: embedding; last: norm and head) is reported.
#pragma once

#include <cstdint>

#include "estimate/architecture.h"
#include "estimate/formulas.h"

namespace vgpu::estimate {

struct VllmLoad {
  int64_t tensor_bytes = 0;     // the tensors' own bytes (parameters, padding and rotary cache)
  int64_t rotary_bytes = 0;     // of which the rotary cache
  int64_t padding_bytes = 0;    // of which the vocabulary padding
  int64_t allocated_bytes = 0;  // what memory_allocated() counts: the blocks
};

// `linear_format` for the blocks' linear layers, `other_format` (bf16/fp16 or fp32: the model
// dtype, also that of the rotary cache) for the rest. Quantised linear layers are counted as
// one tensor of BytesPerElement() per element (their scales folded in).
VllmLoad VllmLoadedWeights(const Architecture& arch, int tp, int pp, WeightFormat linear_format,
                           WeightFormat other_format);

// The vocabulary rows one rank holds: ceil(vocab / 64) x 64, divided over tp (rounded up).
int64_t VllmPaddedVocabPerRank(int64_t vocab, int tp);

}  // namespace vgpu::estimate
