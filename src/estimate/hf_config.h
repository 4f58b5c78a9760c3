// Reads a Hugging Face style config.json into an Architecture.
//
// Keys read (HF names; GPT-2's n_layer/n_embd/n_head/n_positions and OPT's ffn_dim too):
// num_hidden_layers, hidden_size, num_attention_heads, num_key_value_heads (default: the
// attention heads), head_dim (default hidden/heads), intermediate_size, vocab_size,
// max_position_embeddings, tie_word_embeddings (default false), model_type (opt and gpt2 are
// GPT-style; qwen2 has Q/K/V biases), attention_bias, MoE: num_local_experts or num_experts,
// num_experts_per_tok, moe_intermediate_size. A multimodal config's text_config is used when the
// top level has no num_hidden_layers.
//
// Errors (InvalidArgument), each naming the file: text that is not JSON ("<file>:<line>: ..."
// from the parser's byte offset), a top level that is not an object, a required key that is
// missing, a key whose value is not a positive integer or a boolean where one is expected
// ("<file>:<line>: key 'hidden_size': ..." with the line of the key).
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
