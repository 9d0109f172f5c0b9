// A small harness for calling one registered kernel from a gtest: values built in place, the
// signature checked as a method checks it at load, the kernel called by its registered name.
//
//   Call c;
//   std::vector<int8_t> x = {1, 2}, y(2);
//   EXPECT_EQ(c.run("cortex_m::quantized_activation.out",
//                   {c.tensor(ScalarType::Char, {2}, x), c.tensor(...lut...), c.out(...)}),
//                   Error::Ok);
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <vector>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/cortex_m.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/thread_pool.h"

namespace ember::cortex_m_test {

inline constexpr uint8_t kNhwc[] = {0, 2, 3, 1};

class Call {
 public:
  Call() {
    EXPECT_EQ(register_portable_kernels(), Error::Ok);
    EXPECT_EQ(register_cortex_m_kernels(), Error::Ok);
  }

  // A tensor over `data` (kept alive by the caller), with `order` as its dim order (empty:
  // contiguous).
  template <typename T>
  EValue* tensor(ScalarType type, std::vector<int32_t> sizes, std::vector<T>& data,
                 std::span<const uint8_t> order = {}) {
    Result<Tensor> t = Tensor::make(type, sizes, order, data.data());
    EXPECT_TRUE(t.ok()) << last_error_message();
    tensors_.push_back(*t);
    return push(EValue::from_tensor(&tensors_.back()));
  }
  EValue* i(int64_t v) { return push(EValue::from_int(v)); }
  EValue* d(double v) { return push(EValue::from_double(v)); }
  EValue* b(bool v) { return push(EValue::from_bool(v)); }
  EValue* none() { return push(EValue()); }
  EValue* list(std::vector<int64_t> v) {
    auto& boxes = boxes_.emplace_back();
    for (int64_t x : v) boxes.push_back(i(x));
    auto& scratch = scratch_.emplace_back(v.size());
    return push(EValue::from_int_list({boxes.data(), scratch.data(), v.size()}));
  }
  // An empty uint8 scratch tensor, as exports for DSP targets write it.
  EValue* scratch() { return tensor(ScalarType::Byte, {0}, empty_); }

  // Runs kernel `name` on `args` followed by `out` twice (the out-variant convention).
  Error run(const char* name, std::vector<EValue*> args, EValue* out) {
    args.push_back(out);
    args.push_back(out);
    const Kernel* k = find_kernel(name);
    EXPECT_NE(k, nullptr) << name;
    if (k == nullptr) return Error::OperatorMissing;
    EXPECT_EQ(std::strlen(k->signature), args.size()) << name;
    for (size_t j = 0; j < args.size() && j < std::strlen(k->signature); ++j) {
      EXPECT_TRUE(signature_admits(k->signature[j], *args[j])) << name << " argument " << j;
    }
    KernelContext ctx{nullptr, &ThreadPool::global()};
    return k->fn(ctx, {args.data(), args.size()});
  }

 private:
  EValue* push(EValue v) { return &values_.emplace_back(v); }
  std::deque<EValue> values_;
  std::deque<Tensor> tensors_;
  std::deque<std::vector<EValue*>> boxes_;
  std::deque<std::vector<int64_t>> scratch_;
  std::vector<uint8_t> empty_;
};

// Expects `e` to be InvalidArgument with `fragment` in the message.
inline void expect_invalid(Error e, const char* fragment) {
  EXPECT_EQ(e, Error::InvalidArgument);
  EXPECT_NE(std::strstr(last_error_message(), fragment), nullptr)
      << "message: " << last_error_message() << "\nexpected to contain: " << fragment;
}

}  // namespace ember::cortex_m_test
