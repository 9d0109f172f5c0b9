// Internal to the Method implementation, shared by method.cc (load and memory), method_values.cc
// (the values table), method_instructions.cc (delegates and instructions) and method_execute.cc
// (inputs, outputs and execute). Not a public header; see method.h for the API.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>

#include "ember/schema/program_generated.h"
#include "runtime/executor/method.h"

namespace ember {
namespace fb = executorch_flatbuffer;

namespace method_internal {

// Per-value facts established at load.
enum ValueFlag : uint8_t {
  kConstant = 1,  // data in the program or a .ptd: read-only, never an out argument
  kPlanned = 2,   // memory-planned or constant: set_input copies into it
  kView = 4,      // the result of an et_view (or moved from one): storage set when that runs
};

// The alignment a tensor's data must have: its element size, 1 to 8 bytes.
inline size_t alignment_for(ScalarType dtype) {
  const size_t e = element_size(dtype);
  return e == 0 ? 1 : (e > 8 ? 8 : e);
}

// Whether `p` has that alignment (a power of two: a mask, not a division).
inline bool is_aligned_for(const void* p, ScalarType dtype) {
  return (reinterpret_cast<uintptr_t>(p) & (alignment_for(dtype) - 1)) == 0;
}

}  // namespace method_internal

struct Method::Instruction {
  enum class Kind : uint8_t { Kernel, Delegate, Move, JumpFalse, Free };
  Kind kind;
  uint32_t num_args;
  EValue** args;
  const Kernel* kernel;
  uint32_t delegate;
  int32_t a;         // move_from, cond_value_index, value_index
  int32_t b;         // move_to, destination_instruction
  bool reads_views;  // an argument is an et_view result, checked to be set before the call
  bool et_view;      // the call is an et_view (its last argument is the result it sets)
};

struct Method::Delegate {
  const Backend* backend = nullptr;
  const char* backend_id = "";  // the program's name for the backend (for observers)
  DelegateHandle* handle = nullptr;
  FreeableBuffer blob;
  MergedNamedDataMap* named_data = nullptr;
  size_t init_bytes = 0;  // taken from the method allocator by init
};

template <typename T>
Result<T*> Method::allocate_unconstructed(size_t count, const char* what) {
  // The block was sized by required_memory(), so running out here means the estimate is wrong.
  size_t bytes = 0;
  T* p = nullptr;
  if (!__builtin_mul_overflow(count, sizeof(T), &bytes)) {
    p = static_cast<T*>(block_.allocate(bytes == 0 ? 1 : bytes, alignof(T)));
  }
  EMBER_CHECK(p != nullptr, Error::Internal,
              "method memory estimate too small allocating %zu %s (%zu of %zu bytes used)", count,
              what, block_.used(), block_.capacity());
  return p;
}

template <typename T>
Result<T*> Method::allocate(size_t count, const char* what) {
  EMBER_ASSIGN_OR_RETURN(T * p, allocate_unconstructed<T>(count, what));
  for (size_t i = 0; i < count; ++i) new (&p[i]) T();
  return p;
}

}  // namespace ember
