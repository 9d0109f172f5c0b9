// Conformance of the shape and data-movement kernels (the `_copy` view ops, cat, stack, pad,
// repeat, flip, roll, tril/triu, gather/scatter, masked_fill, embedding, full, arange, topk, sort,
// nonzero and ExecuTorch's dim-order ops) with ATen.
#include "tests/kernels/aten_reference.h"
#include "tests/kernels/test_tensors.h"

namespace ember::testing {
namespace {

// Runs a one-out op: `args` adds the arguments, the out is shaped like `expected` (or dynamic and
// larger when `dynamic`).
template <typename Args>
void check(const char* op, Args&& args, const at::Tensor& expected, bool dynamic = false) {
  KernelCall call(op);
  args(call);
  if (dynamic) {
    std::vector<int64_t> big(expected.dim(), 0);
    for (int64_t d = 0; d < expected.dim(); ++d) big[d] = expected.size(d) + 2;
    call.out(expected.scalar_type(), big, true).repeat_out();
  } else {
    call.out_like(expected).repeat_out();
  }
  ASSERT_EQ(call.run(), Error::Ok)
      << op << " " << at::toString(expected.scalar_type()) << ": " << last_error_message();
  expect_matches(call.out(), expected);
}

template <typename Args>
Error run_with_out(const char* op, Args&& args, at::ScalarType dtype, at::IntArrayRef out_sizes,
                   bool dynamic = true) {
  KernelCall call(op);
  args(call);
  call.out(dtype, out_sizes, dynamic).repeat_out();
  return call.run();
}

TEST(Shape, ViewPermuteTransposeEveryDtype) {
  at::manual_seed(20);
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {2, 3, 4});
    check(
        "aten::view_copy.out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({4, -1});
        },
        x.view({4, -1}));
    check(
        "aten::permute_copy.out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({2, 0, -2});
        },
        x.permute({2, 0, 1}).contiguous());
    check(
        "aten::transpose_copy.int_out",
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).scalar(int64_t{-1}); },
        x.transpose(0, -1).contiguous(), /*dynamic=*/true);
  }
  // Channels-last input: the copies read logical order.
  const at::Tensor cl = at::randn({2, 3, 4, 5}).contiguous(at::MemoryFormat::ChannelsLast);
  check(
      "aten::view_copy.out",
      [&](KernelCall& c) {
        c.tensor(cl).int_list({6, 20});
      },
      cl.reshape({6, 20}));
  check(
      "aten::permute_copy.out",
      [&](KernelCall& c) {
        c.tensor(cl).int_list({0, 2, 3, 1});
      },
      cl.permute({0, 2, 3, 1}).contiguous());
  // 0-d and empty.
  const at::Tensor s = at::scalar_tensor(3.5);
  check(
      "aten::view_copy.out",
      [&](KernelCall& c) {
        c.tensor(s).int_list({1, 1});
      },
      s.view({1, 1}));
  check(
      "aten::permute_copy.out", [&](KernelCall& c) { c.tensor(s).int_list({}); }, s.clone());
  const at::Tensor e = at::randn({0, 3});
  check(
      "aten::view_copy.out",
      [&](KernelCall& c) {
        c.tensor(e).int_list({3, 0});
      },
      e.view({3, 0}));
  // Refused: a bad view size, a repeated permute dim, an out of range dim.
  EXPECT_EQ(run_with_out("aten::view_copy.out",
                         [&](KernelCall& c) {
                           c.tensor(cl).int_list({7, -1});
                         },
                         at::kFloat, {200, 200}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::permute_copy.out",
                         [&](KernelCall& c) {
                           c.tensor(cl).int_list({0, 0, 1, 2});
                         },
                         at::kFloat, {9, 9, 9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::transpose_copy.int_out",
                         [&](KernelCall& c) { c.tensor(cl).scalar(int64_t{0}).scalar(int64_t{4}); },
                         at::kFloat, {9, 9, 9, 9}),
            Error::InvalidArgument);
  // A static out of the wrong shape.
  EXPECT_NE(run_with_out(
                "aten::view_copy.out",
                [&](KernelCall& c) {
                  c.tensor(cl).int_list({6, 20});
                },
                at::kFloat, {20, 6}, false),
            Error::Ok);
}

TEST(Shape, ExpandSliceSelectSqueezeUnsqueeze) {
  at::manual_seed(21);
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {3, 1, 4});
    check(
        "aten::expand_copy.out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({2, 3, 5, -1}).scalar(false);
        },
        x.expand({2, 3, 5, -1}).contiguous());
    check(
        "aten::slice_copy.Tensor_out",
        [&](KernelCall& c) {
          c.tensor(x)
              .scalar(int64_t{-1})
              .scalar(int64_t{1})
              .scalar(int64_t{100})
              .scalar(int64_t{2});
        },
        x.slice(-1, 1, 100, 2).contiguous(), true);
    check(
        "aten::select_copy.int_out",
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).scalar(int64_t{-1}); },
        x.select(0, -1).contiguous());
    check(
        "aten::unsqueeze_copy.out", [&](KernelCall& c) { c.tensor(x).scalar(int64_t{-1}); },
        x.unsqueeze(-1).contiguous());
    check(
        "aten::squeeze_copy.out", [&](KernelCall& c) { c.tensor(x); }, x.squeeze());
    check(
        "aten::squeeze_copy.dim_out", [&](KernelCall& c) { c.tensor(x).scalar(int64_t{1}); },
        x.squeeze(1));
    check(
        "aten::squeeze_copy.dim_out", [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}); },
        x.squeeze(0));
    check(
        "aten::squeeze_copy.dims_out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({0, 1});
        },
        x.squeeze(1));
  }
  const at::Tensor x = at::randn({5, 6});
  // Slice bounds: None, negative, reversed (empty), past the end.
  check(
      "aten::slice_copy.Tensor_out",
      [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).none().none().scalar(int64_t{1}); },
      x.clone());
  check(
      "aten::slice_copy.Tensor_out",
      [&](KernelCall& c) {
        c.tensor(x).scalar(int64_t{1}).scalar(int64_t{-4}).scalar(int64_t{-1}).scalar(int64_t{1});
      },
      x.slice(1, -4, -1).contiguous());
  check(
      "aten::slice_copy.Tensor_out",
      [&](KernelCall& c) {
        c.tensor(x).scalar(int64_t{0}).scalar(int64_t{4}).scalar(int64_t{2}).scalar(int64_t{1});
      },
      x.slice(0, 4, 2).contiguous(), true);
  const at::Tensor s = at::scalar_tensor(2.0);
  check(
      "aten::unsqueeze_copy.out", [&](KernelCall& c) { c.tensor(s).scalar(int64_t{0}); },
      s.unsqueeze(0));
  check(
      "aten::squeeze_copy.dim_out", [&](KernelCall& c) { c.tensor(s).scalar(int64_t{-1}); },
      s.squeeze(-1));
  EXPECT_EQ(run_with_out("aten::slice_copy.Tensor_out",
                         [&](KernelCall& c) {
                           c.tensor(x).scalar(int64_t{0}).none().none().scalar(int64_t{0});
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::select_copy.int_out",
                         [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).scalar(int64_t{5}); },
                         at::kFloat, {9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::expand_copy.out",
                         [&](KernelCall& c) {
                           c.tensor(x).int_list({5, 7}).scalar(false);
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
}

// as_strided_copy gathers from the input's storage: windows that overlap, a stride-0 repeat, an
// offset, size-1 dims with any stride, the physical order of a channels-last input, and no
// elements (no bounds to check, as in ATen). Reads out of bounds are an error, never a crash.
TEST(Shape, AsStridedCopy) {
  at::manual_seed(27);
  struct Case {
    std::vector<int64_t> size, stride;
    c10::optional<int64_t> offset;  // libtorch 1.13: not std::optional
  };
  const std::vector<Case> cases = {{{4, 5}, {5, 1}, 7},   {{3, 4}, {2, 1}, c10::nullopt},
                                   {{2, 3}, {0, 1}, 11},  {{1, 60, 1}, {999, 1, 12345}, 0},
                                   {{3, 3}, {1, 20}, 17}, {{0, 3}, {1, 1}, 1000},
                                   {{}, {}, 59},          {{2, 2, 3}, {30, 1, 7}, 1}};
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {3, 4, 5});
    for (const Case& k : cases) {
      check(
          "aten::as_strided_copy.out",
          [&](KernelCall& c) {
            c.tensor(x).int_list(k.size).int_list(k.stride);
            if (k.offset)
              c.scalar(*k.offset);
            else
              c.none();
          },
          x.as_strided(k.size, k.stride, k.offset).contiguous());
    }
  }
  const at::Tensor cl = at::randn({1, 2, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast);
  check(
      "aten::as_strided_copy.out",
      [&](KernelCall& c) {
        c.tensor(cl).int_list({3, 6}).int_list({6, 1}).none();
      },
      cl.as_strided({3, 6}, {6, 1}).contiguous());
  // Errors: ATen refuses each of these too.
  const at::Tensor x = at::randn({3, 4, 5});
  const std::vector<Case> bad = {{{5, 5}, {5, 1}, 36},          // reads element 60 of 60
                                 {{2, 2}, {-1, 1}, 4},          // negative stride
                                 {{2, 2}, {1, 1}, -1},          // negative offset
                                 {{1}, {int64_t{1} << 62}, 0},  // size 1: its stride is unused
                                 {{3, 3}, {int64_t{1} << 62, 1}, 0}};  // overflows int64
  for (size_t i = 0; i < bad.size(); ++i) {
    const Case& k = bad[i];
    const Error e = run_with_out(
        "aten::as_strided_copy.out",
        [&](KernelCall& c) { c.tensor(x).int_list(k.size).int_list(k.stride).scalar(*k.offset); },
        at::kFloat, std::vector<int64_t>(k.size.size(), 9));
    if (i == 3) {
      EXPECT_EQ(e, Error::Ok) << last_error_message();
      EXPECT_NO_THROW(x.as_strided(k.size, k.stride, k.offset));
    } else {
      EXPECT_EQ(e, Error::InvalidArgument) << i;
      EXPECT_ANY_THROW(x.as_strided(k.size, k.stride, k.offset)) << i;
    }
  }
  EXPECT_EQ(run_with_out("aten::as_strided_copy.out",
                         [&](KernelCall& c) {
                           c.tensor(x).int_list({2, 2}).int_list({1}).none();
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
  // An empty input has no element to read.
  EXPECT_EQ(run_with_out("aten::as_strided_copy.out",
                         [&](KernelCall& c) {
                           c.tensor(at::randn({0, 3})).int_list({1}).int_list({1}).none();
                         },
                         at::kFloat, {9}),
            Error::InvalidArgument);
}

TEST(Shape, SplitWithSizesSplitUnbind) {
  at::manual_seed(22);
  for (at::ScalarType dtype : {at::kFloat, at::kLong, at::kBool, at::kHalf}) {
    const at::Tensor x = random_tensor(dtype, {4, 7});
    for (bool repeated : {false, true}) {
      const std::vector<at::Tensor> parts = at::split_with_sizes(x, {2, 0, 5}, -1);
      KernelCall call("aten::split_with_sizes_copy.out");
      std::vector<at::Tensor> likes;
      for (const at::Tensor& p : parts) likes.push_back(p.contiguous());
      call.tensor(x).int_list({2, 0, 5}).scalar(int64_t{-1}).out_list(likes);
      if (repeated) call.repeat_out();
      ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
      for (size_t i = 0; i < parts.size(); ++i) expect_matches(call.out(i), parts[i].contiguous());
    }
    const std::vector<at::Tensor> chunks = at::split(x, 3, 1);
    std::vector<at::Tensor> likes;
    for (const at::Tensor& p : chunks) likes.push_back(p.contiguous());
    KernelCall split("aten::split_copy.Tensor_out");
    split.tensor(x).scalar(int64_t{3}).scalar(int64_t{1}).out_list(likes, true);
    ASSERT_EQ(split.run(), Error::Ok) << last_error_message();
    for (size_t i = 0; i < chunks.size(); ++i) expect_matches(split.out(i), chunks[i].contiguous());

    const std::vector<at::Tensor> rows = at::unbind(x, 0);
    likes.clear();
    for (const at::Tensor& p : rows) likes.push_back(p.contiguous());
    KernelCall unbind("aten::unbind_copy.int_out");
    unbind.tensor(x).scalar(int64_t{0}).out_list(likes).repeat_out();
    ASSERT_EQ(unbind.run(), Error::Ok) << last_error_message();
    for (size_t i = 0; i < rows.size(); ++i) expect_matches(unbind.out(i), rows[i].contiguous());
  }
  const at::Tensor x = at::randn({4, 7});
  KernelCall bad("aten::split_with_sizes_copy.out");
  bad.tensor(x)
      .int_list({2, 4})
      .scalar(int64_t{1})
      .out_list({at::empty({4, 2}), at::empty({4, 4})});
  EXPECT_EQ(bad.run(), Error::InvalidArgument);
}

TEST(Shape, CatStackWithPromotionAndLegacyEmpty) {
  at::manual_seed(23);
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor a = random_tensor(dtype, {2, 3}), b = random_tensor(dtype, {2, 5});
    check(
        "aten::cat.out",
        [&](KernelCall& c) {
          c.tensor_list({a, b}).scalar(int64_t{-1});
        },
        at::cat({a, b}, -1));
    check(
        "aten::stack.out",
        [&](KernelCall& c) {
          c.tensor_list({a, a, a}).scalar(int64_t{1});
        },
        at::stack({a, a, a}, 1), true);
  }
  const at::Tensor i = at::arange(6, at::kInt).reshape({2, 3}), f = at::randn({1, 3}).to(at::kHalf);
  check(
      "aten::cat.out",
      [&](KernelCall& c) {
        c.tensor_list({i, f, at::empty({0})}).scalar(int64_t{0});
      },
      at::cat({i, f, at::empty({0})}, 0));
  const at::Tensor cl = at::randn({1, 2, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast);
  check(
      "aten::cat.out",
      [&](KernelCall& c) {
        c.tensor_list({cl, cl}).scalar(int64_t{1});
      },
      at::cat({cl, cl}, 1));
  EXPECT_EQ(run_with_out("aten::cat.out",
                         [&](KernelCall& c) {
                           c.tensor_list({at::randn({2, 3}), at::randn({3, 3})}).scalar(int64_t{1});
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::cat.out",
                         [&](KernelCall& c) {
                           c.tensor_list({at::randn({2, 3})}).scalar(int64_t{0});
                         },
                         at::kInt, {9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::stack.out",
                         [&](KernelCall& c) {
                           c.tensor_list({at::randn({2, 3}), at::randn({3, 2})}).scalar(int64_t{0});
                         },
                         at::kFloat, {9, 9, 9}),
            Error::InvalidArgument);
}

TEST(Shape, PadRepeatFlipRollTriangles) {
  at::manual_seed(24);
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {2, 3, 4});
    const bool fl = at::isFloatingType(dtype);
    for (const std::vector<int64_t>& pad :
         {std::vector<int64_t>{1, 2}, std::vector<int64_t>{0, 1, 2, 0},
          std::vector<int64_t>{-1, 1, 1, -2, 1, 1}}) {
      const at::Tensor y = fl ? at::constant_pad_nd(x, pad, 1.5) : at::constant_pad_nd(x, pad, 1);
      check(
          "aten::constant_pad_nd.out",
          [&](KernelCall& c) {
            c.tensor(x).int_list(pad);
            if (fl)
              c.scalar(1.5);
            else
              c.scalar(int64_t{1});
          },
          y);
    }
    check(
        "aten::repeat.out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({2, 1, 3, 2});
        },
        x.repeat({2, 1, 3, 2}));
    check(
        "aten::flip.out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({0, -1});
        },
        x.flip({0, -1}));
    check(
        "aten::roll.out",
        [&](KernelCall& c) {
          c.tensor(x).int_list({1, -5}).int_list({0, 2});
        },
        x.roll({1, -5}, {0, 2}));
    check(
        "aten::roll.out", [&](KernelCall& c) { c.tensor(x).int_list({7}).int_list({}); },
        x.roll({7}));
    check(
        "aten::tril.out", [&](KernelCall& c) { c.tensor(x).scalar(int64_t{1}); }, x.tril(1));
    check(
        "aten::triu.out", [&](KernelCall& c) { c.tensor(x).scalar(int64_t{-1}); }, x.triu(-1));
  }
  const at::Tensor cl = at::randn({1, 2, 3, 3}).contiguous(at::MemoryFormat::ChannelsLast);
  check(
      "aten::flip.out",
      [&](KernelCall& c) {
        c.tensor(cl).int_list({1, 3});
      },
      cl.flip({1, 3}).contiguous());
  check(
      "aten::roll.out", [&](KernelCall& c) { c.tensor(cl).int_list({4}).int_list({}); },
      cl.roll({4}).contiguous());
  check(
      "aten::repeat.out", [&](KernelCall& c) { c.tensor(at::scalar_tensor(2.0)).int_list({3}); },
      at::scalar_tensor(2.0).repeat({3}));
  EXPECT_EQ(run_with_out("aten::constant_pad_nd.out",
                         [&](KernelCall& c) { c.tensor(cl).int_list({1}).scalar(0.0); }, at::kFloat,
                         {9, 9, 9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::repeat.out", [&](KernelCall& c) { c.tensor(cl).int_list({2}); },
                         at::kFloat, {9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::flip.out",
                         [&](KernelCall& c) {
                           c.tensor(cl).int_list({1, 1});
                         },
                         at::kFloat, {9, 9, 9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::tril.out",
                         [&](KernelCall& c) { c.tensor(at::randn({3})).scalar(int64_t{0}); },
                         at::kFloat, {9}),
            Error::InvalidArgument);
}

TEST(Shape, IndexSelectGatherScatterEmbedding) {
  at::manual_seed(25);
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {4, 5});
    for (at::ScalarType itype : {at::kLong, at::kInt}) {
      const at::Tensor idx = at::tensor({3, 0, 0, 2}, at::kLong).to(itype);
      check(
          "aten::index_select.out",
          [&](KernelCall& c) { c.tensor(x).scalar(int64_t{-1}).tensor(idx); },
          at::index_select(x, -1, idx));
      check(
          "aten::embedding.out",
          [&](KernelCall& c) {
            c.tensor(x).tensor(idx.reshape({2, 2})).scalar(int64_t{-1}).scalar(false).scalar(false);
          },
          at::embedding(x, idx.reshape({2, 2})));
    }
    const at::Tensor gi = at::randint(0, 4, {3, 5}, at::kLong);
    check(
        "aten::gather.out",
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).tensor(gi).scalar(false); },
        at::gather(x, 0, gi));
    // Scatter with unique indices (duplicates would leave the winner unspecified).
    const at::Tensor si = at::randperm(5, at::kLong).repeat({3, 1});
    const at::Tensor src = random_tensor(dtype, {3, 6});
    check(
        "aten::scatter.src_out",
        [&](KernelCall& c) { c.tensor(x).scalar(int64_t{1}).tensor(si).tensor(src); },
        at::scatter(x, 1, si, src));
    const bool fl = at::isFloatingType(dtype);
    check(
        "aten::scatter.value_out",
        [&](KernelCall& c) {
          c.tensor(x).scalar(int64_t{1}).tensor(si);
          if (fl)
            c.scalar(2.5);
          else
            c.scalar(int64_t{1});
        },
        fl ? at::scatter(x, 1, si, 2.5) : at::scatter(x, 1, si, 1));
    if (dtype != at::kBool) {
      const at::Tensor dup = at::randint(0, 4, {6, 5}, at::kLong);
      const at::Tensor src2 = random_tensor(dtype, {6, 5});
      check(
          "aten::scatter_add.out",
          [&](KernelCall& c) { c.tensor(x).scalar(int64_t{0}).tensor(dup).tensor(src2); },
          at::scatter_add(x, 0, dup, src2));
      check(
          "aten::scatter.reduce_out",
          [&](KernelCall& c) {
            c.tensor(x).scalar(int64_t{0}).tensor(dup).tensor(src2).string("add");
          },
          at::scatter(x, 0, dup, src2, "add"));
      if (fl) {
        check(
            "aten::scatter.reduce_out",
            [&](KernelCall& c) {
              c.tensor(x).scalar(int64_t{0}).tensor(dup).tensor(src2).string("multiply");
            },
            at::scatter(x, 0, dup, src2, "multiply"));
        check(
            "aten::scatter.value_reduce_out",
            [&](KernelCall& c) {
              c.tensor(x).scalar(int64_t{0}).tensor(dup).scalar(1.5).string("multiply");
            },
            at::scatter(x, 0, dup, 1.5, "multiply"));
      }
    }
  }
  const at::Tensor x = at::randn({4, 5});
  EXPECT_EQ(run_with_out("aten::index_select.out",
                         [&](KernelCall& c) {
                           c.tensor(x).scalar(int64_t{0}).tensor(at::tensor({4}, at::kLong));
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(
      run_with_out(
          "aten::gather.out",
          [&](KernelCall& c) {
            c.tensor(x).scalar(int64_t{1}).tensor(at::full({2, 2}, 5, at::kLong)).scalar(false);
          },
          at::kFloat, {9, 9}),
      Error::InvalidArgument);
  EXPECT_EQ(run_with_out(
                "aten::gather.out",
                [&](KernelCall& c) {
                  c.tensor(x).scalar(int64_t{1}).tensor(at::zeros({2, 2}, at::kInt)).scalar(false);
                },
                at::kFloat, {9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::scatter.reduce_out",
                         [&](KernelCall& c) {
                           c.tensor(x)
                               .scalar(int64_t{0})
                               .tensor(at::zeros({1, 1}, at::kLong))
                               .tensor(x)
                               .string("max");
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out("aten::embedding.out",
                         [&](KernelCall& c) {
                           c.tensor(x)
                               .tensor(at::tensor({-1}, at::kLong))
                               .scalar(int64_t{-1})
                               .scalar(false)
                               .scalar(false);
                         },
                         at::kFloat, {9, 9}),
            Error::InvalidArgument);
}

TEST(Shape, MaskedFillFullArangeScalarTensor) {
  at::manual_seed(26);
  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {3, 4});
    const at::Tensor m = at::rand({4}) > 0.5;
    const bool fl = at::isFloatingType(dtype);
    check(
        "aten::masked_fill.Scalar_out",
        [&](KernelCall& c) {
          c.tensor(x).tensor(m);
          if (fl)
            c.scalar(-2.5);
          else
            c.scalar(int64_t{1});
        },
        fl ? at::masked_fill(x, m, -2.5) : at::masked_fill(x, m, 1));
    check(
        "aten::full.out",
        [&](KernelCall& c) {
          c.int_list({2, 3}).scalar(int64_t{1});
        },
        at::full({2, 3}, 1, at::TensorOptions().dtype(dtype)), true);
    check(
        "aten::full_like.out", [&](KernelCall& c) { c.tensor(x).scalar(int64_t{1}).none(); },
        at::full_like(x, 1));
    check(
        "aten::scalar_tensor.out", [&](KernelCall& c) { c.scalar(int64_t{1}); },
        at::scalar_tensor(1, at::TensorOptions().dtype(dtype)));
    if (dtype != at::kBool) {
      check(
          "aten::arange.out", [&](KernelCall& c) { c.scalar(int64_t{7}); },
          at::arange(7, at::TensorOptions().dtype(dtype)), true);
    }
  }
  // A mask that broadcasts self; full with a double value in float; arange with float steps.
  const at::Tensor row = at::randn({4});
  const at::Tensor m2 = at::rand({3, 4}) > 0.5;
  check(
      "aten::masked_fill.Scalar_out", [&](KernelCall& c) { c.tensor(row).tensor(m2).scalar(0.0); },
      at::masked_fill(row, m2, 0.0));
  check(
      "aten::full.out", [&](KernelCall& c) { c.int_list({}).scalar(0.25); }, at::full({}, 0.25));
  check(
      "aten::arange.start_out", [&](KernelCall& c) { c.scalar(-1.0).scalar(2.0).scalar(0.3); },
      at::arange(-1.0, 2.0, 0.3), true);
  check(
      "aten::arange.start_out",
      [&](KernelCall& c) { c.scalar(int64_t{10}).scalar(int64_t{-3}).scalar(int64_t{-4}); },
      at::arange(10, -3, -4), true);
  check(
      "aten::arange.start_out", [&](KernelCall& c) { c.scalar(0.0).scalar(1.0).scalar(0.1); },
      at::arange(0.0, 1.0, 0.1, at::kDouble), true);
  EXPECT_EQ(run_with_out(
                "aten::arange.start_out",
                [&](KernelCall& c) { c.scalar(int64_t{0}).scalar(int64_t{5}).scalar(int64_t{-1}); },
                at::kLong, {9}),
            Error::InvalidArgument);
  EXPECT_EQ(run_with_out(
                "aten::masked_fill.Scalar_out",
                [&](KernelCall& c) { c.tensor(row).tensor(at::ones({4}, at::kInt)).scalar(0.0); },
                at::kFloat, {9}),
            Error::InvalidArgument);
}

TEST(Shape, TopkSortNonzero) {
  at::manual_seed(27);
  for (at::ScalarType dtype :
       {at::kFloat, at::kDouble, at::kLong, at::kInt, at::kBFloat16, at::kHalf, at::kChar}) {
    // Distinct values, so indices are unambiguous.
    const at::Tensor x = at::randperm(60, at::kLong).reshape({3, 4, 5}).to(dtype);
    for (int64_t dim : {-1, 0, 1}) {
      for (bool largest : {true, false}) {
        at::Tensor v, i;
        std::tie(v, i) = at::topk(x.to(at::kFloat), 3, dim, largest, true);
        KernelCall call("aten::topk.values");
        call.tensor(x)
            .scalar(int64_t{3})
            .scalar(dim)
            .scalar(largest)
            .scalar(true)
            .out_like(v.to(dtype))
            .out_like(i)
            .repeat_outs(2);
        ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
        expect_matches(call.out(0), v.to(dtype));
        expect_matches(call.out(1), i);
      }
      for (bool descending : {false, true}) {
        at::Tensor v, i;
        std::tie(v, i) = at::sort(x.to(at::kFloat), dim, descending);
        KernelCall call("aten::sort.values");
        call.tensor(x)
            .scalar(dim)
            .scalar(descending)
            .out_like(v.to(dtype))
            .out_like(i)
            .repeat_outs(2);
        ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
        expect_matches(call.out(0), v.to(dtype));
        expect_matches(call.out(1), i);
      }
    }
  }
  // Stable ties and NaN as the largest value.
  const at::Tensor t = at::tensor({2.0f, NAN, 1.0f, 2.0f, NAN, 0.0f, 1.0f});
  for (bool descending : {false, true}) {
    at::Tensor v, i;
    std::tie(v, i) = at::sort(t, true, 0, descending);
    KernelCall call("aten::sort.values_stable");
    call.tensor(t)
        .scalar(true)
        .scalar(int64_t{0})
        .scalar(descending)
        .out_like(v)
        .out_like(i)
        .repeat_outs(2);
    ASSERT_EQ(call.run(), Error::Ok) << last_error_message();
    expect_matches(call.out(0), v);
    expect_matches(call.out(1), i);
  }
  at::Tensor tv, ti;
  std::tie(tv, ti) = at::topk(t, 3);
  KernelCall topk_nan("aten::topk.values");
  topk_nan.tensor(t)
      .scalar(int64_t{3})
      .scalar(int64_t{-1})
      .scalar(true)
      .scalar(true)
      .out_like(tv)
      .out_like(ti)
      .repeat_outs(2);
  ASSERT_EQ(topk_nan.run(), Error::Ok) << last_error_message();
  expect_matches(topk_nan.out(0), tv);
  KernelCall big_k("aten::topk.values");
  big_k.tensor(t)
      .scalar(int64_t{8})
      .scalar(int64_t{-1})
      .scalar(true)
      .scalar(true)
      .out(at::kFloat, {8}, true)
      .out(at::kLong, {8}, true)
      .repeat_outs(2);
  EXPECT_EQ(big_k.run(), Error::InvalidArgument);

  for (at::ScalarType dtype : all_dtypes()) {
    const at::Tensor x = random_tensor(dtype, {3, 4, 2});
    check(
        "aten::nonzero.out", [&](KernelCall& c) { c.tensor(x); }, at::nonzero(x), true);
  }
  check(
      "aten::nonzero.out", [&](KernelCall& c) { c.tensor(at::scalar_tensor(3)); },
      at::nonzero(at::scalar_tensor(3)), true);
}

TEST(Shape, DimOrderOps) {
  at::manual_seed(28);
  const at::Tensor x = at::randn({2, 3, 4, 5});
  const at::Tensor cl = x.contiguous(at::MemoryFormat::ChannelsLast);
  // To channels-last (dim order 0, 2, 3, 1) and back, with a dtype change.
  KernelCall to_cl("dim_order_ops::_to_dim_order_copy.out");
  to_cl.tensor(x)
      .scalar(false)
      .int_list({0, 2, 3, 1})
      .out_like_layout(cl.to(at::kHalf))
      .repeat_out();
  ASSERT_EQ(to_cl.run(), Error::Ok) << last_error_message();
  expect_matches(to_cl.out(), x.to(at::kHalf));
  EXPECT_EQ(to_cl.out().dim_order()[3], 1);
  KernelCall back("dim_order_ops::_clone_dim_order.out");
  back.tensor(cl).scalar(false).none().out_like(x).repeat_out();
  ASSERT_EQ(back.run(), Error::Ok) << last_error_message();
  expect_matches(back.out(), x);
  KernelCall mismatch("dim_order_ops::_clone_dim_order.out");
  mismatch.tensor(cl).scalar(false).int_list({0, 2, 3, 1}).out_like(x).repeat_out();
  EXPECT_EQ(mismatch.run(), Error::InvalidArgument);
  KernelCall dtype("dim_order_ops::_clone_dim_order.out");
  dtype.tensor(cl).scalar(false).none().out_like(x.to(at::kDouble)).repeat_out();
  EXPECT_EQ(dtype.run(), Error::InvalidArgument);
}

}  // namespace
}  // namespace ember::testing
