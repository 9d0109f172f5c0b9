// Error codes and the per-thread error message of the Ember runtime.
//
//   Result<Program> program = Program::load(&loader);
//   if (!program.ok()) std::fprintf(stderr, "%s: %s\n", to_string(program.error()),
//                                   last_error_message());
//
// The runtime never throws and never aborts on anything that comes from a file or a caller: every
// fallible call returns an Error or a Result<T>. The numeric codes are ExecuTorch's, so logs and
// bindings read the same on both runtimes. A failing call also leaves a one-line, human-readable
// message in a thread-local buffer (no heap allocation) that says what was wrong, naming the value.
#pragma once

#include <cstdint>

namespace ember {

enum class [[nodiscard]] Error : uint32_t{
    Ok = 0x00,
    Internal = 0x01,
    InvalidState = 0x02,
    EndOfMethod = 0x03,
    // Logical errors.
    NotSupported = 0x10,
    NotImplemented = 0x11,
    InvalidArgument = 0x12,
    InvalidType = 0x13,
    OperatorMissing = 0x14,
    // Resource errors.
    NotFound = 0x20,
    MemoryAllocationFailed = 0x21,
    AccessFailed = 0x22,
    InvalidProgram = 0x23,
    InvalidExternalData = 0x24,
    OutOfResources = 0x25,
    // Delegate errors.
    DelegateInvalidCompatibility = 0x30,
    DelegateMemoryAllocationFailed = 0x31,
    DelegateInvalidHandle = 0x32,
};

// The enumerator's name, e.g. "InvalidArgument". Never null.
const char* to_string(Error error);

// The message the last failing runtime call on this thread left. Empty when none did. The pointer
// stays valid until the next failing call on the same thread.
const char* last_error_message();

// Clears this thread's message.
void clear_error_message();

// Formats a message into this thread's buffer (truncated at 1 KiB) and returns `error`, so that
// callers can write `return fail(Error::InvalidProgram, "value %d ...", i);`.
[[gnu::format(printf, 2, 3)]] Error fail(Error error, const char* format, ...);

}  // namespace ember

// Returns from the enclosing function with the error of `expr` when it is not Ok.
#define EMBER_TRY(expr)                             \
  do {                                              \
    const ::ember::Error ember_try_error_ = (expr); \
    if (ember_try_error_ != ::ember::Error::Ok) {   \
      return ember_try_error_;                      \
    }                                               \
  } while (0)

// Returns `fail(error, ...)` from the enclosing function when `cond` is false.
#define EMBER_CHECK(cond, error, ...)             \
  do {                                            \
    if (!(cond)) {                                \
      return ::ember::fail((error), __VA_ARGS__); \
    }                                             \
  } while (0)

namespace ember {
// Prepends context to this thread's message ("<context>: <previous message>") and returns `error`.
[[gnu::format(printf, 2, 3)]] Error add_error_context(Error error, const char* format, ...);
}  // namespace ember
