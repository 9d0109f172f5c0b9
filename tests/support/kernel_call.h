// Calling one registered kernel from a gtest: values built in place, the signature checked as a
// method checks it at load, the kernel called by its registered name with the out-variant
// convention (the schema's arguments, then the out twice). The kernel libraries' own tests
// (cortex_m, llm) derive their harness from it; the caller registers the kernels it calls.
//
//   KernelCall c;
//   std::vector<float> x = {1, 2}, y(2);
//   EXPECT_EQ(c.run("llama::update_cache.out", {c.tensor(ScalarType::Float, {2}, x), ...},
//                   c.tensor(ScalarType::Float, {2}, y)), Error::Ok);
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <span>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/platform/thread_pool.h"

namespace ember::testing {

class KernelCall {
 public:
  // A tensor over `data` (kept alive by the caller), with `order` as its dim order (empty:
  // contiguous).
  EValue* tensor(ScalarType type, std::vector<int32_t> sizes, void* data,
                 std::span<const uint8_t> order = {}) {
    Result<Tensor> t = Tensor::make(type, sizes, order, data);
    EXPECT_TRUE(t.ok()) << last_error_message();
    tensors_.push_back(*t);
    return push(EValue::from_tensor(&tensors_.back()));
  }
  template <typename T>
  EValue* tensor(ScalarType type, std::vector<int32_t> sizes, std::vector<T>& data,
                 std::span<const uint8_t> order = {}) {
    return tensor(type, std::move(sizes), static_cast<void*>(data.data()), order);
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

  // Runs kernel `name` on `args` followed by `out` twice.
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
};

}  // namespace ember::testing
