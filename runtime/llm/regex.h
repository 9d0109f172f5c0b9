// A compiled PCRE2 pattern in UTF + UCP mode (\p{L}, \s and (?i) by Unicode), the regex engine of
// the tokenizers' Split pre-tokenizer and Replace normalizer and decoder.
//
//   std::string error;
//   std::optional<Regex> re = Regex::compile(R"(\p{L}+|\s+(?!\S))", &error);
//   for (auto [begin, end] : re->find_all(text)) ...
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ember::llm {

class Regex {
 public:
  // nullopt with PCRE2's message (and the offset) in *error when the pattern does not compile.
  static std::optional<Regex> compile(std::string_view pattern, std::string* error);

  // The non-overlapping matches of a valid UTF-8 string, left to right, as byte ranges; after an
  // empty match the search resumes one code point further (what Oniguruma, the engine of Hugging
  // Face's tokenizers, does).
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;

 private:
  struct Code;
  std::shared_ptr<const Code> code_;
};

// A literal pattern's non-overlapping occurrences, left to right (an empty pattern: none).
std::vector<std::pair<size_t, size_t>> find_all_literal(std::string_view text,
                                                        std::string_view pattern);

}  // namespace ember::llm
