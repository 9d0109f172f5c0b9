// The kernel conformance harness: runs an Ember kernel by operator name on tensors that ATen made,
// and compares the result with ATen's own answer.
//
//   KernelCall call("aten::add.out");
//   at::Tensor a = at::randn({2, 3}), b = at::randn({3});
//   at::Tensor expected = at::add(a, b, 2);
//   call.tensor(a).tensor(b).scalar(2).out_like(expected);
//   ASSERT_EQ(call.run(), ember::Error::Ok) << ember::last_error_message();
//   expect_matches(call.out(), expected);
//
// Ember tensors here are views of ATen storage (no copy); outputs are allocated by the harness with
// the shape ATen produced (static), or with a larger capacity (dynamic) to test resizing.
#pragma once

#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/thread_pool.h"
#include "tests/support/heap_count.h"

namespace ember::testing {

inline ScalarType to_ember(at::ScalarType t) {
  switch (t) {
    case at::kByte:
      return ScalarType::Byte;
    case at::kChar:
      return ScalarType::Char;
    case at::kShort:
      return ScalarType::Short;
    case at::kInt:
      return ScalarType::Int;
    case at::kLong:
      return ScalarType::Long;
    case at::kHalf:
      return ScalarType::Half;
    case at::kFloat:
      return ScalarType::Float;
    case at::kDouble:
      return ScalarType::Double;
    case at::kBool:
      return ScalarType::Bool;
    case at::kBFloat16:
      return ScalarType::BFloat16;
    default:
      ADD_FAILURE() << "unsupported ATen dtype " << t;
      return ScalarType::Float;
  }
}

inline at::ScalarType to_aten(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
      return at::kByte;
    case ScalarType::Char:
      return at::kChar;
    case ScalarType::Short:
      return at::kShort;
    case ScalarType::Int:
      return at::kInt;
    case ScalarType::Long:
      return at::kLong;
    case ScalarType::Half:
      return at::kHalf;
    case ScalarType::Float:
      return at::kFloat;
    case ScalarType::Double:
      return at::kDouble;
    case ScalarType::Bool:
      return at::kBool;
    case ScalarType::BFloat16:
      return at::kBFloat16;
    default:
      ADD_FAILURE() << "unsupported Ember dtype";
      return at::kFloat;
  }
}

// The dim order of a dense ATen tensor (strides sorted outermost first, ties in dim order), as
// ExecuTorch derives it.
inline std::vector<uint8_t> dim_order_of(const at::Tensor& t) {
  std::vector<uint8_t> order(static_cast<size_t>(t.dim()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<uint8_t>(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](uint8_t x, uint8_t y) { return t.stride(x) > t.stride(y); });
  return order;
}

// An Ember view of a dense ATen tensor. The ATen tensor must outlive the view.
inline Tensor view_of(const at::Tensor& t, ShapeDynamism dynamism = ShapeDynamism::Static) {
  std::vector<int32_t> sizes(t.sizes().begin(), t.sizes().end());
  Result<Tensor> r =
      Tensor::make(to_ember(t.scalar_type()), sizes, dim_order_of(t), t.data_ptr(), dynamism);
  EXPECT_TRUE(r.ok()) << last_error_message();
  return r.ok() ? *r : Tensor();
}

// An ATen view of an Ember tensor (at its current sizes).
inline at::Tensor aten_view(const Tensor& t) {
  std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
  std::vector<int64_t> strides(t.strides().begin(), t.strides().end());
  return at::from_blob(t.mutable_data(), sizes, strides,
                       at::TensorOptions().dtype(to_aten(t.dtype())));
}

class KernelCall;

// How KernelCall::run() runs a call. Empty (the default): the registered portable kernel, called
// directly. The backend conformance suite (tests/conformance) sets a flow that compiles the call
// into a one-node program and runs it through a backend, so that every sweep case checks each
// backend against ATen with the same comparison. Set it only around a run, on one thread.
using KernelCallFlow = std::function<Error(KernelCall&)>;
inline KernelCallFlow& kernel_call_flow() {
  static KernelCallFlow flow;
  return flow;
}

// Builds the argument list of one kernel call.
class KernelCall {
 public:
  explicit KernelCall(std::string name) : name_(std::move(name)) {
    EXPECT_EQ(register_portable_kernels(), Error::Ok);
  }

  KernelCall& tensor(const at::Tensor& t) {
    keep_.push_back(t);
    return push(EValue::from_tensor(&tensors_.emplace_back(view_of(keep_.back()))));
  }
  KernelCall& none() { return push(EValue()); }
  KernelCall& scalar(int64_t v) { return push(EValue::from_int(v)); }
  KernelCall& scalar(int v) { return push(EValue::from_int(v)); }
  KernelCall& scalar(double v) { return push(EValue::from_double(v)); }
  KernelCall& scalar(bool v) { return push(EValue::from_bool(v)); }
  KernelCall& string(const std::string& s) {
    return push(EValue::from_string(strings_.emplace_back(s)));
  }
  KernelCall& int_list(const std::vector<int64_t>& items) {
    auto& boxes = int_boxes_.emplace_back();
    for (int64_t v : items) boxes.push_back(&values_.emplace_back(EValue::from_int(v)));
    auto& scratch = int_scratch_.emplace_back(items.size());
    return push(EValue::from_int_list({boxes.data(), scratch.data(), items.size()}));
  }
  KernelCall& double_list(const std::vector<double>& items) {
    auto& stored = double_lists_.emplace_back(items);
    return push(EValue::from_double_list(stored));
  }
  KernelCall& bool_list(const std::vector<bool>& items) {
    auto& stored = bool_lists_.emplace_back(items.size());
    for (size_t i = 0; i < items.size(); ++i) stored[i] = items[i];
    return push(
        EValue::from_bool_list({reinterpret_cast<const bool*>(stored.data()), stored.size()}));
  }
  // A TensorList (optional: entries may be undefined ATen tensors, meaning None).
  KernelCall& tensor_list(const std::vector<at::Tensor>& items, bool optional = false) {
    auto& boxes = tensor_boxes_.emplace_back();
    for (const at::Tensor& t : items) {
      if (!t.defined()) {
        boxes.push_back(nullptr);
        continue;
      }
      keep_.push_back(t);
      boxes.push_back(&values_.emplace_back(
          EValue::from_tensor(&tensors_.emplace_back(view_of(keep_.back())))));
    }
    auto& scratch = tensor_scratch_.emplace_back(items.size());
    const BoxedTensorList list{boxes.data(), scratch.data(), items.size()};
    return push(optional ? EValue::from_optional_tensor_list(list)
                         : EValue::from_tensor_list(list));
  }
  // An out tensor shaped and typed like `like` (static), or with capacity for `capacity_like`
  // and dynamic (to test resizing).
  KernelCall& out_like(const at::Tensor& like) {
    return out(like.scalar_type(), like.sizes(), false);
  }
  KernelCall& out(at::ScalarType dtype, at::IntArrayRef sizes, bool dynamic) {
    at::Tensor storage = at::full(sizes, 0, at::TensorOptions().dtype(dtype));
    if (dtype != at::kBool) storage.fill_(-7);  // poison: a kernel must write every element
    outs_.push_back(storage);
    keep_.push_back(storage);
    Tensor* t = &tensors_.emplace_back(
        view_of(storage, dynamic ? ShapeDynamism::DynamicBound : ShapeDynamism::Static));
    out_tensors_.push_back(t);
    return push(EValue::from_tensor(t));
  }
  // A static out tensor with the dtype, shape and memory layout (dim order) of `like`.
  KernelCall& out_like_layout(const at::Tensor& like) {
    at::Tensor storage = at::empty_like(like);
    storage.fill_(like.scalar_type() == at::kBool ? 0 : -7);
    outs_.push_back(storage);
    keep_.push_back(storage);
    Tensor* t = &tensors_.emplace_back(view_of(storage));
    out_tensors_.push_back(t);
    return push(EValue::from_tensor(t));
  }
  // Appends the out tensor once more, as programs do (the out-variant convention).
  KernelCall& repeat_out() { return push(args_.back() == nullptr ? EValue() : *args_.back()); }
  // Appends the last `n` arguments (the out tensors of an op with several outs) once more, as one
  // TensorList of those values (the out-variant convention).
  KernelCall& repeat_outs(size_t n) {
    auto& boxes = tensor_boxes_.emplace_back();
    for (size_t i = args_.size() - n; i < args_.size(); ++i) boxes.push_back(args_[i]);
    auto& scratch = tensor_scratch_.emplace_back(n);
    return push(EValue::from_tensor_list({boxes.data(), scratch.data(), n}));
  }

  // Appends one TensorList of out tensors shaped and typed like `likes` (ops whose out is a list,
  // e.g. split_with_sizes_copy.out); they are out(0), out(1), ... in order.
  KernelCall& out_list(const std::vector<at::Tensor>& likes, bool dynamic = false) {
    auto& boxes = tensor_boxes_.emplace_back();
    for (const at::Tensor& like : likes) {
      out(like.scalar_type(), like.sizes(), dynamic);
      boxes.push_back(args_.back());
      args_.pop_back();
    }
    auto& scratch = tensor_scratch_.emplace_back(likes.size());
    return push(EValue::from_tensor_list({boxes.data(), scratch.data(), likes.size()}));
  }

  Error run() {
    const Kernel* k = find_kernel(name_);
    if (k == nullptr) {
      ADD_FAILURE() << "no kernel registered for " << name_;
      return Error::OperatorMissing;
    }
    if (k->signature != nullptr) {
      EXPECT_EQ(std::strlen(k->signature), args_.size()) << name_ << ": argument count";
      for (size_t i = 0; i < args_.size() && i < std::strlen(k->signature); ++i) {
        EXPECT_TRUE(signature_admits(k->signature[i], *args_[i]))
            << name_ << ": argument " << i << " is a " << to_string(args_[i]->tag());
      }
    }
    if (kernel_call_flow()) return kernel_call_flow()(*this);
    return run_direct();
  }

  // Calls the registered portable kernel, whatever the flow.
  Error run_direct() {
    const Kernel* k = find_kernel(name_);
    if (k == nullptr) return Error::OperatorMissing;
    KernelContext ctx{nullptr, &ThreadPool::global()};
    // Runtime rule 3: a kernel makes no heap allocation (scratch comes from the temp allocator).
    const ember::testing::HeapCount heap;
    const Error e = k->fn(ctx, {args_.data(), args_.size()});
    EXPECT_EQ(heap.count(), 0) << name_ << ": heap allocations inside the kernel (runtime rule 3; "
                               << "EMBER_HEAP_TRACE=1 prints their stacks)";
    return e;
  }

  // The kernel's name ("aten::add.out").
  const std::string& name() const { return name_; }
  // Every argument in kernel order: the inputs, the outs, then the repeated out(s).
  std::span<EValue* const> args() const { return args_; }
  size_t num_outs() const { return out_tensors_.size(); }
  // True when `t` is one of the out tensors.
  bool is_out(const Tensor* t) const {
    return std::find(out_tensors_.begin(), out_tensors_.end(), t) != out_tensors_.end();
  }

  // The i-th out tensor, at the sizes the kernel gave it.
  const Tensor& out(size_t i = 0) const { return *out_tensors_.at(i); }
  Tensor& mutable_out(size_t i) { return *out_tensors_.at(i); }

 private:
  KernelCall& push(EValue v) {
    args_.push_back(&values_.emplace_back(v));
    return *this;
  }
  std::string name_;
  std::deque<EValue> values_;
  std::deque<Tensor> tensors_;
  std::deque<at::Tensor> keep_;
  std::deque<std::string> strings_;
  std::deque<std::vector<EValue*>> int_boxes_, tensor_boxes_;
  std::deque<std::vector<int64_t>> int_scratch_;
  std::deque<std::vector<Tensor*>> tensor_scratch_;
  std::deque<std::vector<double>> double_lists_;
  std::deque<std::vector<uint8_t>> bool_lists_;
  std::vector<at::Tensor> outs_;
  std::vector<Tensor*> out_tensors_;
  std::vector<EValue*> args_;
};

// Tolerances by dtype: exact for integers and bool; otherwise relative to the dtype's precision.
struct Tolerance {
  double rtol;
  double atol;
};
inline Tolerance default_tolerance(at::ScalarType t) {
  switch (t) {
    case at::kHalf:
      return {1e-3, 1e-3};
    case at::kBFloat16:
      return {1e-2, 1e-2};
    case at::kFloat:
      return {1e-5, 1e-6};
    case at::kDouble:
      return {1e-10, 1e-12};
    default:
      return {0, 0};
  }
}

// Expects `actual` to have the dtype, shape and values of `expected` (NaN equal to NaN).
inline void expect_matches(const Tensor& actual, const at::Tensor& expected,
                           std::optional<Tolerance> tolerance = std::nullopt) {
  ASSERT_EQ(to_aten(actual.dtype()), expected.scalar_type()) << "dtype";
  ASSERT_EQ(std::vector<int64_t>(actual.sizes().begin(), actual.sizes().end()),
            expected.sizes().vec())
      << "shape";
  const at::Tensor a = aten_view(actual);
  const Tolerance tol = tolerance.value_or(default_tolerance(expected.scalar_type()));
  if (at::isFloatingType(expected.scalar_type())) {
    const at::Tensor ad = a.to(at::kDouble), ed = expected.to(at::kDouble);
    const bool ok = at::allclose(ad, ed, tol.rtol, tol.atol, /*equal_nan=*/true);
    EXPECT_TRUE(ok) << "values differ; max abs diff "
                    << (ad - ed).abs().nan_to_num(0, 0, 0).max().item<double>() << "\nactual:\n"
                    << a << "\nexpected:\n"
                    << expected;
  } else {
    EXPECT_TRUE(at::equal(a, expected)) << "values differ\nactual:\n"
                                        << a << "\nexpected:\n"
                                        << expected;
  }
}

// Expects a 16-bit float (Half or BFloat16) result of sums of `terms` products to be what float32
// arithmetic rounded once gives. `reference` is ATen run on the operands upcast to float32, rounded
// to the dtype; `magnitude` is the same computation, in float32, on the operands' absolute values
// (so |each term| summed). The reference does not depend on the machine: ATen's own 16-bit kernels
// round differently from CPU to CPU (oneDNN with or without native bf16).
// Each side sums in float32 in its own order, so the unrounded values differ by at most
// 2 * terms * 2^-24 * magnitude (a float32 sum of n terms errs by at most (n - 1) ulps of the sum
// of magnitudes, taken twice and doubled again for the products). Two values that close round to
// the same or adjacent 16-bit values: one ulp of the dtype at the larger of them (2^-7 relative for
// bfloat16, 2^-10 for half, and half's subnormal step 2^-24). A kernel that rounded partial sums to
// 16 bits would err by about sqrt(terms) ulps and fail.
inline void expect_rounded_once(const Tensor& actual, const at::Tensor& reference,
                                const at::Tensor& magnitude, int64_t terms) {
  const at::ScalarType t = reference.scalar_type();
  ASSERT_TRUE(t == at::kHalf || t == at::kBFloat16) << "16-bit floats only";
  ASSERT_EQ(to_aten(actual.dtype()), t) << "dtype";
  ASSERT_EQ(std::vector<int64_t>(actual.sizes().begin(), actual.sizes().end()),
            reference.sizes().vec())
      << "shape";
  if (reference.numel() == 0) return;
  const at::Tensor a = aten_view(actual).to(at::kDouble), r = reference.to(at::kDouble);
  const double ulp = t == at::kBFloat16 ? 0x1p-7 : 0x1p-10;
  const double floor = t == at::kBFloat16 ? 0.0 : 0x1p-24;
  const at::Tensor sum_error =
      magnitude.to(at::kDouble) * (2.0 * static_cast<double>(terms) * 0x1p-24);
  const at::Tensor bound = (r.abs() + sum_error) * ulp + floor + sum_error;
  const at::Tensor over = ((a - r).abs() - bound).nan_to_num(0, 0, 0);
  const bool nan_agree = at::equal(a.isnan(), r.isnan());
  EXPECT_TRUE(nan_agree && over.max().item<double>() <= 0)
      << "values differ by more than float32 rounded once allows; worst excess "
      << over.max().item<double>() << " (max abs diff "
      << (a - r).abs().nan_to_num(0, 0, 0).max().item<double>() << ")\nactual:\n"
      << a << "\nreference:\n"
      << r;
}

}  // namespace ember::testing
