// Text generation: a prompt in, streamed text out, on an LLM program with a KV cache.
//
//   ember::Module module("qwen.pte", {.data_path = "qwen.ptd", .num_threads = 2});
//   auto tokenizer = *ember::llm::Tokenizer::load("Qwen2.5-0.5B/tokenizer.json");
//   auto generator = *ember::llm::TextGenerator::load(module, *tokenizer);
//   auto stats = generator->generate("Once upon a time", {.max_new_tokens = 64},
//                                    [](std::string_view text) { std::fputs(...); });
//
// The program follows ExecuTorch's LLM convention, which Ember's exporter (python -m ember
// export-llm) and ExecuTorch's export_llama both write: `forward(tokens int64 [1, S], input_pos
// int64 [1]) -> logits [1, vocab]` (or [1, S, vocab]: the last row is read), the KV cache as the
// program's mutable state, and constant methods describing it (get_max_seq_len,
// get_max_context_len, get_vocab_size, get_eos_ids, enable_dynamic_shape, ...). The prompt is
// encoded with the tokenizer's special tokens (its BOS where its post-processor adds one, as
// transformers' tokenizer(prompt) does) and run in chunks of up to get_max_seq_len tokens (one at
// a time for a program without dynamic shapes); each new token is fed back at the next position
// until an EOS id (the program's get_eos_ids, else the tokenizer's EOS-like special tokens),
// max_new_tokens, or the end of the context.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/core/result.h"
#include "runtime/executor/module.h"
#include "runtime/llm/sampler.h"
#include "runtime/llm/tokenizer.h"

namespace ember::llm {

// What the program says of itself (its constant methods; defaults where it has none).
struct LlmMetadata {
  int64_t max_seq_len = 1;      // tokens one forward call takes
  int64_t max_context_len = 0;  // tokens the KV cache holds
  int64_t vocab_size = 0;       // logits per position
  std::optional<int64_t> bos_id;
  std::vector<int64_t> eos_ids;
  bool enable_dynamic_shape = false;
  // The text around one user message in the model's chat template with the assistant's turn
  // after it (get_chat_prefix / get_chat_suffix, rendered by Ember's exporter).
  std::optional<std::pair<std::string, std::string>> chat;
};

struct GenerationOptions {
  int32_t max_new_tokens = 128;
  SamplerOptions sampling;  // temperature 0: greedy
  // The prompt as a user message in the chat template (metadata().chat), encoded as the template
  // writes it (its special tokens in the text, nothing added). A program without one: refused.
  bool chat = false;
  // Generate max_new_tokens whatever the tokens (benchmarks: llama.cpp's llama-bench does too).
  bool ignore_eos = false;
};

struct GenerationStats {
  int64_t prompt_tokens = 0;
  int64_t generated_tokens = 0;  // the EOS that stopped generation not counted
  double prefill_ms = 0;         // the prompt's forward calls
  double first_token_ms = 0;     // from the call to the first new token (tokenizing included)
  double decode_ms = 0;          // from the first new token to the end
  int64_t decode_steps = 0;      // forward calls in decode_ms
  std::string stop_reason;       // "eos", "max_new_tokens" or "context"
  double prefill_tokens_per_s() const;
  double decode_tokens_per_s() const;  // decode_steps over decode_ms
};

class TextGenerator {
 public:
  // Reads the metadata and checks the program against the tokenizer: a forward of the convention
  // above, a vocabulary at least the tokenizer's, a context of at least 2 tokens. InvalidArgument
  // with a one-line reason otherwise ("not an LLM program: ...", "the tokenizer has N tokens, the
  // program's vocabulary M"). `module` and `tokenizer` must outlive the generator.
  static Result<std::unique_ptr<TextGenerator>> load(Module& module, const Tokenizer& tokenizer);

  const LlmMetadata& metadata() const { return meta_; }

  // Generates from the start of the context (the cache is overwritten, not cleared: positions
  // past the prompt are never read before they are written). `on_text` gets each piece of UTF-8
  // text as it completes (a multi-byte character is never split; special tokens are skipped).
  // A prompt that does not fit the context leaves room for no new token: InvalidArgument.
  Result<GenerationStats> generate(std::string_view prompt, const GenerationOptions& options,
                                   const std::function<void(std::string_view)>& on_text);

  // The token ids of the last generate: the prompt's, then the new ones.
  const std::vector<int32_t>& tokens() const { return tokens_; }

 private:
  TextGenerator(Module& module, const Tokenizer& tokenizer) : module_(module), tok_(tokenizer) {}
  Error read_metadata();
  // Runs forward on tokens_[begin, end) at position `begin`; the last position's logits.
  Result<std::span<const float>> step(size_t begin, size_t end);

  Module& module_;
  const Tokenizer& tok_;
  LlmMetadata meta_;
  int32_t sample_vocab_ = 0;  // ids the sampler may pick: [0, min(program, tokenizer))
  std::vector<int32_t> tokens_;
  std::vector<int64_t> chunk_;  // the forward call's tokens
  std::vector<float> logits_;   // a converted (half / bfloat16) last row
};

}  // namespace ember::llm
