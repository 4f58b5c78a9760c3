// Reads a Hugging Face style config.json into an Architecture.
//
// Keys read (HF names; GPT-2's n_layer/n_embd/n_head/n_positions and OPT's ffn_dim too):
// num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads (default: the
// attention heads), head_dim (default hidden/heads), intermediate_size, vocab_size,
// max_position_embeddings, tie_word_embeddings (default false), model_type (opt and gpt2 are
// GPT-style; qwen2 has Q/K/V biases), attention_bias, MoE: num_local_experts or num_experts,
// num_experts_per_tok, moe_intermediate_size. A multimodal config's text_config is used when the
// top level has no num_hidden_layers. T5 and mT5 (model_type t5, mt5: encoder-decoder) are read
// from their own keys: num_layers, num_decoder_layers, d_model, d_kv, num_heads, d_ff,
// feed_forward_proj, relative_attention_num_buckets, dropout_rate, tie_word_embeddings.
//
// The checkpoint's weight format (Architecture::format, --dtype's default) comes from
// quantization_config: quant_method fp8 / fbgemm_fp8 -> fp8; gptq / awq with bits 4 -> int4
// (group 128), bits 8 -> int8; bitsandbytes load_in_4bit -> nf4, load_in_8bit -> int8;
// compressed-tensors with 8-bit float / 8-bit int / 4-bit int weights -> fp8 / int8 / int4.
// Without it from torch_dtype (or transformers' newer `dtype`): bfloat16 and float16 -> bf16,
// float32 -> fp32, float8_* -> fp8. Another method or dtype sets format_error (the estimate then
// needs an explicit --dtype); with neither key bf16 is assumed.
//
// Errors (InvalidArgument), each naming the file: text that is not JSON ("<file>:<line>: ..."
// from the parser's byte offset), a top level that is not an object, a required key that is
// missing, a key whose value is not a positive integer or a boolean where one is expected
// ("<file>:<line>: key 'hidden_size': ..." with the line of the key), a value above the
// estimator's limit for it (architecture.h ShapeLimits: "key 'num_hidden_layers': 100000000 is
// more than 4096"), another encoder-decoder model_type than t5 / mt5.
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"
#include "estimate/architecture.h"

namespace vgpu::estimate {

// `text` is the file's content, `file` its name for the messages and the architecture's name.
Result<Architecture> ParseHfConfig(std::string_view text, const std::string& file);
Result<Architecture> ReadHfConfig(const std::string& path);

}  // namespace vgpu::estimate
