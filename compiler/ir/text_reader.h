// The lexical layer of the IR's text parser (parser.cc), internal to compiler/ir: a cursor over
// the text that skips spaces and `#` comments, reads names, integers and string literals, and
// turns an error at a position into "line L, column C: message".
//
//   class Parser : public internal::TextReader { ... expect("("); ident("an op"); ... };
//   try { ... } catch (const ParseError& e) { return parser.status_of(e); }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "compiler/ir/status.h"

namespace ember::ir::internal {

// Thrown inside the parser only (parser.cc, text_reader.cc); parse_program turns it into a Status.
struct ParseError {
  size_t position;
  std::string message;
};

bool is_ident_start(char c);
bool is_ident_char(char c);
// The value of a hexadecimal digit, or -1.
int hex_digit(char c);

class TextReader {
 public:
  // `text` must outlive the reader.
  explicit TextReader(std::string_view text) : text_(text) {}

  Status status_of(const ParseError& e) const;

 protected:
  [[noreturn]] void fail(size_t at, std::string message) const;

  void skip_space();
  bool at_end();
  bool peek(std::string_view s);
  bool consume(std::string_view s);
  void expect(std::string_view s);
  // ", found '<the next few characters>'", for messages.
  std::string found();
  std::string ident(const char* what);
  // A keyword that must follow, e.g. "in".
  void keyword(std::string_view word);
  bool peek_keyword(std::string_view word);
  std::string value_name();
  int64_t integer();
  std::string string_literal();

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace ember::ir::internal
