#include "compiler/ir/text_reader.h"

#include <cctype>
#include <charconv>
#include <string>
#include <utility>

namespace ember::ir::internal {

bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

Status TextReader::status_of(const ParseError& e) const {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < e.position && i < text_.size(); ++i) {
    if (text_[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return Status::error("line " + std::to_string(line) + ", column " + std::to_string(column) +
                       ": " + e.message);
}

void TextReader::fail(size_t at, std::string message) const {
  throw ParseError{at, std::move(message)};
}

void TextReader::skip_space() {
  while (pos_ < text_.size()) {
    char c = text_[pos_];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      ++pos_;
    } else if (c == '#') {
      while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
    } else {
      break;
    }
  }
}

bool TextReader::at_end() {
  skip_space();
  return pos_ >= text_.size();
}

bool TextReader::peek(std::string_view s) {
  skip_space();
  return text_.substr(pos_, s.size()) == s;
}

bool TextReader::consume(std::string_view s) {
  if (!peek(s)) return false;
  pos_ += s.size();
  return true;
}

void TextReader::expect(std::string_view s) {
  if (!consume(s)) fail(pos_, "expected '" + std::string(s) + "'" + found());
}

std::string TextReader::found() {
  if (pos_ >= text_.size()) return ", found the end of the text";
  size_t end = pos_;
  while (end < text_.size() && end - pos_ < 12 && text_[end] != '\n') ++end;
  return ", found '" + std::string(text_.substr(pos_, end - pos_)) + "'";
}

std::string TextReader::ident(const char* what) {
  skip_space();
  if (pos_ >= text_.size() || !is_ident_start(text_[pos_]))
    fail(pos_, std::string("expected ") + what + found());
  size_t start = pos_;
  while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
  return std::string(text_.substr(start, pos_ - start));
}

void TextReader::keyword(std::string_view word) {
  size_t at = (skip_space(), pos_);
  std::string what = "'";
  what.append(word).append("'");
  if (ident(what.c_str()) != word) {
    fail(at, "expected '" + std::string(word) + "'");
  }
}

bool TextReader::peek_keyword(std::string_view word) {
  skip_space();
  if (text_.substr(pos_, word.size()) != word) return false;
  size_t end = pos_ + word.size();
  return end >= text_.size() || !is_ident_char(text_[end]);
}

std::string TextReader::value_name() {
  expect("%");
  size_t start = pos_;
  while (pos_ < text_.size() && (is_ident_char(text_[pos_]) || text_[pos_] == '.')) ++pos_;
  if (pos_ == start) fail(pos_, "expected a value name after '%'");
  return std::string(text_.substr(start, pos_ - start));
}

int64_t TextReader::integer() {
  skip_space();
  size_t start = pos_;
  if (pos_ < text_.size() && text_[pos_] == '-') ++pos_;
  while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text_.data() + start, text_.data() + pos_, v);
  if (ec != std::errc() || end != text_.data() + pos_ || pos_ == start) {
    fail(start, "expected an integer" + (pos_ = start, found()));
  }
  return v;
}

std::string TextReader::string_literal() {
  skip_space();
  if (pos_ >= text_.size() || text_[pos_] != '"') fail(pos_, "expected a string" + found());
  size_t start = pos_++;
  std::string s;
  while (true) {
    if (pos_ >= text_.size() || text_[pos_] == '\n') fail(start, "unterminated string");
    char c = text_[pos_++];
    if (c == '"') break;
    if (c != '\\') {
      s += c;
      continue;
    }
    if (pos_ >= text_.size()) fail(start, "unterminated string");
    char e = text_[pos_++];
    if (e == 'n') {
      s += '\n';
    } else if (e == 't') {
      s += '\t';
    } else if (e == '"' || e == '\\') {
      s += e;
    } else if (e == 'x' && pos_ + 1 < text_.size() && hex_digit(text_[pos_]) >= 0 &&
               hex_digit(text_[pos_ + 1]) >= 0) {
      s += static_cast<char>(hex_digit(text_[pos_]) * 16 + hex_digit(text_[pos_ + 1]));
      pos_ += 2;
    } else {
      fail(pos_ - 2, std::string("unknown escape '\\") + e + "'");
    }
  }
  return s;
}

}  // namespace ember::ir::internal
