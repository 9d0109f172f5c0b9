#include "runtime/llm/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "runtime/llm/unicode.h"

namespace ember::llm {

namespace {

// Oniguruma (Hugging Face's engine) reads \p{Han} as the Script property; PCRE2 (10.40 on) as
// Script_Extensions, which also takes shared characters such as U+3002 "。". Naming the script as
// \p{sc:Han} gives Oniguruma's meaning. General categories (\p{L}, \p{Nd}, \p{L&}) and PCRE2's
// own names (\p{Any}, \p{Xan}, ...) are left as they are.
std::string script_properties_as_scripts(std::string_view pattern) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (size_t i = 0; i < pattern.size(); ++i) {
    out += pattern[i];
    if (pattern[i] != '\\' || i + 1 >= pattern.size()) continue;
    const char kind = pattern[i + 1];
    out += kind;
    ++i;  // the escaped character is consumed with its backslash
    if ((kind != 'p' && kind != 'P') || i + 1 >= pattern.size() || pattern[i + 1] != '{') continue;
    const size_t close = pattern.find('}', i + 2);
    if (close == std::string_view::npos) continue;
    std::string_view name = pattern.substr(i + 2, close - i - 2);
    const bool negated = !name.empty() && name[0] == '^';
    if (negated) name.remove_prefix(1);
    const bool keep = name.size() < 3 || name.find(':') != std::string_view::npos ||
                      name == "Any" || name == "Xan" || name == "Xps" || name == "Xsp" ||
                      name == "Xwd" || name == "Xuc";
    if (keep) continue;
    out += "{";
    if (negated) out += "^";
    out += "sc:";
    out += name;
    out += "}";
    i = close;
  }
  return out;
}

}  // namespace

struct Regex::Code {
  pcre2_code* code = nullptr;
  ~Code() { pcre2_code_free(code); }
};

std::optional<Regex> Regex::compile(std::string_view original, std::string* error) {
  const std::string pattern = script_properties_as_scripts(original);
  int error_code = 0;
  PCRE2_SIZE error_offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &error_code, &error_offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR buffer[256];
    pcre2_get_error_message(error_code, buffer, sizeof(buffer));
    *error = std::string(reinterpret_cast<const char*>(buffer)) + " at offset " +
             std::to_string(error_offset);
    return std::nullopt;
  }
  // The JIT is an optimization only: without it (no JIT on this CPU) matching interprets.
  (void)pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  Regex regex;
  auto holder = std::make_shared<Code>();
  holder->code = code;
  regex.code_ = std::move(holder);
  return regex;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(std::string_view text) const {
  std::vector<std::pair<size_t, size_t>> matches;
  pcre2_match_data* data = pcre2_match_data_create_from_pattern(code_->code, nullptr);
  if (data == nullptr) return matches;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    const int rc =
        pcre2_match(code_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, data, nullptr);
    if (rc < 0) break;  // PCRE2_ERROR_NOMATCH, or a resource limit: no further matches
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(data);
    const size_t begin = ovector[0], end = ovector[1];
    if (end < begin) break;  // \K in a lookahead; no tokenizer pattern does this
    matches.emplace_back(begin, end);
    if (end > begin) {
      start = end;
    } else if (end < text.size()) {
      const size_t n = utf8_sequence_length(text, end);
      start = end + (n == 0 ? 1 : n);
    } else {
      break;
    }
  }
  pcre2_match_data_free(data);
  return matches;
}

std::vector<std::pair<size_t, size_t>> find_all_literal(std::string_view text,
                                                        std::string_view pattern) {
  std::vector<std::pair<size_t, size_t>> matches;
  if (pattern.empty()) return matches;
  for (size_t at = text.find(pattern); at != std::string_view::npos;
       at = text.find(pattern, at + pattern.size())) {
    matches.emplace_back(at, at + pattern.size());
  }
  return matches;
}

}  // namespace ember::llm
