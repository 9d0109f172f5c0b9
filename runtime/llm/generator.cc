#include "runtime/llm/generator.h"

#include <algorithm>
#include <cmath>

#include "runtime/core/error.h"
#include "runtime/core/half.h"
#include "runtime/platform/clock.h"

namespace ember::llm {
namespace {

double ms_since(uint64_t start_ns) { return static_cast<double>(now_ns() - start_ns) / 1e6; }

// The constant method `name`'s values, or an empty vector when the program has no such method.
Result<std::vector<EValue>> constant(Module& module, const std::vector<std::string>& names,
                                     const char* name) {
  if (std::find(names.begin(), names.end(), name) == names.end()) return std::vector<EValue>{};
  return module.execute(name, {});
}

Result<std::optional<int64_t>> constant_int(Module& module, const std::vector<std::string>& names,
                                            const char* name) {
  Result<std::vector<EValue>> v = constant(module, names, name);
  if (!v.ok()) return v.error();
  if (v->empty()) return std::optional<int64_t>{};
  if (v->size() != 1 || !((*v)[0].is_int() || (*v)[0].is_bool())) {
    return fail(Error::InvalidArgument, "not an LLM program: its method %s returns no integer",
                name);
  }
  return std::optional<int64_t>((*v)[0].is_int() ? (*v)[0].to_int() : (*v)[0].to_bool());
}

Result<std::optional<std::string>> constant_string(Module& module,
                                                   const std::vector<std::string>& names,
                                                   const char* name) {
  Result<std::vector<EValue>> v = constant(module, names, name);
  if (!v.ok()) return v.error();
  if (v->empty()) return std::optional<std::string>{};
  if (v->size() != 1 || !(*v)[0].is_string()) {
    return fail(Error::InvalidArgument, "its method %s returns no string", name);
  }
  return std::optional<std::string>(std::string((*v)[0].to_string()));
}

}  // namespace

double GenerationStats::prefill_tokens_per_s() const {
  return prefill_ms > 0 ? static_cast<double>(prompt_tokens) * 1e3 / prefill_ms : 0.0;
}

double GenerationStats::decode_tokens_per_s() const {
  return decode_ms > 0 ? static_cast<double>(decode_steps) * 1e3 / decode_ms : 0.0;
}

Result<std::unique_ptr<TextGenerator>> TextGenerator::load(Module& module,
                                                           const Tokenizer& tokenizer) {
  std::unique_ptr<TextGenerator> g(new TextGenerator(module, tokenizer));
  if (Error e = g->read_metadata(); e != Error::Ok) return e;
  return g;
}

Error TextGenerator::read_metadata() {
  Result<std::vector<std::string>> names = module_.method_names();
  if (!names.ok()) return names.error();
  if (std::find(names->begin(), names->end(), "forward") == names->end()) {
    return fail(Error::InvalidArgument, "not an LLM program: it has no forward method");
  }
  Result<MethodMeta> fwd = module_.method_meta("forward");
  if (!fwd.ok()) return fwd.error();
  Result<TensorInfo> in0 = fwd->num_inputs() == 2 ? fwd->input_tensor_info(0)
                                                  : Result<TensorInfo>(Error::InvalidArgument);
  Result<TensorInfo> in1 = fwd->num_inputs() == 2 ? fwd->input_tensor_info(1)
                                                  : Result<TensorInfo>(Error::InvalidArgument);
  Result<TensorInfo> out0 =
      fwd->num_outputs() >= 1 ? fwd->output_tensor_info(0) : Result<TensorInfo>(Error::NotFound);
  if (!in0.ok() || !in1.ok() || !out0.ok() || in0->dtype != ScalarType::Long ||
      in0->sizes.size() != 2 || in0->sizes[0] != 1 || in1->dtype != ScalarType::Long ||
      in1->sizes.size() != 1 || in1->sizes[0] != 1) {
    return fail(Error::InvalidArgument,
                "not an LLM program: forward must take tokens (int64 [1, S]) and input_pos "
                "(int64 [1]) and return logits, as ExecuTorch's LLM programs and Ember's "
                "export-llm do");
  }
  const ScalarType logits_type = out0->dtype;
  if ((logits_type != ScalarType::Float && logits_type != ScalarType::Half &&
       logits_type != ScalarType::BFloat16) ||
      out0->sizes.size() < 2 || out0->sizes.size() > 3) {
    return fail(Error::InvalidArgument,
                "not an LLM program: forward's first output is not float logits [1, vocab] or "
                "[1, S, vocab]");
  }
  struct Field {
    const char* name;
    std::optional<int64_t> value;
  };
  Field fields[] = {{"get_max_seq_len", {}}, {"get_max_context_len", {}},  {"get_vocab_size", {}},
                    {"get_bos_id", {}},      {"enable_dynamic_shape", {}}, {"use_kv_cache", {}}};
  for (Field& f : fields) {
    Result<std::optional<int64_t>> v = constant_int(module_, *names, f.name);
    if (!v.ok()) return v.error();
    f.value = *v;
  }
  const int32_t declared_seq = in0->sizes[1];
  const bool dynamic = in0->dynamism != ShapeDynamism::Static;
  meta_.enable_dynamic_shape = fields[4].value.value_or(dynamic) != 0 && dynamic;
  meta_.max_seq_len = std::min<int64_t>(fields[0].value.value_or(declared_seq), declared_seq);
  if (!meta_.enable_dynamic_shape && declared_seq != 1) {
    return fail(Error::InvalidArgument,
                "forward takes exactly %d tokens a call (no dynamic shape): a generator needs "
                "single tokens or a dynamic length",
                static_cast<int>(declared_seq));
  }
  if (fields[5].value && *fields[5].value == 0) {
    return fail(Error::InvalidArgument,
                "the program has no KV cache (use_kv_cache is false): export it with one");
  }
  meta_.max_context_len = fields[1].value.value_or(fields[0].value.value_or(0));
  if (meta_.max_context_len < 2) {
    return fail(Error::InvalidArgument,
                "not an LLM program: no get_max_context_len or get_max_seq_len method says how "
                "many tokens its KV cache holds");
  }
  const int32_t out_vocab = out0->sizes.back();
  meta_.vocab_size = fields[2].value.value_or(out_vocab);
  if (meta_.vocab_size != out_vocab) {
    return fail(Error::InvalidArgument, "the program says get_vocab_size %lld, its logits have %d",
                static_cast<long long>(meta_.vocab_size), static_cast<int>(out_vocab));
  }
  if (tok_.vocab_size() > meta_.vocab_size) {
    return fail(Error::InvalidArgument,
                "the tokenizer has %d tokens, the program's vocabulary %lld: they do not belong "
                "together",
                static_cast<int>(tok_.vocab_size()), static_cast<long long>(meta_.vocab_size));
  }
  sample_vocab_ = tok_.vocab_size();  // rows past the tokenizer's are padding
  meta_.bos_id = fields[3].value;
  Result<std::vector<EValue>> eos = constant(module_, *names, "get_eos_ids");
  if (!eos.ok()) return eos.error();
  for (const EValue& v : *eos) {
    if (!v.is_int()) return fail(Error::InvalidArgument, "get_eos_ids returns a non-integer");
    meta_.eos_ids.push_back(v.to_int());
  }
  Result<std::optional<std::string>> prefix = constant_string(module_, *names, "get_chat_prefix");
  Result<std::optional<std::string>> suffix = constant_string(module_, *names, "get_chat_suffix");
  if (!prefix.ok()) return prefix.error();
  if (!suffix.ok()) return suffix.error();
  if (*prefix && *suffix) meta_.chat.emplace(**prefix, **suffix);
  if (meta_.eos_ids.empty()) {  // the tokenizer's end-of-text tokens, as ExecuTorch's runner
    for (const char* t : {"</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>",
                          "<eos>", "<|end|>"}) {
      if (std::optional<int32_t> id = tok_.token_id(t)) meta_.eos_ids.push_back(*id);
    }
  }
  return Error::Ok;
}

Result<std::span<const float>> TextGenerator::step(size_t begin, size_t end) {
  chunk_.assign(tokens_.begin() + static_cast<ptrdiff_t>(begin),
                tokens_.begin() + static_cast<ptrdiff_t>(end));
  int64_t pos = static_cast<int64_t>(begin);
  const int32_t tokens_sizes[2] = {1, static_cast<int32_t>(end - begin)};
  const int32_t pos_sizes[1] = {1};
  Result<Tensor> tokens = Tensor::make(ScalarType::Long, tokens_sizes, {}, chunk_.data());
  Result<Tensor> input_pos = Tensor::make(ScalarType::Long, pos_sizes, {}, &pos);
  if (!tokens.ok()) return tokens.error();
  if (!input_pos.ok()) return input_pos.error();
  Result<std::vector<EValue>> out =
      module_.forward({EValue::from_tensor(&*tokens), EValue::from_tensor(&*input_pos)});
  if (!out.ok()) return out.error();
  if (out->empty() || !(*out)[0].is_tensor()) {
    return fail(Error::InvalidArgument, "forward returned no logits tensor");
  }
  const Tensor& logits = (*out)[0].to_tensor();
  const int64_t vocab = meta_.vocab_size;
  if (logits.numel() < vocab || logits.numel() % vocab != 0) {
    return fail(Error::InvalidArgument, "forward returned %lld logits, not rows of %lld",
                static_cast<long long>(logits.numel()), static_cast<long long>(vocab));
  }
  const int64_t last = logits.numel() - vocab;  // the last position's row
  if (logits.dtype() == ScalarType::Float) {
    return std::span<const float>(logits.data<float>() + last, static_cast<size_t>(vocab));
  }
  logits_.resize(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) {
    logits_[static_cast<size_t>(i)] = logits.dtype() == ScalarType::Half
                                          ? static_cast<float>(logits.data<Half>()[last + i])
                                          : static_cast<float>(logits.data<BFloat16>()[last + i]);
  }
  return std::span<const float>(logits_);
}

Result<GenerationStats> TextGenerator::generate(
    std::string_view prompt, const GenerationOptions& options,
    const std::function<void(std::string_view)>& on_text) {
  if (options.max_new_tokens < 0) {
    return fail(Error::InvalidArgument, "max_new_tokens must be >= 0, not %d",
                static_cast<int>(options.max_new_tokens));
  }
  Result<Sampler> sampler = Sampler::make(options.sampling);
  if (!sampler.ok()) return sampler.error();
  GenerationStats stats;
  const uint64_t start = now_ns();
  if (options.chat && !meta_.chat) {
    return fail(Error::InvalidArgument,
                "the program carries no chat template (the model directory had none at export)");
  }
  Result<std::vector<int32_t>> ids =
      options.chat ? tok_.encode(meta_.chat->first + std::string(prompt) + meta_.chat->second,
                                 /*add_special_tokens=*/false)
                   : tok_.encode(prompt, /*add_special_tokens=*/true);
  if (!ids.ok()) return ids.error();
  tokens_ = std::move(*ids);
  if (tokens_.empty() && meta_.bos_id) tokens_.push_back(static_cast<int32_t>(*meta_.bos_id));
  if (tokens_.empty()) {
    return fail(Error::InvalidArgument, "the prompt is empty and the program names no BOS token");
  }
  const size_t prompt_len = tokens_.size();
  if (static_cast<int64_t>(prompt_len) >= meta_.max_context_len) {
    return fail(Error::InvalidArgument,
                "the prompt is %zu tokens, the program's context %lld: it leaves no room for a "
                "new token",
                prompt_len, static_cast<long long>(meta_.max_context_len));
  }
  stats.prompt_tokens = static_cast<int64_t>(prompt_len);
  const size_t chunk = static_cast<size_t>(std::max<int64_t>(meta_.max_seq_len, 1));
  Result<std::span<const float>> logits = std::span<const float>();
  const uint64_t prefill_start = now_ns();
  for (size_t b = 0; b < prompt_len; b += chunk) {
    logits = step(b, std::min(prompt_len, b + chunk));
    if (!logits.ok()) return logits.error();
  }
  stats.prefill_ms = ms_since(prefill_start);

  StreamDecoder stream(tok_, /*skip_special_tokens=*/true);
  uint64_t decode_start = 0;
  stats.stop_reason = "max_new_tokens";
  for (int32_t n = 0; n < options.max_new_tokens; ++n) {
    Result<int32_t> next = sampler->sample(logits->first(static_cast<size_t>(sample_vocab_)));
    if (!next.ok()) return next.error();
    if (n == 0) {
      stats.first_token_ms = ms_since(start);
      decode_start = now_ns();
    }
    if (!options.ignore_eos &&
        std::find(meta_.eos_ids.begin(), meta_.eos_ids.end(), *next) != meta_.eos_ids.end()) {
      stats.stop_reason = "eos";
      break;
    }
    tokens_.push_back(*next);
    ++stats.generated_tokens;
    Result<std::string> text = stream.step(*next);
    if (!text.ok() && text.error() == Error::InvalidState) {
      // A character cut by byte fallback and then another token: its bytes were already given
      // as U+FFFD (tokenizers' DecodeStream fails the same way); go on from this token.
      stream.reset();
      text = stream.step(*next);
    }
    if (!text.ok()) return text.error();
    if (!text->empty()) on_text(*text);
    if (n + 1 == options.max_new_tokens) break;
    if (static_cast<int64_t>(tokens_.size()) >= meta_.max_context_len) {
      stats.stop_reason = "context";
      break;
    }
    logits = step(tokens_.size() - 1, tokens_.size());
    if (!logits.ok()) return logits.error();
    ++stats.decode_steps;
  }
  if (decode_start != 0) stats.decode_ms = ms_since(decode_start);
  Result<std::string> rest = stream.flush();
  if (!rest.ok()) return rest.error();
  if (!rest->empty()) on_text(*rest);
  return stats;
}

}  // namespace ember::llm
