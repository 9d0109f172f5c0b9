// UTF-8 and Unicode helpers of the tokenizers (internal to runtime/llm).
//
//   if (auto bad = first_invalid_utf8(text)) return fail(..., "byte %zu", *bad);
//   std::string shown = utf8_lossy(bytes);   // what Rust's String::from_utf8_lossy returns
//
// Strings are UTF-8 bytes in std::string / std::string_view; code points are char32_t.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ember::llm {

// The offset of the first byte that does not start a well-formed UTF-8 sequence, or nullopt.
std::optional<size_t> first_invalid_utf8(std::string_view s);

// The length of the well-formed sequence starting at s[i] (1 to 4); 0 when ill-formed or cut.
size_t utf8_sequence_length(std::string_view s, size_t i);

// Decodes the code point at s[i] of a valid UTF-8 string and advances i past it.
char32_t next_code_point(std::string_view s, size_t& i);

void append_utf8(std::string& out, char32_t cp);

// `bytes` with each maximal ill-formed subsequence replaced by U+FFFD (the Unicode standard's
// "maximal subpart" practice, which Rust's from_utf8_lossy follows).
std::string utf8_lossy(std::string_view bytes);

// Unicode White_Space (Rust's char::is_whitespace).
bool is_white_space(char32_t cp);

// Letters and numbers (Rust's char::is_alphanumeric, by general category).
bool is_alphanumeric(char32_t cp);

enum class NormalForm { NFC, NFD, NFKC, NFKD };
// `s` (valid UTF-8) in the normal form; nullopt if utf8proc fails (out of memory).
std::optional<std::string> normalize_unicode(std::string_view s, NormalForm form);

// GPT-2's byte-level alphabet: each byte stands for one printable code point (bytes that are
// printable stand for themselves, the others for U+0100 and on, in byte order).
const std::array<char32_t, 256>& byte_level_chars();
// The byte a byte-level code point stands for, or -1.
int byte_level_byte(char32_t cp);

}  // namespace ember::llm
