// Tokenizers for Ember's LLM runner: text <-> token ids, as Hugging Face's `tokenizers` (a
// tokenizer.json) or `sentencepiece` (a .model) computes them.
//
//   Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load("models/llama3/");  // or a file
//   Result<std::vector<int32_t>> ids = (*tok)->encode("Hello world", /*add_special_tokens=*/true);
//   StreamDecoder stream(**tok, /*skip_special_tokens=*/true);  // then stream.step(id) per id
//
// Supported: the byte-level BPE of Llama 3, Qwen2/2.5, GPT-2 and SmolLM, and the
// SentencePiece-style BPE with byte fallback of Llama 2 and TinyLlama, as tokenizer.json or
// SentencePiece .model. runtime/llm/README.md lists the components; any other component or model
// type is refused at load with an error that names it, never tokenized approximately.
//
// Errors: every fallible call returns a Result; the Error is NotFound (no such file),
// InvalidArgument (a malformed file, text that is not UTF-8, an id out of range), NotSupported (a
// component Ember does not implement), InvalidState (a StreamDecoder step Hugging Face refuses
// too); last_error_message() (runtime/core/error.h) then holds a one-line reason. Nothing throws.
//
// A Tokenizer is immutable after load (its word cache is internally locked): one instance may serve
// several threads. It owns everything it uses; the files may go once load returns.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/core/result.h"

namespace ember::llm {

class Tokenizer {
 public:
  // A tokenizer.json (Hugging Face `tokenizers`), a SentencePiece model, or a directory holding
  // tokenizer.json (preferred) or tokenizer.model. The file's content decides its kind.
  static Result<std::unique_ptr<Tokenizer>> load(const std::string& path);
  // The same from bytes in memory (`name` appears in error messages).
  static Result<std::unique_ptr<Tokenizer>> load_from_bytes(std::string_view bytes,
                                                            const std::string& name);

  virtual ~Tokenizer();

  // Text (UTF-8) -> ids. Special and added tokens written in the text are recognized as
  // `tokenizers`' encode(text, add_special_tokens=False) recognizes them (a SentencePiece model:
  // as sentencepiece's encode, which matches user-defined pieces only). add_special_tokens: also
  // what the post-processor adds (Llama's BOS; a SentencePiece model: its BOS, if it has one).
  virtual Result<std::vector<int32_t>> encode(std::string_view text,
                                              bool add_special_tokens) const = 0;

  // Ids -> text, equal to `tokenizers`' decode(ids, skip_special_tokens) (a SentencePiece model:
  // sentencepiece's decode, control tokens written as their piece unless skipped). Byte sequences
  // that are not UTF-8 come out as U+FFFD, as the reference writes them.
  virtual Result<std::string> decode(std::span<const int32_t> ids,
                                     bool skip_special_tokens) const = 0;

  // The raw bytes token `id` stands for, for byte-wise streaming: the byte-level mapping undone,
  // "▁" as a space, <0xNN> as that byte (so the result may be part of a UTF-8 character). A special
  // token gives "" (decode skips it); a non-special added token its text. No leading-space rule is
  // applied (decode drops the first "▁" of a SentencePiece-style text; StreamDecoder does too).
  virtual Result<std::string> token_bytes(int32_t id) const = 0;

  // One past the largest id, added tokens included (ids are in [0, vocab_size())).
  virtual int32_t vocab_size() const = 0;

  // The id of a token written as in the vocabulary (e.g. "<|endoftext|>", "Ġthe"), or nullopt.
  virtual std::optional<int32_t> token_id(std::string_view token) const = 0;

  // Whether `id` is a special token (skipped by decode with skip_special_tokens).
  virtual bool is_special(int32_t id) const = 0;
};

// Ids in, text out, one id at a time: each step returns the text that the new id completes (maybe
// ""), holding back a token whose text ends in an incomplete UTF-8 sequence until a later one
// completes it. The pieces add up to decode(ids): this is `tokenizers`' DecodeStream (its
// SentencePiece leading-space rule included), plus flush() for what is still held at the end.
//
//   StreamDecoder stream(tokenizer, true);
//   for (int32_t id : generated) { Result<std::string> text = stream.step(id); ... print *text }
//   Result<std::string> rest = stream.flush();
//
// Keeps a reference to `tokenizer`, which must outlive it. Not thread-safe (one per stream).
class StreamDecoder {
 public:
  StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens);

  // The new text. Fails on an id out of range, or (InvalidState, as DecodeStream raises) when the
  // new id changes the text already returned; reset() to go on after an error.
  Result<std::string> step(int32_t id);
  // The text still held back (with U+FFFD for an incomplete sequence); then starts afresh.
  Result<std::string> flush();
  void reset();

 private:
  const Tokenizer& tokenizer_;
  bool skip_special_tokens_;
  std::vector<int32_t> ids_;  // the ids whose text is not all returned, after a context window
  std::string prefix_;        // the text of the window
  size_t prefix_index_ = 0;   // ids_[0, prefix_index_) is the window
};

}  // namespace ember::llm
