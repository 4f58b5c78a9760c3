#include "estimate/hf_config.h"

#include "estimate/first_error.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
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
  // Above `max`: an error naming the key.
  Result<int> Int(std::initializer_list<std::string_view> keys, int fallback,
                  int max = (1 << 30)) const {
    for (std::string_view key : keys) {
      if (!Has(key)) continue;
      const Json& v = object_.at(std::string(key));
      if (!v.is_number_integer() &&
          !(v.is_number_float() && v.get<double>() == double(int64_t(v.get<double>())))) {
        return Error(key, "expected a positive integer, found " + v.dump());
      }
      const int64_t n = v.is_number_integer() ? v.get<int64_t>() : int64_t(v.get<double>());
      if (n <= 0) return Error(key, "expected a positive integer, found " + v.dump());
      if (n > max) {
        return Error(key, v.dump() + " is more than " + std::to_string(max) +
                              ", the most the estimator takes");
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

  std::optional<double> Number(std::string_view key) const {
    if (!Has(key) || !object_.at(std::string(key)).is_number()) return std::nullopt;
    return object_.at(std::string(key)).get<double>();
  }

  // The line of `key` in the file ("config.json:12"), for messages that are not errors.
  std::string Where(std::string_view key) const {
    const int line = LineOfKey(text_, key);
    return file_ + (line > 0 ? ":" + std::to_string(line) : "");
  }

 private:
  std::string_view text_;
  const std::string& file_;
  const Json& object_;
};

int Max(int Architecture::*field) {
  for (const ShapeLimit& l : ShapeLimits()) {
    if (l.field == field) return l.max;
  }
  return 1 << 30;
}

// The checkpoint's weight format: quantization_config (fp8, fbgemm_fp8, gptq, awq, bitsandbytes,
// compressed-tensors), else torch_dtype (or transformers' newer `dtype`), else bf16 assumed.
// A format the estimator does not model goes to format_error (an explicit --dtype is then
// needed), a malformed one is an error.
Status ReadFormat(const Json& doc, std::string_view text, const std::string& file,
                  Architecture* a) {
  Reader top(text, file, doc);
  auto set = [&](WeightFormat f, const std::string& key, const std::string& what) {
    a->format = f;
    a->format_source = top.Where(key) + ": " + what;
  };
  if (top.Has("quantization_config")) {
    const Json& q = doc["quantization_config"];
    if (!q.is_object()) return top.Error("quantization_config", "expected an object");
    const std::string method = q.value("quant_method", "");
    const std::string named = "quantization_config quant_method " + method;
    auto bits = [&](const Json& o) {
      return o.contains("bits") && o["bits"].is_number_integer() ? o["bits"].get<int>() : 4;
    };
    if (method == "fp8" || method == "fbgemm_fp8") {
      set(WeightFormat::kFp8, "quantization_config", named);
    } else if (method == "gptq" || method == "awq") {
      const int b = bits(q);
      const int group = q.contains("group_size") && q["group_size"].is_number_integer()
                            ? q["group_size"].get<int>()
                            : 128;
      if (b == 4) {
        set(WeightFormat::kInt4Group128, "quantization_config",
            named + " (4 bits, group_size " + std::to_string(group) +
                (group == 128 ? ")" : "; counted as group 128)"));
      } else if (b == 8) {
        set(WeightFormat::kInt8, "quantization_config", named + " (8 bits)");
      } else {
        a->format_error = top.Where("quantization_config") + ": " + named + " with " +
                          std::to_string(b) + " bits (4 and 8 are modelled)";
      }
    } else if (method == "bitsandbytes") {
      if (q.value("load_in_4bit", false)) {
        set(WeightFormat::kNf4, "quantization_config",
            named + " 4-bit (" + q.value("bnb_4bit_quant_type", std::string("fp4")) + ")");
      } else if (q.value("load_in_8bit", false)) {
        set(WeightFormat::kInt8, "quantization_config", named + " 8-bit");
      } else {
        a->format_error = top.Where("quantization_config") + ": " + named +
                          " with neither load_in_4bit nor load_in_8bit";
      }
    } else if (method == "compressed-tensors") {
      // config_groups.<group>.weights: {num_bits, type: "float" | "int"}; the first group counts.
      std::optional<WeightFormat> f;
      std::string what;
      if (q.contains("config_groups") && q["config_groups"].is_object()) {
        for (const auto& [name, group] : q["config_groups"].items()) {
          if (!group.is_object() || !group.contains("weights") || !group["weights"].is_object()) {
            continue;
          }
          const Json& w = group["weights"];
          const int b = w.value("num_bits", 0);
          const std::string type = w.value("type", std::string("int"));
          if (b == 8 && type == "float") f = WeightFormat::kFp8;
          if (b == 8 && type == "int") f = WeightFormat::kInt8;
          if (b == 4 && type == "int") f = WeightFormat::kInt4Group128;
          what = std::to_string(b) + "-bit " + type;
          break;
        }
      }
      if (f) {
        set(*f, "quantization_config", named + " (" + what + " weights)");
      } else {
        a->format_error = top.Where("quantization_config") + ": " + named +
                          (what.empty() ? " without weight groups" : " with " + what + " weights") +
                          " (8-bit float, 8-bit int and 4-bit int are modelled)";
      }
    } else {
      a->format_error =
          top.Where("quantization_config") + ": " +
          (method.empty() ? std::string("quantization_config without quant_method") : named) +
          " is not modelled (fp8, fbgemm_fp8, gptq, awq, bitsandbytes and "
          "compressed-tensors are)";
    }
    return Status::Ok();
  }
  for (const char* key : {"torch_dtype", "dtype"}) {
    if (!top.Has(key)) continue;
    const std::string d = top.String(key);
    const std::string named = std::string(key) + " " + d;
    if (d == "bfloat16" || d == "float16") {
      set(WeightFormat::kBf16, key, named);
    } else if (d == "float32") {
      set(WeightFormat::kFp32, key, named);
    } else if (d.rfind("float8", 0) == 0) {
      set(WeightFormat::kFp8, key, named);
    } else {
      a->format_error = top.Where(key) + ": " + named + " is not modelled";
    }
    return Status::Ok();
  }
  return Status::Ok();
}

// T5 and mT5 (HF T5Config): num_layers encoder and num_decoder_layers decoder layers, d_model,
// d_kv, num_heads, d_ff, feed_forward_proj ("relu", or "gated-gelu" for T5 v1.1 / mT5),
// tie_word_embeddings (T5Config's default true), relative_attention_num_buckets, dropout_rate;
// n_positions is the default length only.
Result<Architecture> ParseT5(const Reader& r, Architecture a) {
  using A = Architecture;
  FirstError err;
  a.encoder_layers = err.Take(r.Int({"num_layers"}, -1, Max(&A::encoder_layers)), 0);
  a.layers = err.Take(r.Int({"num_decoder_layers"}, a.encoder_layers, Max(&A::layers)), 0);
  a.hidden = err.Take(r.Int({"d_model"}, -1, Max(&A::hidden)), 0);
  a.heads = a.kv_heads = err.Take(r.Int({"num_heads"}, -1, Max(&A::heads)), 0);
  a.head_dim = err.Take(r.Int({"d_kv"}, 64, Max(&A::head_dim)), 0);
  a.intermediate = err.Take(r.Int({"d_ff"}, -1, Max(&A::intermediate)), 0);
  a.vocab = err.Take(r.Int({"vocab_size"}, -1, Max(&A::vocab)), 0);
  a.max_positions = err.Take(r.Int({"n_positions"}, 512, Max(&A::max_positions)), 0);
  a.relative_buckets =
      err.Take(r.Int({"relative_attention_num_buckets"}, 32, Max(&A::relative_buckets)), 0);
  a.tied_embeddings = err.Take(r.Bool("tie_word_embeddings", true), true);
  if (!err.ok()) return err.status();
  const std::string proj = r.Has("feed_forward_proj") ? r.String("feed_forward_proj") : "relu";
  if (proj == "relu" || proj == "gelu") {
    a.gated_mlp = false;
  } else if (proj.rfind("gated-", 0) == 0) {
    a.gated_mlp = true;
  } else {
    return r.Error("feed_forward_proj",
                   "expected relu, gelu or gated-<act>, found \"" + proj + "\"");
  }
  a.dropout = true;
  if (r.Has("dropout_rate")) {
    if (!r.Number("dropout_rate")) return r.Error("dropout_rate", "expected a number");
    a.dropout = *r.Number("dropout_rate") > 0;
  }
  return a;
}

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
  const bool t5 = type == "t5" || type == "mt5";
  if (Status s = ReadFormat(doc, text, file, &a); !s.ok()) return s;
  if (!t5 && err.Take(r.Bool("is_encoder_decoder", false), false)) {
    return r.Error("is_encoder_decoder", "an encoder-decoder model of model_type \"" + type +
                                             "\" is not modelled (t5 and mt5 are)");
  }
  using A = Architecture;
  if (t5) return ParseT5(r, a);
  a.layers = err.Take(r.Int({"num_hidden_layers", "n_layer"}, -1, Max(&A::layers)), a.layers);
  a.hidden = err.Take(r.Int({"hidden_size", "n_embd"}, -1, Max(&A::hidden)), a.hidden);
  a.heads = err.Take(r.Int({"num_attention_heads", "n_head"}, -1, Max(&A::heads)), a.heads);
  a.kv_heads = err.Take(r.Int({"num_key_value_heads"}, a.heads, Max(&A::kv_heads)), a.kv_heads);
  a.head_dim = err.Take(r.Int({"head_dim"}, 0, Max(&A::head_dim)), a.head_dim);
  a.vocab = err.Take(r.Int({"vocab_size"}, -1, Max(&A::vocab)), a.vocab);
  a.max_positions =
      err.Take(r.Int({"max_position_embeddings", "n_positions"}, 0, Max(&A::max_positions)),
               a.max_positions);
  if (gpt2 || opt) {
    a.intermediate = err.Take(r.Int({"ffn_dim", "n_inner"}, 4 * a.hidden, Max(&A::intermediate)),
                              a.intermediate);
    a.gated_mlp = false;
    a.attention_bias = a.mlp_bias = a.layer_norm = a.learned_positions = true;
    a.position_offset = opt ? 2 : 0;
    a.tied_embeddings = err.Take(r.Bool("tie_word_embeddings", true), a.tied_embeddings);
  } else {
    a.intermediate =
        err.Take(r.Int({"intermediate_size"}, -1, Max(&A::intermediate)), a.intermediate);
    a.tied_embeddings = err.Take(r.Bool("tie_word_embeddings", false), a.tied_embeddings);
    a.attention_bias = err.Take(r.Bool("attention_bias", type == "qwen2" || type == "qwen2_moe"),
                                a.attention_bias);
  }
  a.experts =
      err.Take(r.Int({"num_local_experts", "num_experts", "n_routed_experts"}, 0, Max(&A::experts)),
               a.experts);
  if (a.experts > 0) {
    a.experts_per_token = err.Take(r.Int({"num_experts_per_tok"}, -1, Max(&A::experts_per_token)),
                                   a.experts_per_token);
    a.expert_intermediate =
        err.Take(r.Int({"moe_intermediate_size"}, a.intermediate, Max(&A::expert_intermediate)),
                 a.expert_intermediate);
  }
  a.shared_experts =
      err.Take(r.Int({"n_shared_experts"}, 0, Max(&A::shared_experts)), a.shared_experts);
  a.dense_layers =
      err.Take(r.Int({"first_k_dense_replace"}, 0, Max(&A::dense_layers)), a.dense_layers);
  // Multi-head latent attention (DeepSeek-V2/V3).
  a.kv_lora_rank = err.Take(r.Int({"kv_lora_rank"}, 0, Max(&A::kv_lora_rank)), a.kv_lora_rank);
  if (a.kv_lora_rank > 0) {
    a.q_lora_rank = err.Take(r.Int({"q_lora_rank"}, 0, Max(&A::q_lora_rank)), a.q_lora_rank);
    a.qk_rope_head_dim =
        err.Take(r.Int({"qk_rope_head_dim"}, -1, Max(&A::qk_rope_head_dim)), a.qk_rope_head_dim);
    a.qk_nope_head_dim =
        err.Take(r.Int({"qk_nope_head_dim"}, -1, Max(&A::qk_nope_head_dim)), a.qk_nope_head_dim);
    a.v_head_dim = err.Take(r.Int({"v_head_dim"}, -1, Max(&A::v_head_dim)), a.v_head_dim);
  }
  // Sliding windows: Mistral (every layer), Gemma-2 (every other), Gemma-3 (pattern), Qwen2
  // (use_sliding_window from max_window_layers on), or an explicit layer_types list.
  const bool uses_window = err.Take(r.Bool("use_sliding_window", type != "qwen2"), false);
  a.sliding_window =
      err.Take(r.Int({"sliding_window"}, 0, Max(&A::sliding_window)), a.sliding_window);
  if (!uses_window) a.sliding_window = 0;
  if (a.sliding_window > 0) {
    const int default_pattern = type == "gemma2" ? 2 : (type.rfind("gemma3", 0) == 0 ? 6 : 0);
    a.sliding_pattern =
        err.Take(r.Int({"sliding_window_pattern"}, default_pattern, Max(&A::sliding_pattern)),
                 a.sliding_pattern);
    a.sliding_layers = err.Take(r.LayerTypes("layer_types", a.layers), a.sliding_layers);
    if (type == "qwen2" && a.sliding_layers.empty()) {
      const int from = err.Take(r.Int({"max_window_layers"}, 0, Max(&A::layers)), 0);
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
