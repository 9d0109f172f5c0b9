// Status and StatusOr<T>: the compiler's errors as values, each with a message a user can act on.
//
//   StatusOr<Program> p = parse_program(text);
//   if (!p.ok()) { std::cerr << p.status().message(); return 1; }
//   use(*p);
//
// The compiler is a host tool, so errors carry text (node, op, module path, reason) rather than the
// runtime's compact Error codes. Nothing in the compiler aborts on bad input.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace ember::ir {

class [[nodiscard]] Status {
 public:
  Status() = default;  // success
  static Status error(std::string message) { return Status(std::move(message)); }

  bool ok() const { return !failed_; }
  const std::string& message() const { return message_; }

  // Prefixes the message with context ("file.ep: "), keeping success as is.
  Status with_context(const std::string& context) const {
    return ok() ? *this : Status(context + message_);
  }

 private:
  explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
  bool failed_ = false;
  std::string message_;
};

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : state_(std::move(value)) {}        // NOLINT(google-explicit-constructor)
  StatusOr(Status status) : state_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!std::get<Status>(state_).ok() && "StatusOr needs a value or an error");
  }

  bool ok() const { return std::holds_alternative<T>(state_); }
  Status status() const { return ok() ? Status() : std::get<Status>(state_); }

  T& value() {
    assert(ok());
    return std::get<T>(state_);
  }
  const T& value() const {
    assert(ok());
    return std::get<T>(state_);
  }
  T& operator*() { return value(); }
  const T& operator*() const { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace ember::ir

// Returns the Status of `expr` from the enclosing function when it failed.
#define EMBER_IR_RETURN_IF_ERROR(expr)         \
  do {                                         \
    ::ember::ir::Status ember_ir_s_ = (expr);  \
    if (!ember_ir_s_.ok()) return ember_ir_s_; \
  } while (0)
