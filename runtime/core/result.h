// Result<T>: a value or an Error, never both.
//
//   Result<int64_t> n = checked_numel(sizes);
//   if (!n.ok()) return n.error();
//   use(*n);
//
// Accessing the value of a failed Result is a programming error (checked in debug builds).
#pragma once

#include <cassert>
#include <new>
#include <type_traits>
#include <utility>

#include "runtime/core/error.h"

namespace ember {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T&& value) : error_(Error::Ok) { new (&value_) T(std::move(value)); }   // NOLINT
  Result(const T& value) : error_(Error::Ok) { new (&value_) T(value); }         // NOLINT
  Result(Error error) : error_(error == Error::Ok ? Error::Internal : error) {}  // NOLINT

  Result(Result&& other) noexcept : error_(other.error_) {
    if (ok()) new (&value_) T(std::move(other.value_));
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&& other) noexcept {
    if (this != &other) {
      if (ok()) value_.~T();
      error_ = other.error_;
      if (ok()) new (&value_) T(std::move(other.value_));
    }
    return *this;
  }
  ~Result() {
    if (ok()) value_.~T();
  }

  bool ok() const { return error_ == Error::Ok; }
  Error error() const { return error_; }

  T& get() {
    assert(ok());
    return value_;
  }
  const T& get() const {
    assert(ok());
    return value_;
  }
  T& operator*() { return get(); }
  const T& operator*() const { return get(); }
  T* operator->() { return &get(); }
  const T* operator->() const { return &get(); }

 private:
  Error error_;
  union {
    T value_;
  };
};

}  // namespace ember

// Evaluates a Result expression; on failure returns its error, else assigns the value to `lhs`.
#define EMBER_ASSIGN_OR_RETURN(lhs, expr)             \
  auto EMBER_CONCAT_(ember_r_, __LINE__) = (expr);    \
  if (!EMBER_CONCAT_(ember_r_, __LINE__).ok()) {      \
    return EMBER_CONCAT_(ember_r_, __LINE__).error(); \
  }                                                   \
  lhs = std::move(*EMBER_CONCAT_(ember_r_, __LINE__))
#define EMBER_CONCAT_INNER_(a, b) a##b
#define EMBER_CONCAT_(a, b) EMBER_CONCAT_INNER_(a, b)
