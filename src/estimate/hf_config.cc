#include "estimate/hf_config.h"

#include "estimate/first_error.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace vgpu::estimate {

namespace {

using Json = nlohmann::json;

int LineOfOffset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1;
  for (size_t i = 0; i < offset; ++i) line += text[i] == '\n';
  return line;
}

// The line of the first occurrence of "key" used as an object key; 0 when absent.
int LineOfKey(std::string_view text, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  for (size_t at = text.find(quoted); at != std::string_view::npos;
       at = text.find(quoted, at + 1)) {
    size_t after = at + quoted.size();
    while (after < text.size() && (text[after] == ' ' || text[after] == '\t' ||
                                   text[after] == '\n' || text[after] == '\r')) {
      ++after;
    }
    if (after < text.size() && text[after] == ':') return LineOfOffset(text, at);
  }
  return 0;
}

class Reader {
 public:
  Reader(std::string_view text, const std::string& file, const Json& object)
      : text_(text), file_(file), object_(object) {}

  Status Error(std::string_view key, const std::string& what) const {
    const int line = LineOfKey(text_, key);
    return Status::InvalidArgument(file_ + (line > 0 ? ":" + std::to_string(line) : "") +
                                   ": key '" + std::string(key) + "': " + what);
  }

  bool Has(std::string_view key) const {
    return object_.contains(std::string(key)) && !object_.at(std::string(key)).is_null();
  }

  // A positive integer under the first of `keys` present; `fallback` when none is (< 0: required).
  Result<int> Int(std::initializer_list<std::string_view> keys, int fallback) const {
    for (std::string_view key : keys) {
      if (!Has(key)) continue;
      const Json& v = object_.at(std::string(key));
      if (!v.is_number_integer() &&
          !(v.is_number_float() && v.get<double>() == double(int64_t(v.get<double>())))) {
        return Error(key, "expected a positive integer, found " + v.dump());
      }
      const int64_t n = v.is_number_integer() ? v.get<int64_t>() : int64_t(v.get<double>());
      if (n <= 0 || n > (int64_t{1} << 31) - 1) {
        return Error(key, "expected a positive integer, found " + v.dump());
      }
      return int(n);
    }
    if (fallback < 0) return Error(*keys.begin(), "missing (a required key)");
    return fallback;
  }

  Result<bool> Bool(std::string_view key, bool fallback) const {
    if (!Has(key)) return fallback;
    const Json& v = object_.at(std::string(key));
    if (!v.is_boolean()) return Error(key, "expected true or false, found " + v.dump());
    return v.get<bool>();
  }

  // layer_types: one "sliding_attention" or "full_attention" per layer.
  Result<std::vector<bool>> LayerTypes(std::string_view key, int layers) const {
    if (!Has(key)) return std::vector<bool>{};
    const Json& v = object_.at(std::string(key));
    if (!v.is_array()) return Error(key, "expected an array of layer types, found " + v.dump());
    if (int(v.size()) != layers) {
      return Error(key, "has " + std::to_string(v.size()) + " entries for " +
                            std::to_string(layers) + " layers");
    }
    std::vector<bool> sliding;
    for (const Json& t : v) {
      if (t == "sliding_attention") {
        sliding.push_back(true);
      } else if (t == "full_attention") {
        sliding.push_back(false);
      } else {
        return Error(key,
                     "expected \"sliding_attention\" or \"full_attention\", found " + t.dump());
      }
    }
    return sliding;
  }

  std::string String(std::string_view key) const {
    if (!Has(key) || !object_.at(std::string(key)).is_string()) return "";
    return object_.at(std::string(key)).get<std::string>();
  }

 private:
  std::string_view text_;
  const std::string& file_;
  const Json& object_;
};

}  // namespace

Result<Architecture> ParseHfConfig(std::string_view text, const std::string& file) {
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    std::string what = e.what();
    if (auto pos = what.find("syntax error"); pos != std::string::npos) what = what.substr(pos);
    return Status::InvalidArgument(file + ":" +
                                   std::to_string(LineOfOffset(text, e.byte > 0 ? e.byte - 1 : 0)) +
                                   ": not valid JSON: " + what);
  }
  if (!doc.is_object()) {
    return Status::InvalidArgument(file + ":1: expected a JSON object at the top level");
  }
  const Json* object = &doc;
  if (!doc.contains("num_hidden_layers") && !doc.contains("n_layer") &&
      doc.contains("text_config") && doc["text_config"].is_object()) {
    object = &doc["text_config"];
  }
  Reader r(text, file, *object);
  FirstError err;
  Architecture a;
  a.name = file;
  a.source = "config.json: " + file;
  const std::string type = r.String("model_type");
  const bool gpt2 = type == "gpt2";
  const bool opt = type == "opt";
  a.layers = err.Take(r.Int({"num_hidden_layers", "n_layer"}, -1), a.layers);
  a.hidden = err.Take(r.Int({"hidden_size", "n_embd"}, -1), a.hidden);
  a.heads = err.Take(r.Int({"num_attention_heads", "n_head"}, -1), a.heads);
  a.kv_heads = err.Take(r.Int({"num_key_value_heads"}, a.heads), a.kv_heads);
  a.head_dim = err.Take(r.Int({"head_dim"}, 0), a.head_dim);
  a.vocab = err.Take(r.Int({"vocab_size"}, -1), a.vocab);
  a.max_positions = err.Take(r.Int({"max_position_embeddings", "n_positions"}, 0), a.max_positions);
  if (gpt2 || opt) {
    a.intermediate = err.Take(r.Int({"ffn_dim", "n_inner"}, 4 * a.hidden), a.intermediate);
    a.gated_mlp = false;
    a.attention_bias = a.mlp_bias = a.layer_norm = a.learned_positions = true;
    a.position_offset = opt ? 2 : 0;
    a.tied_embeddings = err.Take(r.Bool("tie_word_embeddings", true), a.tied_embeddings);
  } else {
    a.intermediate = err.Take(r.Int({"intermediate_size"}, -1), a.intermediate);
    a.tied_embeddings = err.Take(r.Bool("tie_word_embeddings", false), a.tied_embeddings);
    a.attention_bias = err.Take(r.Bool("attention_bias", type == "qwen2" || type == "qwen2_moe"),
                                a.attention_bias);
  }
  a.experts =
      err.Take(r.Int({"num_local_experts", "num_experts", "n_routed_experts"}, 0), a.experts);
  if (a.experts > 0) {
    a.experts_per_token = err.Take(r.Int({"num_experts_per_tok"}, -1), a.experts_per_token);
    a.expert_intermediate =
        err.Take(r.Int({"moe_intermediate_size"}, a.intermediate), a.expert_intermediate);
  }
  a.shared_experts = err.Take(r.Int({"n_shared_experts"}, 0), a.shared_experts);
  a.dense_layers = err.Take(r.Int({"first_k_dense_replace"}, 0), a.dense_layers);
  // Multi-head latent attention (DeepSeek-V2/V3).
  a.kv_lora_rank = err.Take(r.Int({"kv_lora_rank"}, 0), a.kv_lora_rank);
  if (a.kv_lora_rank > 0) {
    a.q_lora_rank = err.Take(r.Int({"q_lora_rank"}, 0), a.q_lora_rank);
    a.qk_rope_head_dim = err.Take(r.Int({"qk_rope_head_dim"}, -1), a.qk_rope_head_dim);
    a.qk_nope_head_dim = err.Take(r.Int({"qk_nope_head_dim"}, -1), a.qk_nope_head_dim);
    a.v_head_dim = err.Take(r.Int({"v_head_dim"}, -1), a.v_head_dim);
  }
  // Sliding windows: Mistral (every layer), Gemma-2 (every other), Gemma-3 (pattern), Qwen2
  // (use_sliding_window from max_window_layers on), or an explicit layer_types list.
  const bool uses_window = err.Take(r.Bool("use_sliding_window", type != "qwen2"), false);
  a.sliding_window = err.Take(r.Int({"sliding_window"}, 0), a.sliding_window);
  if (!uses_window) a.sliding_window = 0;
  if (a.sliding_window > 0) {
    const int default_pattern = type == "gemma2" ? 2 : (type.rfind("gemma3", 0) == 0 ? 6 : 0);
    a.sliding_pattern =
        err.Take(r.Int({"sliding_window_pattern"}, default_pattern), a.sliding_pattern);
    a.sliding_layers = err.Take(r.LayerTypes("layer_types", a.layers), a.sliding_layers);
    if (type == "qwen2" && a.sliding_layers.empty()) {
      const int from = err.Take(r.Int({"max_window_layers"}, 0), 0);
      for (int i = 0; i < a.layers; ++i) a.sliding_layers.push_back(i >= from);
    }
  }
  if (!err.ok()) return err.status();
  if (a.heads % a.kv_heads != 0) {
    return r.Error("num_key_value_heads", std::to_string(a.heads) +
                                              " attention heads are not a "
                                              "multiple of " +
                                              std::to_string(a.kv_heads) + " kv heads");
  }
  if (a.head_dim == 0 && a.hidden % a.heads != 0) {
    return r.Error("num_attention_heads", "does not divide hidden_size " +
                                              std::to_string(a.hidden) + " and no head_dim given");
  }
  return a;
}

Result<Architecture> ReadHfConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(path + ": cannot open the model config");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return Status::InvalidArgument(path + ": cannot read the model config");
  return ParseHfConfig(ss.str(), path);
}

}  // namespace vgpu::estimate
