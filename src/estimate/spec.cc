#include "estimate/spec.h"

#include <charconv>
#include <cmath>
#include <filesystem>

#include "common/units.h"
#include "estimate/first_error.h"
#include "estimate/hf_config.h"

namespace vgpu::estimate {

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

Status Bad(std::string_view key, std::string_view value, std::string_view what) {
  return Status::InvalidArgument(std::string(key) + "=" + std::string(value) + ": " +
                                 std::string(what));
}

Result<int> Int(std::string_view key, std::string_view v, int lo, int hi) {
  int n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size()) return Bad(key, v, "not a whole number");
  if (n < lo || n > hi) {
    return Bad(key, v, "must be in " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return n;
}

Result<double> Fraction(std::string_view key, std::string_view v) {
  double d = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (ec != std::errc() || end != v.data() + v.size() || !(d > 0 && d <= 1)) {
    return Bad(key, v, "expected a fraction in (0, 1]");
  }
  return d;
}

Result<bool> Bool(std::string_view key, std::string_view v) {
  if (v == "true" || v == "1" || v == "yes") return true;
  if (v == "false" || v == "0" || v == "no") return false;
  return Bad(key, v, "expected true or false");
}

template <typename T>
Result<T> OneOf(std::string_view key, std::string_view v,
                std::initializer_list<std::pair<std::string_view, T>> choices) {
  std::string names;
  for (const auto& [name, value] : choices) {
    if (name == v) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  return Bad(key, v, "expected one of " + names);
}

}  // namespace

const std::vector<std::string>& SpecKeys() {
  static const std::vector<std::string> kKeys = {"model",
                                                 "mode",
                                                 "dtype",
                                                 "kv-dtype",
                                                 "batch",
                                                 "seq-len",
                                                 "target-len",
                                                 "max-model-len",
                                                 "concurrent",
                                                 "gpu-memory-utilization",
                                                 "max-num-batched-tokens",
                                                 "max-num-seqs",
                                                 "block-size",
                                                 "non-torch",
                                                 "optimizer",
                                                 "precision",
                                                 "zero",
                                                 "dp",
                                                 "tp",
                                                 "pp",
                                                 "checkpointing",
                                                 "flash-attention",
                                                 "cpu-offload",
                                                 "optimizer-in-backward",
                                                 "loss",
                                                 "loss-chunks",
                                                 "logits-held",
                                                 "compile",
                                                 "lora-rank",
                                                 "lora-targets",
                                                 "gpu",
                                                 "slice-memory",
                                                 "margin"};
  return kKeys;
}

Result<Spec> ParseSpec(std::string_view text) {
  Spec spec;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view pair = Trim(text.substr(start, comma - start));
    start = comma + 1;
    if (pair.empty()) {
      if (comma == text.size() && !spec.empty()) break;  // a trailing comma
      return Status::InvalidArgument("empty entry in '" + std::string(text) + "'");
    }
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return Status::InvalidArgument("'" + std::string(pair) + "' is not key=value");
    }
    const std::string key(Trim(pair.substr(0, eq)));
    const std::string value(Trim(pair.substr(eq + 1)));
    if (value.empty()) return Status::InvalidArgument(key + ": empty value");
    if (!spec.emplace(key, value).second) {
      return Status::InvalidArgument(key + " is given twice");
    }
  }
  return spec;
}

Result<Inputs> InputsFromSpec(const Spec& spec, bool allow_files) {
  for (const auto& [key, value] : spec) {
    bool known = false;
    for (const std::string& k : SpecKeys()) known = known || k == key;
    if (!known) return Status::InvalidArgument("unknown key '" + key + "'");
  }
  auto get = [&](const char* key) -> const std::string* {
    auto it = spec.find(key);
    return it == spec.end() ? nullptr : &it->second;
  };
  FirstError err;
  Inputs in;
  const std::string* model = get("model");
  if (!model)
    return Status::InvalidArgument("model: not given (a bundled model name or a config.json)");
  if (auto arch = FindArchitecture(*model)) {
    in.arch = *arch;
  } else if (allow_files && (model->ends_with(".json") || std::filesystem::exists(*model))) {
    std::string path = *model;
    if (std::filesystem::is_directory(path)) path += "/config.json";
    auto read = ReadHfConfig(path);
    if (!read) return read.error();
    in.arch = *read;
  } else {
    return Bad("model", *model,
               "unknown model (vgpu estimate --list-models lists them" +
                   std::string(allow_files ? "; or give a config.json)" : ")"));
  }
  if (auto v = get("mode")) {
    in.mode = err.Take(OneOf<Mode>("mode", *v,
                                   {{"serve", Mode::kServe},
                                    {"infer", Mode::kInfer},
                                    {"full", Mode::kFull},
                                    {"lora", Mode::kLora},
                                    {"qlora", Mode::kQlora}}),
                       in.mode);
  }
  if (auto v = get("dtype")) {
    in.weights = err.Take(OneOf<WeightFormat>("dtype", *v,
                                              {{"bf16", WeightFormat::kBf16},
                                               {"fp16", WeightFormat::kBf16},
                                               {"fp32", WeightFormat::kFp32},
                                               {"fp8", WeightFormat::kFp8},
                                               {"int8", WeightFormat::kInt8},
                                               {"int4", WeightFormat::kInt4Group128},
                                               {"gptq", WeightFormat::kInt4Group128},
                                               {"awq", WeightFormat::kInt4Group128},
                                               {"nf4", WeightFormat::kNf4}}),
                          in.weights);
  } else if (!in.arch.format_error.empty()) {
    return Bad("model", *model,
               "the checkpoint's weight format is not modelled (" + in.arch.format_error +
                   "); give --dtype");
  } else if (in.mode == Mode::kQlora && in.arch.format != WeightFormat::kNf4) {
    // QLoRA quantises the 16-bit checkpoint to NF4 itself.
  } else if (in.mode == Mode::kServe && in.arch.format == WeightFormat::kFp32) {
    // vLLM's dtype "auto" serves an fp32 checkpoint in 16 bits (vllm/config:
    // _get_and_verify_dtype).
    in.weights_source = in.arch.format_source + ", served in 16 bits as vLLM's dtype auto does";
  } else {
    in.weights = in.arch.format;
    in.weights_source = in.arch.format_source;
  }
  in.kv_dtype_bytes = in.weights == WeightFormat::kFp32 ? 4 : 2;
  if (auto v = get("kv-dtype")) {
    in.kv_dtype_bytes = err.Take(OneOf<double>("kv-dtype", *v,
                                               {{"auto", in.kv_dtype_bytes},
                                                {"bf16", 2.0},
                                                {"fp16", 2.0},
                                                {"fp8", 1.0},
                                                {"fp32", 4.0}}),
                                 in.kv_dtype_bytes);
  }
  constexpr int kBig = 1 << 30;
  if (auto v = get("batch")) in.batch = err.Take(Int("batch", *v, 1, kBig), in.batch);
  if (auto v = get("seq-len")) in.seq_len = err.Take(Int("seq-len", *v, 1, kBig), in.seq_len);
  if (auto v = get("target-len"))
    in.target_len = err.Take(Int("target-len", *v, 1, kBig), in.target_len);
  if (auto v = get("max-model-len"))
    in.max_model_len = err.Take(Int("max-model-len", *v, 1, kBig), in.max_model_len);
  if (auto v = get("concurrent"))
    in.concurrent = err.Take(Int("concurrent", *v, 1, kBig), in.concurrent);
  if (auto v = get("gpu-memory-utilization")) {
    in.gpu_memory_utilization =
        err.Take(Fraction("gpu-memory-utilization", *v), in.gpu_memory_utilization);
  }
  if (auto v = get("max-num-batched-tokens")) {
    in.max_num_batched_tokens =
        err.Take(Int("max-num-batched-tokens", *v, 1, kBig), in.max_num_batched_tokens);
  }
  if (auto v = get("max-num-seqs"))
    in.max_num_seqs = err.Take(Int("max-num-seqs", *v, 1, kBig), in.max_num_seqs);
  if (auto v = get("block-size"))
    in.block_size = err.Take(Int("block-size", *v, 1, 4096), in.block_size);
  if (auto v = get("non-torch")) {
    auto bytes = ParseByteSize(*v, "non-torch");
    if (!bytes) return Bad("non-torch", *v, bytes.error().message());
    in.non_torch_bytes = double(*bytes);
  }
  if (auto v = get("optimizer")) {
    in.optimizer = err.Take(OneOf<Optimizer>("optimizer", *v,
                                             {{"adamw", Optimizer::kAdamW},
                                              {"adamw-fused", Optimizer::kAdamWFused},
                                              {"adam", Optimizer::kAdamW},
                                              {"adamw8bit", Optimizer::kAdamW8bit},
                                              {"paged-adamw", Optimizer::kPagedAdamW},
                                              {"paged-adamw8bit", Optimizer::kPagedAdamW8bit},
                                              {"sgd", Optimizer::kSgd},
                                              {"sgd-momentum", Optimizer::kSgdMomentum}}),
                            in.optimizer);
  }
  if (auto v = get("precision")) {
    in.precision =
        err.Take(OneOf<Precision>("precision", *v,
                                  {{"mixed", Precision::kMixed}, {"pure", Precision::kPure}}),
                 in.precision);
  }
  if (auto v = get("zero")) in.zero_stage = err.Take(Int("zero", *v, 0, 3), in.zero_stage);
  if (auto v = get("dp")) in.dp = err.Take(Int("dp", *v, 1, 1 << 20), in.dp);
  if (auto v = get("tp")) in.tp = err.Take(Int("tp", *v, 1, 1024), in.tp);
  if (auto v = get("pp")) in.pp = err.Take(Int("pp", *v, 1, 1024), in.pp);
  if (auto v = get("checkpointing")) {
    in.checkpointing = err.Take(OneOf<Checkpointing>("checkpointing", *v,
                                                     {{"none", Checkpointing::kNone},
                                                      {"false", Checkpointing::kNone},
                                                      {"full", Checkpointing::kFull},
                                                      {"true", Checkpointing::kFull}}),
                                in.checkpointing);
  }
  // T5's relative position bias rules out FlashAttention: HF computes its scores explicitly.
  if (in.arch.EncoderDecoder()) in.flash_attention = false;
  if (auto v = get("flash-attention"))
    in.flash_attention = err.Take(Bool("flash-attention", *v), in.flash_attention);
  if (auto v = get("cpu-offload"))
    in.cpu_offload = err.Take(Bool("cpu-offload", *v), in.cpu_offload);
  if (auto v = get("optimizer-in-backward")) {
    in.optimizer_in_backward =
        err.Take(Bool("optimizer-in-backward", *v), in.optimizer_in_backward);
  }
  if (auto v = get("loss")) {
    in.loss = err.Take(
        OneOf<LossKind>("loss", *v, {{"fp32", LossKind::kFp32}, {"chunked", LossKind::kChunked}}),
        in.loss);
  }
  if (auto v = get("loss-chunks")) {
    in.loss_chunks = err.Take(Int("loss-chunks", *v, 1, 1024), in.loss_chunks);
    if (in.loss != LossKind::kChunked) return Bad("loss-chunks", *v, "needs loss=chunked");
  }
  if (auto v = get("logits-held")) {
    bool held = false;
    held = err.Take(Bool("logits-held", *v), held);
    in.logits_held = held;
  }
  if (auto v = get("compile")) {
    in.compile = err.Take(OneOf<Compile>("compile", *v,
                                         {{"none", Compile::kNone},
                                          {"model", Compile::kModel},
                                          {"loss", Compile::kLoss},
                                          {"all", Compile::kAll}}),
                          in.compile);
  }
  if (auto v = get("lora-rank"))
    in.lora_rank = err.Take(Int("lora-rank", *v, 1, 65536), in.lora_rank);
  if (auto v = get("lora-targets")) {
    in.lora_all_linear = err.Take(OneOf<bool>("lora-targets", *v, {{"qv", false}, {"all", true}}),
                                  in.lora_all_linear);
  }
  if (auto v = get("gpu")) {
    in.gpu = FindGpu(*v);
    if (!in.gpu) return Bad("gpu", *v, "unknown GPU model (vgpu estimate --list-gpus lists them)");
  }
  if (auto v = get("slice-memory")) {
    auto bytes = ParseByteSize(*v, "slice-memory");
    if (!bytes || *bytes == 0) {
      return Bad("slice-memory", *v, bytes ? "must be more than 0" : bytes.error().message());
    }
    in.slice_memory = double(*bytes);
  }
  if (auto v = get("margin")) {
    auto percent = ParsePercent(*v, "margin");
    if (!percent) return Bad("margin", *v, percent.error().message());
    in.margin = *percent / 100.0;
  }
  if (!err.ok()) return err.status();
  if (Status s = Validate(in); !s.ok()) return s;
  return in;
}

}  // namespace vgpu::estimate
