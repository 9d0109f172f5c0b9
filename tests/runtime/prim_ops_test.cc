// The runtime's prim ops (runtime/kernels/prim/prim_ops.h), called through the kernel registry as
// a method calls them. Expected values are Python's (the semantics PyTorch's symbolic ints follow),
// each written next to the Python expression that gives it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/kernels/prim/prim_ops.h"

namespace ember::testing {
namespace {

// Calls `name` with `args`, the last of which is the result value; returns the error.
Error call(const char* name, std::vector<EValue>& args) {
  const Kernel* k = find_kernel(name);
  if (k == nullptr) return Error::NotFound;
  std::vector<EValue*> ptrs;
  for (EValue& v : args) ptrs.push_back(&v);
  if (k->signature != nullptr) {
    EXPECT_EQ(std::strlen(k->signature), ptrs.size()) << name;
    for (size_t i = 0; i < ptrs.size(); ++i) {
      EXPECT_TRUE(signature_admits(k->signature[i], *ptrs[i])) << name << " argument " << i;
    }
  }
  KernelContext ctx;
  return k->fn(ctx, ptrs);
}

EValue I(int64_t v) { return EValue::from_int(v); }
EValue D(double v) { return EValue::from_double(v); }
EValue B(bool v) { return EValue::from_bool(v); }

int64_t int_result(const char* name, EValue a, EValue b) {
  std::vector<EValue> args{a, b, I(0)};
  EXPECT_EQ(call(name, args), Error::Ok) << name;
  EXPECT_TRUE(args[2].is_int()) << name;
  return args[2].is_int() ? args[2].to_int() : -999;
}
double double_result(const char* name, std::vector<EValue> args) {
  EXPECT_EQ(call(name, args), Error::Ok) << name;
  EXPECT_TRUE(args.back().is_double()) << name;
  return args.back().is_double() ? args.back().to_double() : -999;
}
bool bool_result(const char* name, EValue a, EValue b) {
  std::vector<EValue> args{a, b, B(false)};
  EXPECT_EQ(call(name, args), Error::Ok) << name;
  EXPECT_TRUE(args[2].is_bool()) << name;
  return args[2].is_bool() && args[2].to_bool();
}

class PrimOps : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_EQ(register_portable_kernels(), Error::Ok); }
};

TEST_F(PrimOps, EveryNameOfThePteFormatIsRegistered) {
  // docs/pte-format.md §4.8, "Prim ops registered by the runtime" (et_copy_index is not
  // implemented yet).
  for (const char* name : {"aten::sym_size.int",
                           "aten::sym_numel",
                           "aten::_local_scalar_dense",
                           "executorch_prim::add.Scalar",
                           "executorch_prim::sub.Scalar",
                           "executorch_prim::mul.Scalar",
                           "executorch_prim::floordiv.Scalar",
                           "executorch_prim::truediv.Scalar",
                           "executorch_prim::mod.Scalar",
                           "executorch_prim::eq.Scalar",
                           "executorch_prim::gt.Scalar",
                           "executorch_prim::lt.Scalar",
                           "executorch_prim::ge.Scalar",
                           "executorch_prim::le.Scalar",
                           "executorch_prim::neg.Scalar",
                           "executorch_prim::ceil.Scalar",
                           "executorch_prim::round.Scalar",
                           "executorch_prim::trunc.Scalar",
                           "executorch_prim::sym_float.Scalar",
                           "executorch_prim::sym_int.Scalar",
                           "executorch_prim::sym_max.Scalar",
                           "executorch_prim::sym_min.Scalar",
                           "executorch_prim::sym_not.Scalar",
                           "executorch_prim::sym_ite.Scalar",
                           "executorch_prim::floordiv.int",
                           "executorch_prim::mod.int",
                           "executorch_prim::et_view.default"}) {
    EXPECT_NE(find_kernel(name), nullptr) << name;
  }
  EXPECT_EQ(prim_kernels().size(), 27u);
}

TEST_F(PrimOps, IntArithmeticFollowsPython) {
  EXPECT_EQ(int_result("executorch_prim::add.Scalar", I(7), I(-9)), -2);       // 7 + -9
  EXPECT_EQ(int_result("executorch_prim::sub.Scalar", I(7), I(9)), -2);        // 7 - 9
  EXPECT_EQ(int_result("executorch_prim::mul.Scalar", I(-3), I(5)), -15);      // -3 * 5
  EXPECT_EQ(int_result("executorch_prim::floordiv.Scalar", I(-7), I(2)), -4);  // -7 // 2
  EXPECT_EQ(int_result("executorch_prim::floordiv.Scalar", I(7), I(-2)), -4);  // 7 // -2
  EXPECT_EQ(int_result("executorch_prim::floordiv.int", I(-8), I(2)), -4);     // -8 // 2
  EXPECT_EQ(int_result("executorch_prim::mod.Scalar", I(-7), I(3)), 2);        // -7 % 3
  EXPECT_EQ(int_result("executorch_prim::mod.int", I(7), I(-3)), -2);          // 7 % -3
  EXPECT_EQ(int_result("executorch_prim::sym_max.Scalar", I(4), I(9)), 9);     // max(4, 9)
  EXPECT_EQ(int_result("executorch_prim::sym_min.Scalar", I(4), I(9)), 4);     // min(4, 9)
  EXPECT_EQ(int_result("executorch_prim::add.Scalar", B(true), I(2)), 3);      // True + 2
}

TEST_F(PrimOps, FloatArithmeticFollowsPython) {
  EXPECT_DOUBLE_EQ(double_result("executorch_prim::truediv.Scalar", {I(7), I(2), D(0)}), 3.5);
  EXPECT_DOUBLE_EQ(double_result("executorch_prim::add.Scalar", {I(1), D(0.5), D(0)}), 1.5);
  // -7.5 // 2 == -4.0 and -7.5 % 2 == 0.5
  EXPECT_DOUBLE_EQ(double_result("executorch_prim::floordiv.Scalar", {D(-7.5), I(2), D(0)}), -4.0);
  EXPECT_DOUBLE_EQ(double_result("executorch_prim::mod.Scalar", {D(-7.5), I(2), D(0)}), 0.5);
  EXPECT_DOUBLE_EQ(double_result("executorch_prim::sym_float.Scalar", {I(3), D(0)}), 3.0);
  EXPECT_DOUBLE_EQ(double_result("executorch_prim::neg.Scalar", {D(2.5), D(0)}), -2.5);
}

TEST_F(PrimOps, ComparisonsAndConversions) {
  EXPECT_TRUE(bool_result("executorch_prim::gt.Scalar", I(6), I(5)));    // 6 > 5
  EXPECT_FALSE(bool_result("executorch_prim::lt.Scalar", I(6), I(5)));   // 6 < 5
  EXPECT_TRUE(bool_result("executorch_prim::ge.Scalar", I(5), D(5.0)));  // 5 >= 5.0
  EXPECT_TRUE(bool_result("executorch_prim::le.Scalar", D(4.5), I(5)));  // 4.5 <= 5
  EXPECT_TRUE(bool_result("executorch_prim::eq.Scalar", I(3), D(3.0)));  // 3 == 3.0
  // round() rounds half to even: round(2.5) == 2, round(-0.5) == 0, round(3.5) == 4
  for (auto [in, out] : {std::pair{2.5, 2}, {-0.5, 0}, {3.5, 4}}) {
    std::vector<EValue> args{D(in), I(0)};
    ASSERT_EQ(call("executorch_prim::round.Scalar", args), Error::Ok);
    EXPECT_EQ(args[1].to_int(), out) << in;
  }
  std::vector<EValue> args{D(-2.5), I(0)};
  ASSERT_EQ(call("executorch_prim::ceil.Scalar", args), Error::Ok);  // math.ceil(-2.5) == -2
  EXPECT_EQ(args[1].to_int(), -2);
  args = {D(-2.7), I(0)};
  ASSERT_EQ(call("executorch_prim::sym_int.Scalar", args), Error::Ok);  // int(-2.7) == -2
  EXPECT_EQ(args[1].to_int(), -2);
  args = {B(true), I(0)};
  ASSERT_EQ(call("executorch_prim::sym_not.Scalar", args), Error::Ok);  // not True
  EXPECT_EQ(args[1].to_int(), 0);
  args = {B(true), I(6), I(4), I(0)};
  ASSERT_EQ(call("executorch_prim::sym_ite.Scalar", args), Error::Ok);  // sym_ite(True, 6, 4)
  EXPECT_EQ(args[3].to_int(), 6);
  args = {B(false), I(6), I(4), I(0)};
  ASSERT_EQ(call("executorch_prim::sym_ite.Scalar", args), Error::Ok);
  EXPECT_EQ(args[3].to_int(), 4);
}

TEST_F(PrimOps, SizesOfTensors) {
  float data[6] = {};
  int32_t sizes[] = {2, 3};
  uint8_t order[] = {0, 1};
  Result<Tensor> t = Tensor::make(ScalarType::Float, sizes, order, data);
  ASSERT_TRUE(t.ok());
  Tensor tensor = *t;
  std::vector<EValue> args{EValue::from_tensor(&tensor), I(-1), I(0)};
  ASSERT_EQ(call("aten::sym_size.int", args), Error::Ok);  // torch.empty(2, 3).size(-1) == 3
  EXPECT_EQ(args[2].to_int(), 3);
  args = {EValue::from_tensor(&tensor), I(2), I(0)};
  EXPECT_EQ(call("aten::sym_size.int", args), Error::InvalidArgument);  // IndexError in PyTorch
  args = {EValue::from_tensor(&tensor), I(0)};
  ASSERT_EQ(call("aten::sym_numel", args), Error::Ok);
  EXPECT_EQ(args[1].to_int(), 6);
  args = {EValue::from_tensor(&tensor), D(0)};
  EXPECT_EQ(call("aten::_local_scalar_dense", args), Error::InvalidArgument);  // 6 elements
  int64_t one = 42;
  int32_t one_size[] = {1};
  uint8_t one_order[] = {0};
  Result<Tensor> s = Tensor::make(ScalarType::Long, one_size, one_order, &one);
  ASSERT_TRUE(s.ok());
  Tensor scalar = *s;
  args = {EValue::from_tensor(&scalar), I(0)};
  ASSERT_EQ(call("aten::_local_scalar_dense", args), Error::Ok);  // torch.tensor([42]).item()
  EXPECT_EQ(args[1].to_int(), 42);
}

// Inputs a file can hold must give errors, never undefined behaviour (UBSan in the asan build).
TEST_F(PrimOps, BadOperandsAreErrors) {
  const int64_t min = std::numeric_limits<int64_t>::min();
  const int64_t max = std::numeric_limits<int64_t>::max();
  for (const char* name : {"executorch_prim::floordiv.Scalar", "executorch_prim::mod.Scalar",
                           "executorch_prim::truediv.Scalar", "executorch_prim::floordiv.int",
                           "executorch_prim::mod.int"}) {
    std::vector<EValue> args{I(3), I(0), I(0)};
    if (std::string(name).find("truediv") != std::string::npos) args[2] = D(0);
    EXPECT_EQ(call(name, args), Error::InvalidArgument) << name << " by zero";
  }
  std::vector<EValue> args{I(max), I(1), I(0)};
  EXPECT_EQ(call("executorch_prim::add.Scalar", args), Error::InvalidArgument);
  args = {I(min), I(-1), I(0)};
  EXPECT_EQ(call("executorch_prim::floordiv.Scalar", args), Error::InvalidArgument);
  args = {I(min), I(-1), I(0)};
  ASSERT_EQ(call("executorch_prim::mod.Scalar", args), Error::Ok);  // Python: 0
  EXPECT_EQ(args[2].to_int(), 0);
  args = {I(min), I(0)};
  EXPECT_EQ(call("executorch_prim::neg.Scalar", args), Error::InvalidArgument);
  args = {D(1e300), I(0)};
  EXPECT_EQ(call("executorch_prim::ceil.Scalar", args), Error::InvalidArgument);
  args = {D(std::nan("")), I(0)};
  EXPECT_EQ(call("executorch_prim::sym_int.Scalar", args), Error::InvalidArgument);
  // A float result cannot silently become the int the program declared.
  args = {I(7), I(2), I(0)};
  EXPECT_EQ(call("executorch_prim::truediv.Scalar", args), Error::InvalidArgument);
}

// et_view points out at self's storage with the given sizes; sizes whose element count differs
// from self's, or overflows, and a dtype that differs are errors that leave out untouched.
TEST_F(PrimOps, EtViewChecksItsSizes) {
  float data[6] = {1, 2, 3, 4, 5, 6};
  const int32_t self_sizes[] = {2, 3};
  Tensor self = *Tensor::make(ScalarType::Float, self_sizes, {}, data);
  auto run = [&](std::vector<int64_t> dims, ScalarType out_dtype, Tensor* out) {
    std::vector<EValue> items;
    for (int64_t d : dims) items.push_back(I(d));
    std::vector<EValue*> item_ptrs;
    for (EValue& e : items) item_ptrs.push_back(&e);
    std::vector<int64_t> scratch(dims.size());
    std::vector<int32_t> out_sizes;  // the view's own sizes; 1s where they are absurd
    for (int64_t d : dims) out_sizes.push_back(d >= 0 && d <= 64 ? static_cast<int32_t>(d) : 1);
    if (dims.size() == 2 && dims[0] == -1 && dims[1] > 0) {
      out_sizes[0] = static_cast<int32_t>(6 / dims[1]);
    }
    *out = *Tensor::make(out_dtype, out_sizes, {}, nullptr);
    std::vector<EValue> args{EValue::from_tensor(&self),
                             EValue::from_int_list({item_ptrs.data(), scratch.data(), dims.size()}),
                             EValue::from_tensor(out)};
    return call("executorch_prim::et_view.default", args);
  };
  Tensor out;
  ASSERT_EQ(run({3, 2}, ScalarType::Float, &out), Error::Ok) << last_error_message();
  EXPECT_EQ(out.data(), static_cast<void*>(data));
  EXPECT_EQ(out.size(0), 3);
  EXPECT_EQ(out.data<float>()[5], 6.0f);
  EXPECT_EQ(run({4, 2}, ScalarType::Float, &out), Error::InvalidArgument);
  EXPECT_EQ(out.data(), nullptr);
  EXPECT_EQ(run({std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::max(),
                 std::numeric_limits<int32_t>::max()},
                ScalarType::Float, &out),
            Error::InvalidArgument);
  EXPECT_EQ(run({6}, ScalarType::Int, &out), Error::InvalidArgument);
  EXPECT_EQ(out.data(), nullptr);
  // One -1 is inferred, as ATen's view does (ExecuTorch's exporter writes it): view(-1, 2) of 6
  // elements is 3x2. Two -1s, a -1 that does not divide, or beside a 0 are errors.
  ASSERT_EQ(run({-1, 2}, ScalarType::Float, &out), Error::Ok) << last_error_message();
  EXPECT_EQ(out.data(), static_cast<void*>(data));
  EXPECT_EQ(out.size(0), 3);
  EXPECT_EQ(out.size(1), 2);
  EXPECT_EQ(run({-1, 4}, ScalarType::Float, &out), Error::InvalidArgument);
  EXPECT_EQ(run({-1, -1}, ScalarType::Float, &out), Error::InvalidArgument);
  EXPECT_EQ(run({-1, 0}, ScalarType::Float, &out), Error::InvalidArgument);
  EXPECT_EQ(out.data(), nullptr);
}

}  // namespace
}  // namespace ember::testing
