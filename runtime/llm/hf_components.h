// The pipeline stages of a tokenizer.json (internal to runtime/llm): normalizers, pre-tokenizers,
// decoders and post-processors, each parsed from its JSON object and applied as Hugging Face's
// tokenizers applies it. A component Ember does not implement is refused at load (LoadError with
// `unsupported`), never skipped.
//
//   std::unique_ptr<Normalizer> n = parse_normalizer(doc["normalizer"], "normalizer");
//   n->normalize(text);
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "runtime/llm/json_util.h"
#include "runtime/llm/regex.h"

namespace ember::llm {

// A piece of text on its way to the model. `at_origin`: it starts at offset 0 of the text the
// caller passed (Metaspace's prepend_scheme "first" prepends only there).
struct Piece {
  std::string text;
  bool at_origin = false;
};

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // Rewrites `s` (valid UTF-8) in place; false only when out of memory.
  virtual bool normalize(std::string& s) const = 0;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Splits (and may rewrite) each piece; empty pieces are dropped.
  virtual void pre_tokenize(std::vector<Piece>& pieces) const = 0;
};

// Text: Hugging Face's decode. TokenBytes: the bytes one token stands for, for streaming: no U+FFFD
// replacement of partial characters and no rule for the first token of a text (Metaspace's and a
// Strip after Fuse drop the leading space of the whole text only).
enum class DecodeMode { Text, TokenBytes };
struct DecodeState {
  DecodeMode mode = DecodeMode::Text;
  bool fused = false;  // a Fuse ran: the tokens are the whole text
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const = 0;
};

class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  // What add_special_tokens=True adds around one sequence (BOS, CLS/SEP, ...).
  virtual void add_special_tokens(std::vector<int32_t>& ids) const = 0;
};

// The pattern of Split and Replace: {"String": literal} or {"Regex": PCRE-compatible pattern}.
struct Pattern {
  std::string literal;
  std::optional<Regex> regex;
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
};
Pattern parse_pattern(const json& j, const std::string& where);
// `s` with each match of `pattern` replaced by `content` (regex patterns need valid UTF-8).
std::string replace_all(std::string_view s, const Pattern& pattern, std::string_view content);

// Each parser takes a component's JSON object (not null) and the path to name in errors.
std::unique_ptr<Normalizer> parse_normalizer(const json& j, const std::string& where);
std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, const std::string& where);
std::unique_ptr<Decoder> parse_decoder(const json& j, const std::string& where);
std::unique_ptr<PostProcessor> parse_post_processor(const json& j, const std::string& where);

}  // namespace ember::llm
