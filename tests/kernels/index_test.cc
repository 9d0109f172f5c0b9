// Conformance of index.Tensor and index_put (advanced indexing, contract C27) with ATen.
#include "tests/kernels/aten_reference.h"
#include "tests/kernels/test_tensors.h"

namespace ember::testing {
namespace {

using at::indexing::Slice;

at::Tensor floats(std::vector<float> v) { return at::tensor(v); }
// ATen 1.13 cannot build bool tensors from literals.
at::Tensor bools(std::vector<int> v) { return at::tensor(v).to(at::kBool); }

// indices: undefined tensors stand for None.
at::Tensor run_index(const at::Tensor& self, const std::vector<at::Tensor>& indices,
                     const at::Tensor& expected) {
  KernelCall call("aten::index.Tensor_out");
  std::vector<int64_t> big(expected.dim());
  for (int64_t d = 0; d < expected.dim(); ++d) big[d] = expected.size(d) + 3;
  call.tensor(self)
      .tensor_list(indices, /*optional=*/true)
      .out(self.scalar_type(), big, true)
      .repeat_out();
  EXPECT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), expected);
  return expected;
}

// ATen 1.13 takes int64 indices only: int32 ones are widened for the reference.
c10::List<c10::optional<at::Tensor>> aten_indices(const std::vector<at::Tensor>& indices) {
  c10::List<c10::optional<at::Tensor>> list;
  for (const at::Tensor& t : indices) {
    list.push_back(!t.defined() ? c10::nullopt
                                : c10::optional<at::Tensor>(
                                      t.scalar_type() == at::kInt ? t.to(at::kLong) : t));
  }
  return list;
}

void check_put(const at::Tensor& self, const std::vector<at::Tensor>& indices,
               const at::Tensor& values, bool accumulate, const at::Tensor& expected) {
  KernelCall call("aten::index_put.out");
  call.tensor(self)
      .tensor_list(indices, true)
      .tensor(values)
      .scalar(accumulate)
      .out_like(self)
      .repeat_out();
  ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
  expect_matches(call.out(), expected);
}

Error run_status(const char* op, const at::Tensor& self, const std::vector<at::Tensor>& indices,
                 const at::Tensor& values = at::Tensor()) {
  KernelCall call(op);
  call.tensor(self).tensor_list(indices, true);
  if (values.defined()) call.tensor(values).scalar(false);
  call.out(self.scalar_type(), {9, 9, 9}, true).repeat_out();
  return call.run();
}

// --- contract C27, the listed cases

class C27 : public ::testing::Test {
 protected:
  const at::Tensor x = at::arange(12.0, at::kFloat).reshape({4, 3});
  const at::Tensor m = bools({1, 0, 1, 0});
  const at::Tensor y = at::arange(24, at::kLong).reshape({2, 3, 4});
  const at::Tensor none;
};

TEST_F(C27, Reads) {
  run_index(x, {m}, floats({0.f, 1, 2, 6, 7, 8}).reshape({2, 3}));
  run_index(x, {at::fmod(x, 2) == 0}, floats({0.f, 2, 4, 6, 8, 10}));
  run_index(x, {none, bools({1, 0, 1})}, floats({0.f, 2, 3, 5, 6, 8, 9, 11}).reshape({4, 2}));
  run_index(x, {m, at::tensor({0, 2}, at::kLong)}, floats({0.f, 8}));
  const at::Tensor empty = run_index(x, {at::zeros({4}, at::kBool)}, at::empty({0, 3}));
  EXPECT_EQ(empty.sizes().vec(), (std::vector<int64_t>{0, 3}));
}

TEST_F(C27, IndexPlacement) {
  const at::Tensor a = at::tensor({0, 1}, at::kLong), b = at::tensor({1, 2}, at::kLong);
  const at::Tensor r1 = y.index({a, Slice(), b});
  EXPECT_EQ(r1.sizes().vec(), (std::vector<int64_t>{2, 3}));
  run_index(y, {a, none, b}, r1);
  const at::Tensor r2 = y.index({Slice(), a, b});
  EXPECT_EQ(r2.sizes().vec(), (std::vector<int64_t>{2, 2}));
  run_index(y, {none, a, b}, r2);
  run_index(y, {at::scalar_tensor(-1, at::kLong)}, y[1]);
}

TEST_F(C27, Writes) {
  at::Tensor want = x.clone();
  want.index_put_({m}, 0.5);
  check_put(x, {m}, at::scalar_tensor(0.5), false, want);
  const at::Tensor v = floats({10.f, 11, 12, 13, 14, 15}).reshape({2, 3});
  want = x.clone();
  want.index_put_({m}, v);
  check_put(x, {m}, v, false, want);
  want = x.clone();
  want.index_put_({m}, at::ones({3}));
  check_put(x, {m}, at::ones({3}), false, want);
}

TEST_F(C27, Accumulate) {
  check_put(at::zeros({5}), {at::tensor({0, 0, 3}, at::kLong)}, floats({1.f, 2, 4}), true,
            floats({3.f, 0, 0, 4, 0}));
  at::Tensor want = at::zeros({4, 3});
  want[0] = 1;
  want[2] = 1;
  check_put(at::zeros({4, 3}), {m}, at::ones({3}), true, want);
}

TEST_F(C27, Errors) {
  const at::Tensor bad_mask = bools({1, 0, 1});
  EXPECT_EQ(run_status("aten::index.Tensor_out", x, {bad_mask}), Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index_put.out", x, {bad_mask}, at::scalar_tensor(1.0f)),
            Error::InvalidArgument);
  const at::Tensor four = at::tensor({4}, at::kLong);
  EXPECT_EQ(run_status("aten::index.Tensor_out", x, {four}), Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index_put.out", x, {four}, at::scalar_tensor(1.0f)),
            Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index.Tensor_out", x, {at::tensor({-5}, at::kLong)}),
            Error::InvalidArgument);
  // Too many indices; indices that do not broadcast; values that do not broadcast; a dtype
  // mismatch.
  EXPECT_EQ(run_status("aten::index.Tensor_out", x, {none, none, at::tensor({0}, at::kLong)}),
            Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index.Tensor_out", x,
                       {at::tensor({0, 1}, at::kLong), at::tensor({0, 1, 2}, at::kLong)}),
            Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index_put.out", x, {m}, at::ones({2, 2})), Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index_put.out", x, {m}, at::ones({3}, at::kDouble)),
            Error::InvalidArgument);
  EXPECT_EQ(run_status("aten::index.Tensor_out", x, {at::tensor({0.5f})}), Error::InvalidArgument);
}

// --- against ATen on random inputs

TEST(AdvancedIndex, RandomAgainstATen) {
  at::manual_seed(30);
  const at::Tensor none;
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor s = random_tensor(dtype, {4, 5, 6});
    const at::Tensor i1 = at::randint(-4, 4, {3}, at::kLong);
    const at::Tensor i2 = at::randint(-6, 6, {2, 1}, at::kInt);
    const at::Tensor mask2 = at::rand({4, 5}) > 0.5;
    const std::vector<std::vector<at::Tensor>> cases = {
        {i1},
        {none, none, i2},
        {i1, none, i1.to(at::kInt)},
        {none, at::randint(0, 5, {2, 3}, at::kLong), at::randint(0, 6, {3}, at::kLong)},
        {mask2},
        {mask2, at::randint(0, 6, {1}, at::kLong)},
        {none, at::rand({5, 6}) > 0.3},
        {at::rand({4}) > 0.5, none, at::rand({6}) > 2.0},  // an all-false mask
    };
    for (const auto& indices : cases) {
      at::Tensor expected;
      try {
        expected = at::index(s, aten_indices(indices));
      } catch (const c10::Error&) {
        // ATen refuses (e.g. masks whose nonzero counts do not broadcast): so must the kernel.
        EXPECT_EQ(run_status("aten::index.Tensor_out", s, indices), Error::InvalidArgument);
        continue;
      }
      run_index(s, indices, expected);
      if (expected.numel() == 0) continue;
      // Unique targets, so that the non-accumulating put is deterministic.
      if (indices.size() == 1 && indices[0].scalar_type() != at::kBool) continue;
      const at::Tensor values = random_tensor(dtype, expected.sizes());
      if (indices[0].defined() && indices[0].scalar_type() == at::kBool && indices.size() == 1) {
        check_put(s, indices, values, false,
                  at::index_put(s, aten_indices(indices), values, false));
      }
      if (dtype != at::kBool) {
        check_put(s, indices, values, true, at::index_put(s, aten_indices(indices), values, true));
      }
    }
  }
  // Channels-last self and a uint8 mask.
  const at::Tensor cl = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  const at::Tensor idx = at::tensor({2, 0}, at::kLong);
  run_index(cl, {none, idx}, at::index(cl, aten_indices({none, idx})).contiguous());
  const at::Tensor bytes = (at::rand({2, 3}) > 0.5).to(at::kByte);
  run_index(cl, {bytes}, at::index(cl, aten_indices({bytes.to(at::kBool)})));
  check_put(cl, {none, idx}, at::ones({5}), true,
            at::index_put(cl, aten_indices({none, idx}), at::ones({5}), true));
}

// A KV cache write, self[:, positions] = rows: whole rows at unique indexed positions, the form
// index_put copies a row at a time; with contiguous, transposed and broadcast values.
TEST(IndexPut, RowsAtPositions) {
  at::manual_seed(5);
  const at::Tensor cache = at::randn({1, 16, 8});
  const at::Tensor pos = at::tensor({3, 4, 5, 9}, at::kLong);
  const at::Tensor none;
  for (const at::Tensor& values : {at::randn({1, 4, 8}), at::randn({1, 8, 4}).transpose(1, 2),
                                   at::randn({8}), at::randn({4, 1})}) {
    SCOPED_TRACE(::testing::PrintToString(values.sizes()));
    for (bool accumulate : {false, true}) {
      check_put(cache, {none, pos}, values, accumulate,
                at::index_put(cache, aten_indices({none, pos}), values, accumulate));
    }
  }
}

}  // namespace
}  // namespace ember::testing
