// The textual form of an estimate's inputs, shared by `vgpu estimate`'s flags and the pod
// annotation vgpu.io/estimate, so both accept the same names and values with the same errors.
//
// Annotation syntax: comma-separated key=value pairs, the keys being the long flags of
// `vgpu estimate` without "--", e.g.
//   vgpu.io/estimate: "model=llama-3-8b,mode=serve,max-model-len=8192,gpu=h100-80gb"
// Spaces around keys and values are ignored; a key given twice, an unknown key, a pair without
// '=' or an empty value is an error.
//
// Keys and values (defaults in brackets):
//   model        a name of the bundled table, or (CLI only) a path to a config.json
//   mode         serve | infer | full | lora | qlora  [serve]
//   dtype        bf16 | fp16 | fp32 | fp8 | int8 | int4 (GPTQ/AWQ, group 128) | nf4  [bf16]
//   kv-dtype     auto (= 16-bit) | bf16 | fp16 | fp8  [auto]
//   (dtype defaults to the checkpoint's format: config.json's quantization_config / torch_dtype,
//   or the bundled row's, e.g. deepseek-v3 is fp8; a format that is not modelled needs dtype)
//   batch, seq-len                      [1, the model's maximum]
//   target-len   encoder-decoder models: the decoder's tokens per sequence  [seq-len]
//   max-model-len, concurrent, gpu-memory-utilization, max-num-batched-tokens, max-num-seqs,
//   block-size, non-torch (a size)      [model max, 1, 0.92, 8192, 256, 16, 256MiB]
//   optimizer    adamw | adam | adamw8bit | paged-adamw | paged-adamw8bit | sgd | sgd-momentum
//   precision    mixed | pure  [mixed]
//   zero         0..3; dp, tp, pp  [0; 1, 1, 1]
//   checkpointing  none | full  [none];  flash-attention, cpu-offload, optimizer-in-backward
//                true | false  [true, false, false]
//   loss         fp32 (one cross-entropy on fp32 logits) | chunked (torchtune's
//                CEWithChunkedOutputLoss)  [fp32];  loss-chunks  (with chunked) [8]
//   logits-held  true | false: the training loop keeps the logits to the step's end
//                [true with fp32, false with chunked: torchtune's recipes]
//   compile      none | model | loss | all: what torch.compile covers  [none]
//   lora-rank [8], lora-targets  qv | all  [qv]
//   gpu          a GPU model (vgpu estimate --list-gpus); slice-memory  a size ("20GiB"): also
//                check the fit on a slice of it; margin  a percent [10]
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "common/result.h"
#include "estimate/estimator.h"

namespace vgpu::estimate {

using Spec = std::map<std::string, std::string>;

// "k=v,k=v" to a Spec (the annotation form).
Result<Spec> ParseSpec(std::string_view text);

// A Spec to Inputs, validated. `allow_files`: model may name a config.json (the CLI); the
// webhook passes false. Errors name the key and the value.
Result<Inputs> InputsFromSpec(const Spec& spec, bool allow_files);

// The keys InputsFromSpec accepts, in the order --help lists them.
const std::vector<std::string>& SpecKeys();

}  // namespace vgpu::estimate
