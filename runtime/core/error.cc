#include "runtime/core/error.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace ember {
namespace {
thread_local char g_message[1024] = {0};
}  // namespace

const char* to_string(Error error) {
  switch (error) {
    case Error::Ok:
      return "Ok";
    case Error::Internal:
      return "Internal";
    case Error::InvalidState:
      return "InvalidState";
    case Error::EndOfMethod:
      return "EndOfMethod";
    case Error::NotSupported:
      return "NotSupported";
    case Error::NotImplemented:
      return "NotImplemented";
    case Error::InvalidArgument:
      return "InvalidArgument";
    case Error::InvalidType:
      return "InvalidType";
    case Error::OperatorMissing:
      return "OperatorMissing";
    case Error::NotFound:
      return "NotFound";
    case Error::MemoryAllocationFailed:
      return "MemoryAllocationFailed";
    case Error::AccessFailed:
      return "AccessFailed";
    case Error::InvalidProgram:
      return "InvalidProgram";
    case Error::InvalidExternalData:
      return "InvalidExternalData";
    case Error::OutOfResources:
      return "OutOfResources";
    case Error::DelegateInvalidCompatibility:
      return "DelegateInvalidCompatibility";
    case Error::DelegateMemoryAllocationFailed:
      return "DelegateMemoryAllocationFailed";
    case Error::DelegateInvalidHandle:
      return "DelegateInvalidHandle";
  }
  return "UnknownError";
}

const char* last_error_message() { return g_message; }

void clear_error_message() { g_message[0] = '\0'; }

Error fail(Error error, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_message, sizeof(g_message), format, args);
  va_end(args);
  return error;
}

Error add_error_context(Error error, const char* format, ...) {
  char previous[sizeof(g_message)];
  std::memcpy(previous, g_message, sizeof(previous));
  va_list args;
  va_start(args, format);
  const int written = std::vsnprintf(g_message, sizeof(g_message), format, args);
  va_end(args);
  size_t n = written < 0 ? 0 : static_cast<size_t>(written);
  if (previous[0] != '\0' && n + 2 < sizeof(g_message)) {
    g_message[n++] = ':';
    g_message[n++] = ' ';
    for (size_t i = 0; previous[i] != '\0' && n + 1 < sizeof(g_message); ++i) {
      g_message[n++] = previous[i];
    }
    g_message[n] = '\0';
  }
  return error;
}

}  // namespace ember
