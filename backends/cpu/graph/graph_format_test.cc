// The cpu backend's blob (graph/graph_format.h, graph/cpu_graph.fbs): a graph with every op kind
// and field comes back the same; truncated, padded, corrupted, foreign and out-of-range blobs are
// refused with a reason and never crash (run it under ASan). The committed fuzz seeds
// (testdata/fuzz_seeds) parse; EMBER_WRITE_CPU_FUZZ_SEEDS=1 rewrites them from the graphs here.
// Past fuzz findings are in testdata/fuzz_regressions.
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/graph/graph_format.h"
#include "ember/backends/cpu/cpu_graph_generated.h"

namespace ember::cpu {
namespace {

TensorDesc input(uint32_t index, std::vector<int64_t> dims, int32_t batch_symbol = -1) {
  TensorDesc t;
  t.kind = TensorKind::Input;
  t.index = index;
  t.dims = std::move(dims);
  t.batch_symbol = batch_symbol;
  return t;
}

TensorDesc value(std::vector<int64_t> dims, int32_t batch_symbol = -1) {
  TensorDesc t;
  t.dims = std::move(dims);
  t.batch_symbol = batch_symbol;
  return t;
}

// Adds a weight and its tensor; returns the tensor id.
int32_t weight(CpuGraph& g, std::string key, std::vector<int64_t> dims,
               WeightStorage storage = WeightStorage::Float32) {
  TensorDesc t;
  t.kind = TensorKind::Weight;
  t.index = static_cast<uint32_t>(g.weights.size());
  t.dims = std::move(dims);
  t.storage = storage;
  const uint64_t n = static_cast<uint64_t>(checked_numel(t.dims));
  const uint64_t nbytes = storage == WeightStorage::Int4   ? n / 2
                          : storage == WeightStorage::Int8 ? n
                                                           : n * 4;
  g.weights.push_back({std::move(key), nbytes});
  g.tensors.push_back(std::move(t));
  return static_cast<int32_t>(g.tensors.size() - 1);
}

int32_t add(CpuGraph& g, TensorDesc t) {
  g.tensors.push_back(std::move(t));
  return static_cast<int32_t>(g.tensors.size() - 1);
}

// Adds an op producing a new tensor `out`; returns its id.
int32_t op(CpuGraph& g, OpKind kind, std::vector<int32_t> inputs, TensorDesc out,
           OpParams params = NoParams{}, std::vector<PostOp> post_ops = {}) {
  OpDesc o;
  o.kind = kind;
  o.inputs = std::move(inputs);
  o.output = add(g, std::move(out));
  o.params = std::move(params);
  o.post_ops = std::move(post_ops);
  g.ops.push_back(std::move(o));
  return g.ops.back().output;
}

PostOp eltwise(EltwiseAlg alg, float alpha = 0, float beta = 0) {
  PostOp p;
  p.alg = alg;
  p.alpha = alpha;
  p.beta = beta;
  return p;
}

PostOp sum(int32_t tensor) {
  PostOp p;
  p.is_sum = true;
  p.tensor = tensor;
  return p;
}

// A 3x3 convolution's geometry: stride 1, padding 1.
ConvParams conv3x3() {
  ConvParams c;
  c.stride = {1, 1};
  c.pad_l = {1, 1};
  c.pad_r = {1, 1};
  c.dilation = {1, 1};
  c.output_padding = {0, 0};
  return c;
}

PoolParams pool2x2(PoolAlg alg, std::vector<int64_t> pad = {0, 0}) {
  return PoolParams{alg, {2, 2}, {2, 2}, pad, pad, {1, 1}};
}

// Every op kind, every field of every record set to something other than its default: a dynamic
// batch, dim orders, int8 and int4 weights, a bool input, a 0-d weight, a key with a NUL and
// UTF-8, post-ops of both kinds, a transposed convolution.
CpuGraph every_kind() {
  CpuGraph g;
  g.precision = Precision::Bf16;
  g.num_inputs = 3;
  g.num_symbols = 1;
  TensorDesc x = input(0, {4, 4, 8, 8}, 0);  // b <= 4
  x.dim_order = {0, 2, 3, 1};
  const int32_t tx = add(g, x);
  const int32_t ty = add(g, input(2, {4, 16}));
  TensorDesc mask = input(1, {4, 6});
  mask.storage = WeightStorage::Bool;
  const int32_t tmask = add(g, mask);
  const int32_t w_conv = weight(g, "conv.weight", {8, 4, 3, 3});
  const int32_t b_conv = weight(g, std::string("conv.bias\0\xc3\xbc", 12), {8});
  const int32_t w_q = weight(g, "qconv.weight", {8, 4, 3, 3}, WeightStorage::Int8);
  const int32_t s_q = weight(g, "qconv.scales", {8});
  const int32_t mean = weight(g, "bn.mean", {8});
  const int32_t var = weight(g, "bn.var", {8});
  const int32_t w_mm = weight(g, "mm.b", {16, 6});
  const int32_t w_q8 = weight(g, "qmm.weight", {6, 16}, WeightStorage::Int8);
  const int32_t s_q8 = weight(g, "qmm.scales", {6});
  const int32_t w_g4 = weight(g, "gmm.weight", {6, 16}, WeightStorage::Int4);
  const int32_t s_g = weight(g, "gmm.scales", {6, 4});
  const int32_t z_g = weight(g, "gmm.zeros", {6, 4});
  const int32_t gamma = weight(g, "ln.weight", {16});
  const int32_t fill = weight(g, "where.other", {});
  TensorDesc transposed = g.tensors[static_cast<size_t>(w_mm)];  // a view of mm.b's bytes
  transposed.dims = {6, 16};
  transposed.dim_order = {1, 0};
  const int32_t w_mm_t = add(g, transposed);

  const int32_t conv = op(g, OpKind::Conv, {tx, w_conv, b_conv}, value({4, 8, 8, 8}, 0), conv3x3(),
                          {eltwise(EltwiseAlg::Relu), sum(tx)});
  const int32_t qconv =
      op(g, OpKind::QuantConv, {tx, w_q, -1, s_q}, value({4, 8, 8, 8}, 0),
         QuantConvParams{conv3x3(), {0.05f, 3}}, {eltwise(EltwiseAlg::Clip, -1, 1)});
  ConvParams up;  // PyTorch's conv_transpose2d(stride=(2, 3), padding=(1, 0), output_padding=(1,
  up.groups = 2;  // 2), groups=2, dilation=(1, 2)) of 8 x 8 by a 3 x 3 kernel: 16 x 28
  up.transposed = true;
  up.stride = {2, 3};
  up.pad_l = {1, 0};
  up.pad_r = {0, -2};
  up.dilation = {1, 2};
  up.output_padding = {1, 2};
  const int32_t w_up = weight(g, "up.weight", {8, 2, 3, 3});
  const int32_t upsampled = op(g, OpKind::Conv, {conv, w_up, -1}, value({4, 4, 16, 28}, 0), up);
  const int32_t bn = op(g, OpKind::BatchNorm, {conv, -1, b_conv, mean, var}, value({4, 8, 8, 8}, 0),
                        NormParams{1e-5f});
  const int32_t elt =
      op(g, OpKind::Eltwise, {bn}, value({4, 8, 8, 8}, 0),
         EltwiseParams{EltwiseAlg::Elu, 0.5f, std::numeric_limits<float>::quiet_NaN()});
  const int32_t pool =
      op(g, OpKind::Pool, {elt}, value({4, 8, 4, 4}, 0), pool2x2(PoolAlg::AvgExcludePad, {0, 1}));
  const int32_t bin = op(g, OpKind::Binary, {pool, pool}, value({4, 8, 4, 4}, 0),
                         BinaryParams{BinaryAlg::Mul}, {sum(pool)});
  TensorDesc flat = value({4, 128}, 0);
  flat.dim_order = {1, 0};
  const int32_t reshape = op(g, OpKind::Reshape, {bin}, flat);
  const int32_t perm = op(g, OpKind::Permute, {ty}, value({16, 4}), PermuteParams{{1, 0}});
  const int32_t soft = op(g, OpKind::Softmax, {perm}, value({16, 4}), SoftmaxParams{1});
  const int32_t mm = op(g, OpKind::MatMul, {ty, w_mm, -1}, value({4, 6}), MatMulParams{},
                        {eltwise(EltwiseAlg::Swish, 1)});
  const int32_t qmm = op(g, OpKind::QuantMatMul, {ty, w_q8, -1, s_q8}, value({4, 6}),
                         QuantMatMulParams{{0.1f, -2}});
  const int32_t gmm = op(g, OpKind::GroupQuantMatMul, {ty, w_g4, -1, s_g, z_g}, value({4, 6}),
                         GroupQuantMatMulParams{4});
  const int32_t gmm8 = op(g, OpKind::GroupQuantMatMul, {ty, w_q8, -1, s_g, -1}, value({4, 6}),
                          GroupQuantMatMulParams{4, InputQuant::PerToken, 1e-6f});
  const int32_t gmm_t = op(g, OpKind::GroupQuantMatMul, {ty, w_q8, -1, s_g, -1}, value({4, 6}),
                           GroupQuantMatMulParams{4, InputQuant::PerTensor, 0.000244140625f});
  const int32_t ln = op(g, OpKind::LayerNorm, {ty, gamma, -1}, value({4, 16}), NormParams{1e-5f});
  const int32_t cat =
      op(g, OpKind::Concat, {mm, qmm, gmm, gmm8, gmm_t, w_mm_t}, value({30, 6}), ConcatParams{0});
  const int32_t red = op(g, OpKind::Reduce, {cat}, value({30}), ReduceParams{ReduceAlg::Mean, {1}});
  const int32_t slice = op(g, OpKind::Slice, {cat}, value({3, 6}), SliceParams{0, 2});
  const int32_t sel = op(g, OpKind::Where, {tmask, mm, fill}, value({4, 6}));
  g.outputs = {reshape, soft, ln, red, slice, qconv, sel, upsampled};
  g.output_dim_orders = {{}, {1, 0}, {}, {}, {}, {0, 3, 1, 2}, {}, {}};
  return g;
}

// A convolution, a relu, a pooling and a linear: the shape of what the compiler writes most.
CpuGraph small_cnn() {
  CpuGraph g;
  g.num_inputs = 2;
  const int32_t x = add(g, input(0, {1, 3, 8, 8}));
  const int32_t w = weight(g, "conv1.weight", {4, 3, 3, 3});
  const int32_t b = weight(g, "conv1.bias", {4});
  const int32_t c =
      op(g, OpKind::Conv, {x, w, b}, value({1, 4, 8, 8}), conv3x3(), {eltwise(EltwiseAlg::Relu)});
  const int32_t p = op(g, OpKind::Pool, {c}, value({1, 4, 4, 4}), pool2x2(PoolAlg::Max));
  const int32_t f = op(g, OpKind::Reshape, {p}, value({1, 64}));
  const int32_t fc = weight(g, "fc.weight", {64, 10});
  const int32_t y = op(g, OpKind::MatMul, {f, fc, -1}, value({1, 10}), MatMulParams{});
  g.outputs = {y};
  g.output_dim_orders = {{}};
  return g;
}

std::string reason(std::span<const uint8_t> blob) {
  std::string why;
  std::optional<CpuGraph> g = parse(blob, &why);
  return g ? std::string("accepted") : why;
}

void expect_bits(float a, float b) {  // bit for bit: NaN and -0 too
  EXPECT_EQ(std::bit_cast<uint32_t>(a), std::bit_cast<uint32_t>(b)) << a << " vs " << b;
}

void expect_same_params(const NoParams&, const NoParams&) {}
void expect_same_params(const QuantParams& a, const QuantParams& b) {
  expect_bits(a.scale, b.scale);
  expect_bits(a.zero_point, b.zero_point);
}
void expect_same_params(const ConvParams& a, const ConvParams& b) {
  EXPECT_EQ(a.groups, b.groups);
  EXPECT_EQ(a.transposed, b.transposed);
  EXPECT_EQ(a.stride, b.stride);
  EXPECT_EQ(a.pad_l, b.pad_l);
  EXPECT_EQ(a.pad_r, b.pad_r);
  EXPECT_EQ(a.dilation, b.dilation);
  EXPECT_EQ(a.output_padding, b.output_padding);
}
void expect_same_params(const QuantConvParams& a, const QuantConvParams& b) {
  expect_same_params(a.conv, b.conv);
  expect_same_params(a.src, b.src);
}
void expect_same_params(const MatMulParams& a, const MatMulParams& b) {
  EXPECT_EQ(a.quantized, b.quantized);
  expect_same_params(a.a, b.a);
  expect_same_params(a.b, b.b);
}
void expect_same_params(const QuantMatMulParams& a, const QuantMatMulParams& b) {
  expect_same_params(a.src, b.src);
}
void expect_same_params(const GroupQuantMatMulParams& a, const GroupQuantMatMulParams& b) {
  EXPECT_EQ(a.group, b.group);
  EXPECT_EQ(a.input_quant, b.input_quant);
  expect_bits(a.eps, b.eps);
}
void expect_same_params(const PoolParams& a, const PoolParams& b) {
  EXPECT_EQ(a.alg, b.alg);
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.stride, b.stride);
  EXPECT_EQ(a.pad_l, b.pad_l);
  EXPECT_EQ(a.pad_r, b.pad_r);
  EXPECT_EQ(a.dilation, b.dilation);
}
void expect_same_params(const EltwiseParams& a, const EltwiseParams& b) {
  EXPECT_EQ(a.alg, b.alg);
  expect_bits(a.alpha, b.alpha);
  expect_bits(a.beta, b.beta);
}
void expect_same_params(const BinaryParams& a, const BinaryParams& b) { EXPECT_EQ(a.alg, b.alg); }
void expect_same_params(const SoftmaxParams& a, const SoftmaxParams& b) {
  EXPECT_EQ(a.axis, b.axis);
}
void expect_same_params(const NormParams& a, const NormParams& b) { expect_bits(a.eps, b.eps); }
void expect_same_params(const ConcatParams& a, const ConcatParams& b) { EXPECT_EQ(a.axis, b.axis); }
void expect_same_params(const PermuteParams& a, const PermuteParams& b) {
  EXPECT_EQ(a.perm, b.perm);
}
void expect_same_params(const ReduceParams& a, const ReduceParams& b) {
  EXPECT_EQ(a.alg, b.alg);
  EXPECT_EQ(a.dims, b.dims);
}
void expect_same_params(const SliceParams& a, const SliceParams& b) {
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.start, b.start);
}

void expect_same(const CpuGraph& a, const CpuGraph& b) {
  EXPECT_EQ(a.precision, b.precision);
  EXPECT_EQ(a.num_inputs, b.num_inputs);
  EXPECT_EQ(a.num_symbols, b.num_symbols);
  ASSERT_EQ(a.weights.size(), b.weights.size());
  for (size_t i = 0; i < a.weights.size(); ++i) {
    EXPECT_EQ(a.weights[i].key, b.weights[i].key) << "weight " << i;
    EXPECT_EQ(a.weights[i].nbytes, b.weights[i].nbytes) << "weight " << i;
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const TensorDesc &s = a.tensors[i], &t = b.tensors[i];
    EXPECT_EQ(s.kind, t.kind) << "tensor " << i;
    EXPECT_EQ(s.index, t.index) << "tensor " << i;
    EXPECT_EQ(s.dims, t.dims) << "tensor " << i;
    EXPECT_EQ(s.dim_order, t.dim_order) << "tensor " << i;
    EXPECT_EQ(s.batch_symbol, t.batch_symbol) << "tensor " << i;
    EXPECT_EQ(s.storage, t.storage) << "tensor " << i;
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const OpDesc &o = a.ops[i], &p = b.ops[i];
    EXPECT_EQ(o.kind, p.kind) << "op " << i;
    EXPECT_EQ(o.inputs, p.inputs) << "op " << i;
    EXPECT_EQ(o.output, p.output) << "op " << i;
    ASSERT_EQ(o.params.index(), p.params.index()) << "op " << i;
    std::visit(
        [&](const auto& x) {
          SCOPED_TRACE("op " + std::to_string(i));
          expect_same_params(x, *std::get_if<std::decay_t<decltype(x)>>(&p.params));
        },
        o.params);
    ASSERT_EQ(o.post_ops.size(), p.post_ops.size()) << "op " << i;
    for (size_t k = 0; k < o.post_ops.size(); ++k) {
      const PostOp &x = o.post_ops[k], &y = p.post_ops[k];
      EXPECT_EQ(x.is_sum, y.is_sum);
      EXPECT_EQ(x.tensor, y.tensor);
      EXPECT_EQ(x.alg, y.alg);
      EXPECT_EQ(std::bit_cast<uint32_t>(x.alpha), std::bit_cast<uint32_t>(y.alpha));
      EXPECT_EQ(std::bit_cast<uint32_t>(x.beta), std::bit_cast<uint32_t>(y.beta));
    }
  }
  EXPECT_EQ(a.outputs, b.outputs);
  EXPECT_EQ(a.output_dim_orders, b.output_dim_orders);
}

TEST(CpuGraphFormat, EveryKindAndFieldRoundTrips) {
  const CpuGraph g = every_kind();
  const std::vector<uint8_t> blob = serialize(g);
  std::string why;
  std::optional<CpuGraph> back = parse(blob, &why);
  ASSERT_TRUE(back) << why;
  expect_same(g, *back);
  EXPECT_EQ(serialize(*back), blob);
  EXPECT_TRUE(flatbuffers::BufferHasIdentifier(blob.data(), "ECPU", /*size_prefixed=*/true));
  // Where the blob is stored unaligned (parse copies it).
  std::vector<uint8_t> shifted(blob.size() + 1);
  std::memcpy(shifted.data() + 1, blob.data(), blob.size());
  back = parse(std::span<const uint8_t>(shifted).subspan(1), &why);
  ASSERT_TRUE(back) << why;
  expect_same(g, *back);
}

TEST(CpuGraphFormat, MatMulOfInt8ValuesRoundTrips) {
  CpuGraph g = small_cnn();
  ASSERT_EQ(g.ops[3].kind, OpKind::MatMul);
  g.ops[3].params = MatMulParams{true, {0.031f, -3.f}, {0.057f, 127.f}};
  std::string why;
  const std::optional<CpuGraph> back = parse(serialize(g), &why);
  ASSERT_TRUE(back) << why;
  expect_same(g, *back);
}

TEST(CpuGraphFormat, EmptyGraphRoundTrips) {
  std::string why;
  std::optional<CpuGraph> back = parse(serialize(CpuGraph{}), &why);
  ASSERT_TRUE(back) << why;
  expect_same(CpuGraph{}, *back);
}

// Every value of the algorithm enums, up to their kNum* bounds (so values appended later too),
// as an op parameter and as a post-op.
TEST(CpuGraphFormat, EveryAlgorithmRoundTrips) {
  CpuGraph g;
  g.num_inputs = 1;
  const int32_t x = add(g, input(0, {2, 3, 4, 4}));
  for (uint8_t a = 0; a < kNumEltwiseAlgs; ++a) {
    const int32_t y = op(g, OpKind::Eltwise, {x}, value({2, 3, 4, 4}),
                         EltwiseParams{static_cast<EltwiseAlg>(a), 0.25f, 2});
    op(g, OpKind::Binary, {y, x}, value({2, 3, 4, 4}), BinaryParams{},
       {eltwise(static_cast<EltwiseAlg>(a), 1, 2)});
  }
  for (uint8_t a = 0; a < kNumBinaryAlgs; ++a) {
    op(g, OpKind::Binary, {x, x}, value({2, 3, 4, 4}), BinaryParams{static_cast<BinaryAlg>(a)});
  }
  for (uint8_t a = 0; a < kNumPoolAlgs; ++a) {
    op(g, OpKind::Pool, {x}, value({2, 3, 4, 4}),
       PoolParams{static_cast<PoolAlg>(a), {1, 1}, {1, 1}, {0, 0}, {0, 0}, {1, 1}});
  }
  for (uint8_t a = 0; a < kNumReduceAlgs; ++a) {
    op(g, OpKind::Reduce, {x}, value({2, 3}), ReduceParams{static_cast<ReduceAlg>(a), {2, 3}});
  }
  g.outputs = {g.ops.back().output};
  g.output_dim_orders = {{}};
  std::string why;
  std::optional<CpuGraph> back = parse(serialize(g), &why);
  ASSERT_TRUE(back) << why;
  expect_same(g, *back);
}

TEST(CpuGraphFormat, TruncatedOrPaddedRefused) {
  const std::vector<uint8_t> blob = serialize(every_kind());
  for (size_t n = 0; n < blob.size(); ++n) {
    const std::string why = reason(std::span<const uint8_t>(blob.data(), n));
    EXPECT_NE(why, "accepted") << "truncated at " << n;
    EXPECT_FALSE(why.empty()) << "truncated at " << n;
  }
  EXPECT_NE(reason(std::span<const uint8_t>(blob.data(), blob.size() - 8)).find("truncated"),
            std::string::npos);
  std::vector<uint8_t> padded = blob;
  padded.push_back(0);
  EXPECT_NE(reason(padded).find("truncated or padded"), std::string::npos) << reason(padded);
}

// Every byte flipped three ways: refused with a reason, or a graph that passes every check and
// comes back the same through serialize and parse. Never a crash (ASan).
TEST(CpuGraphFormat, EveryByteFlipped) {
  for (const CpuGraph& g : {every_kind(), small_cnn()}) {
    const std::vector<uint8_t> blob = serialize(g);
    size_t refused = 0;
    for (size_t i = 0; i < blob.size(); ++i) {
      for (const uint8_t flip : std::array<uint8_t, 3>{0x01, 0x80, 0xff}) {
        std::vector<uint8_t> bad = blob;
        bad[i] ^= flip;
        std::string why;
        std::optional<CpuGraph> got = parse(bad, &why);
        if (!got) {
          EXPECT_FALSE(why.empty()) << "byte " << i;
          ++refused;
          continue;
        }
        const std::vector<uint8_t> again = serialize(*got);
        std::optional<CpuGraph> back = parse(again, &why);
        ASSERT_TRUE(back) << "byte " << i << ": " << why;
        EXPECT_EQ(serialize(*back), again) << "byte " << i;
      }
    }
    EXPECT_GT(refused, blob.size());  // most flips are refused
  }
}

TEST(CpuGraphFormat, ForeignOrOldBlobRefused) {
  std::vector<uint8_t> blob = serialize(small_cnn());
  std::vector<uint8_t> wrong = blob;
  std::memcpy(wrong.data() + 8, "XCPU", 4);
  EXPECT_NE(reason(wrong).find("not a cpu backend blob (identifier \"XCPU\""), std::string::npos)
      << reason(wrong);
  wrong[8] = 0x07;
  EXPECT_NE(reason(wrong).find("\\x07CPU"), std::string::npos) << reason(wrong);

  std::vector<uint8_t> old = {'E', 'M', 'B', 'R', 'C', 'P', 'U', '1', 4, 0, 0, 0, 0};
  EXPECT_NE(reason(old).find("compile the program again"), std::string::npos) << reason(old);
  EXPECT_NE(reason(std::vector<uint8_t>(3, 0)).find("not a cpu backend blob"), std::string::npos);

  // The right size and identifier, a root offset past the end.
  std::vector<uint8_t> junk(32, 0);
  const uint32_t size = 28, root = 4000;
  std::memcpy(junk.data(), &size, 4);
  std::memcpy(junk.data() + 4, &root, 4);
  std::memcpy(junk.data() + 8, "ECPU", 4);
  EXPECT_NE(reason(junk).find("not a valid flatbuffer"), std::string::npos) << reason(junk);
}

// A vector of int64 at 4 mod 8 (found by cpu_graph_fuzz): flatbuffers 2.0.8's verifier checks
// the alignment of a vector's length only; reading the elements would be a misaligned load.
TEST(CpuGraphFormat, MisalignedVectorRefused) {
  std::ifstream in(std::filesystem::path(EMBER_CPU_TESTDATA) / "fuzz_regressions" /
                       "misaligned_long_vector.ecpu",
                   std::ios::binary);
  const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  ASSERT_FALSE(blob.empty());
  EXPECT_NE(reason(blob).find("a vector of 64-bit integers is misaligned"), std::string::npos)
      << reason(blob);
}

TEST(CpuGraphFormat, OtherVersionRefused) {
  flatbuffers::FlatBufferBuilder fbb;
  fb::FinishSizePrefixedGraphBuffer(fbb, fb::CreateGraph(fbb, /*version=*/4));
  const std::string why = reason(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
  EXPECT_NE(why.find("blob version 4, this runtime reads 6"), std::string::npos) << why;
}

// every_kind() as version 5 wrote it (positional parameters: lists of ints and floats): it passes
// the flatbuffers verifier and is refused by its version, never misread.
TEST(CpuGraphFormat, Version5BlobRefused) {
  std::ifstream in(std::filesystem::path(EMBER_CPU_TESTDATA) / "v5_every_kind.ecpu",
                   std::ios::binary);
  const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  ASSERT_FALSE(blob.empty());
  const std::string why = reason(blob);
  EXPECT_NE(why.find("blob version 5, this runtime reads 6: compile the program again"),
            std::string::npos)
      << why;
}

// What a hand-made op holds besides its kind and tensors (for what a CpuGraph cannot hold).
struct HandMadeOp {
  fb::OpParams type = fb::OpParams::NONE;
  flatbuffers::Offset<void> params{};
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::PostOp>>> post_ops{};
};

// A blob of this format's version holding one op of `kind` reading tensor 0 (an input of dims
// {4}) or nothing (-1) as each of `inputs` and writing tensor 1; `make` writes the rest of it in
// the blob's builder.
std::vector<uint8_t> one_op_blob(
    OpKind kind, const std::vector<int32_t>& inputs,
    const std::function<HandMadeOp(flatbuffers::FlatBufferBuilder&)>& make) {
  flatbuffers::FlatBufferBuilder fbb;
  const HandMadeOp made = make(fbb);
  const auto o = fb::CreateOp(fbb, static_cast<uint8_t>(kind), fbb.CreateVector(inputs), 1,
                              made.post_ops, made.type, made.params);
  const std::vector<int64_t> dims = {4};
  const auto t0 =
      fb::CreateTensor(fbb, static_cast<uint8_t>(TensorKind::Input), 0, fbb.CreateVector(dims));
  const auto t1 = fb::CreateTensor(fbb, static_cast<uint8_t>(TensorKind::Intermediate), 0,
                                   fbb.CreateVector(dims));
  fb::FinishSizePrefixedGraphBuffer(
      fbb, fb::CreateGraph(fbb, /*version=*/6, 0, 1, 0, 0,
                           fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Tensor>>{t0, t1}),
                           fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Op>>{o})));
  return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

TEST(CpuGraphFormat, OutOfRangeEnumRefused) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  CpuGraph g = small_cnn();
  g.ops[0].kind = static_cast<OpKind>(kNumOpKinds);
  EXPECT_NE(refused(g).find("op 0: kind out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[0].post_ops[0].alg = static_cast<EltwiseAlg>(kNumEltwiseAlgs);
  EXPECT_NE(refused(g).find("op 0: post-op out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[1].pool().alg = static_cast<PoolAlg>(kNumPoolAlgs);
  EXPECT_NE(refused(g).find("op 1: pooling parameters out of range"), std::string::npos);
  g = small_cnn();
  g.tensors[0].kind = static_cast<TensorKind>(200);
  EXPECT_NE(refused(g).find("tensor 0: kind out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.tensors[1].storage = static_cast<WeightStorage>(200);
  EXPECT_NE(refused(g).find("tensor 1: weight storage out of range"), std::string::npos);
  g = every_kind();
  for (OpDesc& o : g.ops) {
    if (o.kind == OpKind::GroupQuantMatMul &&
        o.group_quant_matmul().input_quant != InputQuant::None) {
      o.group_quant_matmul().input_quant = static_cast<InputQuant>(kNumInputQuants);
    }
  }
  EXPECT_NE(refused(g).find("grouped quantized matmul needs"), std::string::npos) << refused(g);
  g = small_cnn();
  g.precision = static_cast<Precision>(200);
  EXPECT_NE(refused(g).find("precision out of range"), std::string::npos) << refused(g);

  CpuGraph e;
  e.num_inputs = 1;
  const int32_t x = add(e, input(0, {4}));
  op(e, OpKind::Eltwise, {x}, value({4}), EltwiseParams{static_cast<EltwiseAlg>(kNumEltwiseAlgs)});
  op(e, OpKind::Binary, {x, x}, value({4}), BinaryParams{static_cast<BinaryAlg>(kNumBinaryAlgs)});
  op(e, OpKind::Reduce, {x}, value({}), ReduceParams{static_cast<ReduceAlg>(kNumReduceAlgs), {0}});
  EXPECT_NE(refused(e).find("op 0: eltwise parameters out of range"), std::string::npos);
  e.ops[0].eltwise().alg = EltwiseAlg::Relu;
  EXPECT_NE(refused(e).find("op 1: binary parameters out of range"), std::string::npos);
  e.ops[1].binary().alg = BinaryAlg::Add;
  EXPECT_NE(refused(e).find("op 2: reduction parameters out of range"), std::string::npos);

  // A post-op's is_sum other than 0 or 1, a convolution's transposed flag other than 0 or 1 (a
  // CpuGraph holds neither).
  std::string why = reason(one_op_blob(OpKind::Binary, {0, 0}, [](auto& fbb) {
    const auto p = fb::CreatePostOp(fbb, /*is_sum=*/2, /*tensor=*/0);
    return HandMadeOp{fb::OpParams::BinaryParams, fb::CreateBinaryParams(fbb).Union(),
                      fbb.CreateVector(std::vector<flatbuffers::Offset<fb::PostOp>>{p})};
  }));
  EXPECT_NE(why.find("op 0: post-op out of range"), std::string::npos) << why;
  why = reason(one_op_blob(OpKind::Conv, {0, 0, -1}, [](auto& fbb) {
    const auto one = fbb.CreateVector(std::vector<int64_t>{1});
    const auto zero = fbb.CreateVector(std::vector<int64_t>{0});
    return HandMadeOp{
        fb::OpParams::ConvParams,
        fb::CreateConvParams(fbb, 1, /*transposed=*/2, one, zero, zero, one, zero).Union()};
  }));
  EXPECT_NE(why.find("op 0: convolution groups or transposed flag out of range"), std::string::npos)
      << why;
}

// Parameters of another kind's type, or none, are refused with the op's index and both types.
TEST(CpuGraphFormat, ParametersOfAnotherKindRefused) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  CpuGraph g = small_cnn();
  g.ops[0].params = g.ops[1].params;
  EXPECT_NE(refused(g).find("op 0: parameters of type PoolParams, op kind 0 takes ConvParams"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[0].params = NoParams{};
  EXPECT_NE(refused(g).find("op 0: parameters missing, op kind 0 takes ConvParams"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[0].kind = OpKind::QuantConv;  // a Conv's parameters
  EXPECT_NE(refused(g).find("op 0: parameters of type ConvParams, op kind 11 takes "
                            "QuantConvParams"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[2].params = SliceParams{};  // on a Reshape
  EXPECT_NE(refused(g).find("op 2: parameters of type SliceParams, op kind 9 takes none"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[3].params = NoParams{};
  EXPECT_NE(refused(g).find("op 3: parameters missing, op kind 1 takes MatMulParams"),
            std::string::npos)
      << refused(g);
  // Every kind against every other kind's parameters.
  const CpuGraph every = every_kind();
  for (size_t i = 0; i < every.ops.size(); ++i) {
    for (size_t j = 0; j < every.ops.size(); ++j) {
      if (every.ops[i].params.index() == every.ops[j].params.index()) continue;
      g = every;
      g.ops[i].params = every.ops[j].params;
      const std::string why = refused(g);
      EXPECT_EQ(why.rfind("op " + std::to_string(i) + ": parameters ", 0), 0u)
          << i << " <- " << j << ": " << why;
    }
  }

  // A union type past the last table, and a type without its table.
  std::string why = reason(one_op_blob(OpKind::Eltwise, {0}, [](auto& fbb) {
    return HandMadeOp{static_cast<fb::OpParams>(99), fb::CreateEltwiseParams(fbb).Union()};
  }));
  EXPECT_NE(why.find("op 0: parameters of type 99, op kind 3 takes EltwiseParams"),
            std::string::npos)
      << why;
  why = reason(one_op_blob(OpKind::Eltwise, {0}, [](auto&) {
    return HandMadeOp{fb::OpParams::EltwiseParams, {}};
  }));
  EXPECT_NE(why.find("op 0: parameters missing, op kind 3 takes EltwiseParams"), std::string::npos)
      << why;
  // Tables without a part they need.
  why = reason(one_op_blob(OpKind::QuantConv, {0, 0, -1, 0}, [](auto& fbb) {
    const fb::QuantParams src(0.5f, 0);
    return HandMadeOp{fb::OpParams::QuantConvParams,
                      fb::CreateQuantConvParams(fbb, 0, &src).Union()};
  }));
  EXPECT_NE(why.find("op 0: quantized convolution needs its geometry"), std::string::npos) << why;
  why = reason(one_op_blob(OpKind::QuantMatMul, {0, 0, -1, 0}, [](auto& fbb) {
    return HandMadeOp{fb::OpParams::QuantMatMulParams, fb::CreateQuantMatMulParams(fbb).Union()};
  }));
  EXPECT_NE(why.find("op 0: quantized matmul needs"), std::string::npos) << why;
  why = reason(one_op_blob(OpKind::MatMul, {0, 0, -1}, [](auto& fbb) {
    const fb::QuantParams a(0.5f, 0);
    return HandMadeOp{fb::OpParams::MatMulParams, fb::CreateMatMulParams(fbb, &a).Union()};
  }));
  EXPECT_NE(why.find("op 0: matmul of int8 values needs two scales and zero points"),
            std::string::npos)
      << why;
}

// A [long] of one element whose data lies at 4 mod 8 from the blob's start for one of `pad` 0
// and 1 (which one depends on what the builder holds already): flatbuffers 2.0.8's verifier
// passes it.
flatbuffers::Offset<flatbuffers::Vector<int64_t>> odd_longs(flatbuffers::FlatBufferBuilder& fbb,
                                                            int pad) {
  for (int i = 0; i < pad; ++i) fbb.PushElement<int32_t>(0);
  fbb.StartVector(2, sizeof(int32_t));
  fbb.PushElement<int32_t>(0);
  fbb.PushElement<int32_t>(1);
  return flatbuffers::Offset<flatbuffers::Vector<int64_t>>(fbb.EndVector(1));
}

// Every vector of 64-bit integers among the parameters, misaligned, is refused before it is read.
TEST(CpuGraphFormat, MisalignedParameterVectorRefused) {
  using Longs = flatbuffers::Offset<flatbuffers::Vector<int64_t>>;
  // Whether the blob `make(pad)` is refused as misaligned for a pad of 0 or 1.
  auto refused = [](const std::function<std::vector<uint8_t>(int)>& make) {
    bool any = false;
    for (int pad : {0, 1}) {
      any = any || reason(make(pad)).find("a vector of 64-bit integers is misaligned") !=
                       std::string::npos;
    }
    return any;
  };
  // Five vectors, the `odd`-th misaligned.
  auto five = [](flatbuffers::FlatBufferBuilder& fbb, int odd, int pad) {
    std::array<Longs, 5> v;
    for (int k = 0; k < 5; ++k) {
      v[k] = k == odd ? odd_longs(fbb, pad) : fbb.CreateVector(std::vector<int64_t>{1});
    }
    return v;
  };
  for (int odd = 0; odd < 5; ++odd) {
    SCOPED_TRACE("vector " + std::to_string(odd));
    EXPECT_TRUE(refused([&](int pad) {
      return one_op_blob(OpKind::Conv, {0, 0, -1}, [&](flatbuffers::FlatBufferBuilder& fbb) {
        const auto v = five(fbb, odd, pad);
        return HandMadeOp{fb::OpParams::ConvParams,
                          fb::CreateConvParams(fbb, 1, 0, v[0], v[1], v[2], v[3], v[4]).Union()};
      });
    })) << "conv";
    EXPECT_TRUE(refused([&](int pad) {
      return one_op_blob(
          OpKind::QuantConv, {0, 0, -1, 0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
            const auto v = five(fbb, odd, pad);
            const auto conv = fb::CreateConvParams(fbb, 1, 0, v[0], v[1], v[2], v[3], v[4]);
            const fb::QuantParams src(0.5f, 0);
            return HandMadeOp{fb::OpParams::QuantConvParams,
                              fb::CreateQuantConvParams(fbb, conv, &src).Union()};
          });
    })) << "quantized conv";
    EXPECT_TRUE(refused([&](int pad) {
      return one_op_blob(OpKind::Pool, {0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
        const auto v = five(fbb, odd, pad);
        return HandMadeOp{fb::OpParams::PoolParams,
                          fb::CreatePoolParams(fbb, 0, v[0], v[1], v[2], v[3], v[4]).Union()};
      });
    })) << "pool";
  }
  EXPECT_TRUE(refused([&](int pad) {
    return one_op_blob(OpKind::Permute, {0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
      const Longs perm = odd_longs(fbb, pad);
      return HandMadeOp{fb::OpParams::PermuteParams, fb::CreatePermuteParams(fbb, perm).Union()};
    });
  })) << "permute";
  EXPECT_TRUE(refused([&](int pad) {
    return one_op_blob(OpKind::Reduce, {0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
      const Longs dims = odd_longs(fbb, pad);
      return HandMadeOp{fb::OpParams::ReduceParams, fb::CreateReduceParams(fbb, 0, dims).Union()};
    });
  })) << "reduce";
}

// Each float parameter keeps its every bit through the blob: -0, the smallest subnormal, NaN.
TEST(CpuGraphFormat, FloatParametersKeepEveryBit) {
  for (const float f :
       {-0.f, std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::quiet_NaN()}) {
    CpuGraph g = every_kind();
    for (OpDesc& o : g.ops) {
      if (o.kind == OpKind::Eltwise) o.eltwise().alpha = o.eltwise().beta = f;
      if (o.kind == OpKind::LayerNorm && !std::isnan(f)) o.norm().eps = f;
    }
    g.ops[1].quant_conv().src.zero_point = -0.f;
    std::string why;
    const std::optional<CpuGraph> back = parse(serialize(g), &why);
    ASSERT_TRUE(back) << why;
    expect_same(g, *back);
  }
}

TEST(CpuGraphFormat, TensorIdOutOfRangeRefused) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  const int32_t n = static_cast<int32_t>(small_cnn().tensors.size());
  CpuGraph g = small_cnn();
  g.ops[0].inputs[1] = n;
  EXPECT_NE(refused(g).find("op 0: reads an undefined tensor"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[0].inputs[0] = -2;
  EXPECT_NE(refused(g).find("op 0: reads an undefined tensor"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[1].inputs[0] = g.ops[2].output;  // read before it is written
  EXPECT_NE(refused(g).find("op 1: reads an undefined tensor"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[0].output = n;
  EXPECT_NE(refused(g).find("op 0: output is not a fresh intermediate tensor"), std::string::npos);
  g = small_cnn();
  g.ops[2].output = g.ops[1].output;  // written twice
  EXPECT_NE(refused(g).find("op 2: output is not a fresh intermediate tensor"), std::string::npos);
  g = small_cnn();
  g.ops[0].post_ops.push_back(sum(n));
  EXPECT_NE(refused(g).find("op 0: sum post-op reads an undefined tensor"), std::string::npos);
  g = small_cnn();
  g.outputs[0] = n;
  EXPECT_NE(refused(g).find("output 0: names an undefined tensor"), std::string::npos)
      << refused(g);
  g = small_cnn();
  g.tensors[0].index = 2;  // input 2 of 2
  EXPECT_NE(refused(g).find("tensor 0: names a missing input"), std::string::npos) << refused(g);
  g = small_cnn();
  g.tensors[1].index = 7;  // weight 7 of 4
  EXPECT_NE(refused(g).find("tensor 1: names a missing weight"), std::string::npos) << refused(g);
}

// The semantic checks the flatbuffer's verifier cannot make: each refused with its reason.
TEST(CpuGraphFormat, SemanticChecksRefuse) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  struct Case {
    const char* want;
    void (*edit)(CpuGraph&);
  };
  const Case cases[] = {
      {"bad header (input or symbol count)", [](CpuGraph& g) { g.num_inputs = 65537; }},
      {"bad header (input or symbol count)", [](CpuGraph& g) { g.num_symbols = 3; }},
      {"weight 0: oversized key", [](CpuGraph& g) { g.weights[0].key.assign(4097, 'k'); }},
      {"weight 0: oversized", [](CpuGraph& g) { g.weights[0].nbytes = uint64_t{1} << 43; }},
      {"tensor 0: rank above 6", [](CpuGraph& g) { g.tensors[0].dims.assign(7, 1); }},
      {"tensor 0: a bad size or dim order", [](CpuGraph& g) { g.tensors[0].dims[1] = -3; }},
      {"tensor 0: a bad size or dim order",
       [](CpuGraph& g) {
         g.tensors[0].dims = {1 << 20, 1 << 20, 2};
       }},
      {"tensor 0: a bad size or dim order",
       [](CpuGraph& g) {
         g.tensors[0].dim_order = {0, 1};
       }},
      {"tensor 0: a bad size or dim order",
       [](CpuGraph& g) {
         g.tensors[0].dim_order = {0, 1, 1, 2};
       }},
      {"tensor 0: a bad batch symbol", [](CpuGraph& g) { g.tensors[0].batch_symbol = 0; }},
      {"tensor 1: a bad batch symbol",
       [](CpuGraph& g) {
         g.num_symbols = 1;
         g.tensors[0].batch_symbol = 0;
         g.tensors[1].batch_symbol = 0;  // a weight
       }},
      {"a batch symbol is the batch of no input", [](CpuGraph& g) { g.num_symbols = 1; }},
      {"tensor 3: an integer tensor that is not a weight",
       [](CpuGraph& g) { g.tensors[3].storage = WeightStorage::Int8; }},
      {"tensor 1: names a missing weight or its size disagrees",
       [](CpuGraph& g) { g.weights[0].nbytes -= 4; }},
      {"tensor 1: an int4 weight whose last dim is odd",
       [](CpuGraph& g) {
         g.tensors[1].storage = WeightStorage::Int4;
         g.weights[0].nbytes = 54;
       }},
      {"op 0: reads integer weights as floats",
       [](CpuGraph& g) {
         g.tensors[1].dims = {4, 3, 3, 2};
         g.tensors[1].storage = WeightStorage::Int8;
         g.weights[0].nbytes = 72;
       }},
      {"op 0: more than 1024 inputs", [](CpuGraph& g) { g.ops[0].inputs.assign(1025, 0); }},
      {"op 0: oversized parameters", [](CpuGraph& g) { g.ops[0].conv().stride.assign(7, 1); }},
      {"op 1: oversized parameters", [](CpuGraph& g) { g.ops[1].pool().pad_r.assign(7, 0); }},
      {"op 0: more than 16 post-ops",
       [](CpuGraph& g) { g.ops[0].post_ops.assign(17, eltwise(EltwiseAlg::Relu)); }},
      {"op 0: convolution stride, paddings, dilation and output padding differ in length",
       [](CpuGraph& g) { g.ops[0].conv().output_padding.pop_back(); }},
      {"op 0: convolution stride, paddings, dilation and output padding differ in length",
       [](CpuGraph& g) { g.ops[0].conv().pad_l.push_back(1); }},
      {"op 0: convolution of 0 spatial dims (1 to 3)",
       [](CpuGraph& g) { g.ops[0].conv().stride.clear(); }},
      {"op 0: convolution of 4 spatial dims (1 to 3)",
       [](CpuGraph& g) {
         ConvParams& c = g.ops[0].conv();
         for (auto* v : {&c.stride, &c.pad_l, &c.pad_r, &c.dilation, &c.output_padding}) {
           v->resize(4, 1);
         }
       }},
      {"op 0: convolution groups or transposed flag out of range",
       [](CpuGraph& g) { g.ops[0].conv().groups = 0; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().stride[0] = 0; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().stride[1] = 4097; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().pad_l[1] = -1; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().pad_r[0] = -4097; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().dilation[0] = 0; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().output_padding[1] = -1; }},
      {"op 0: convolution needs src, weight, bias and parameters",
       [](CpuGraph& g) { g.ops[0].inputs.pop_back(); }},
      {"op 1: pooling kernel, stride, paddings and dilation differ in length",
       [](CpuGraph& g) { g.ops[1].pool().dilation.pop_back(); }},
      {"op 1: pooling kernel, stride, paddings and dilation differ in length",
       [](CpuGraph& g) { g.ops[1].pool().stride.push_back(1); }},
      {"op 1: pooling parameters out of range",
       [](CpuGraph& g) { g.ops[1].pool().kernel.clear(); }},
      {"op 1: pooling parameters out of range",
       [](CpuGraph& g) {
         PoolParams& p = g.ops[1].pool();
         for (auto* v : {&p.kernel, &p.stride, &p.pad_l, &p.pad_r, &p.dilation}) v->resize(4, 1);
       }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().kernel[0] = 0; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().stride[1] = 4097; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().pad_l[0] = -1; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().pad_r[1] = 4097; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().dilation[0] = 0; }},
      {"op 1: post-ops on an op that takes none",
       [](CpuGraph& g) { g.ops[1].post_ops.push_back(eltwise(EltwiseAlg::Relu)); }},
      {"op 3: matmul needs a, b and bias", [](CpuGraph& g) { g.ops[3].inputs.pop_back(); }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {0.1f, 0.f}, {0.2f, 128.f}};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {0.1f, 0.5f}, {0.2f, 0.f}};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {-0.1f, 0.f}, {0.2f, 0.f}};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {0.1f, 0.f}, {0.f, 0.f}};
       }},
      {"output 0: a bad dim order",
       [](CpuGraph& g) {
         g.output_dim_orders[0] = {0, 0};
       }},
      {"output 0: a bad dim order", [](CpuGraph& g) { g.output_dim_orders[0].assign(7, 0); }},
      {"output 0: names an undefined tensor or integer weights",
       [](CpuGraph& g) {
         g.tensors[1].dims = {4, 3, 3, 2};
         g.tensors[1].storage = WeightStorage::Int8;
         g.weights[0].nbytes = 72;
         g.ops.clear();
         g.outputs[0] = 1;
       }},
  };
  for (const Case& c : cases) {
    CpuGraph g = small_cnn();
    c.edit(g);
    EXPECT_NE(refused(g).find(c.want), std::string::npos) << c.want << " <- " << refused(g);
  }
}

// The first op of `kind` in `g`.
OpDesc& first(CpuGraph& g, OpKind kind) {
  for (OpDesc& o : g.ops) {
    if (o.kind == kind) return o;
  }
  ADD_FAILURE() << "no op of kind " << static_cast<int>(kind);
  return g.ops.front();
}

// Each parameter's range, op kind by op kind, on every_kind(): refused with its reason.
TEST(CpuGraphFormat, ParameterRangesRefused) {
  struct Case {
    const char* want;
    void (*edit)(CpuGraph&);
  };
  const Case cases[] = {
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) { first(g, OpKind::QuantConv).quant_conv().src.scale = 0; }},
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) {
         first(g, OpKind::QuantConv).quant_conv().src.scale =
             std::numeric_limits<float>::quiet_NaN();
       }},
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) { first(g, OpKind::QuantConv).quant_conv().conv.transposed = true; }},
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) {
         ConvParams& c = first(g, OpKind::QuantConv).quant_conv().conv;
         for (auto* v : {&c.stride, &c.pad_l, &c.pad_r, &c.dilation, &c.output_padding}) {
           v->pop_back();
         }
       }},
      {"quantized matmul needs a, weight, bias, scales, parameters",
       [](CpuGraph& g) { first(g, OpKind::QuantMatMul).quant_matmul().src.scale = -1; }},
      {"grouped quantized matmul needs",
       [](CpuGraph& g) { first(g, OpKind::GroupQuantMatMul).group_quant_matmul().group = 1; }},
      {"grouped quantized matmul needs",  // an eps without a quantization
       [](CpuGraph& g) { first(g, OpKind::GroupQuantMatMul).group_quant_matmul().eps = 1e-6f; }},
      {"grouped quantized matmul needs",
       [](CpuGraph& g) {
         for (OpDesc& o : g.ops) {
           if (o.kind == OpKind::GroupQuantMatMul &&
               o.group_quant_matmul().input_quant != InputQuant::None) {
             o.group_quant_matmul().eps = -1;
           }
         }
       }},
      {"grouped quantized matmul needs",
       [](CpuGraph& g) {
         for (OpDesc& o : g.ops) {
           if (o.kind == OpKind::GroupQuantMatMul &&
               o.group_quant_matmul().input_quant != InputQuant::None) {
             o.group_quant_matmul().eps = std::numeric_limits<float>::quiet_NaN();
           }
         }
       }},
      {"grouped quantized matmul needs",  // an input quantized already, and to quantize
       [](CpuGraph& g) {
         OpDesc& o = first(g, OpKind::GroupQuantMatMul);
         o.group_quant_matmul() = {4, InputQuant::PerToken, 0};
         o.inputs.push_back(o.inputs[0]);
         o.inputs.push_back(o.inputs[0]);
       }},
      {"softmax parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Softmax).softmax().axis = -1; }},
      {"softmax parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Softmax).softmax().axis = kMaxCpuRank; }},
      {"layer norm parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::LayerNorm).norm().eps = -1e-5f; }},
      {"layer norm parameters out of range",
       [](CpuGraph& g) {
         first(g, OpKind::LayerNorm).norm().eps = std::numeric_limits<float>::quiet_NaN();
       }},
      {"batch norm parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::BatchNorm).norm().eps = -1e-5f; }},
      {"concat parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Concat).concat().axis = -1; }},
      {"concat parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Concat).concat().axis = kMaxCpuRank; }},
      {"reduction parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims.clear(); }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) {
         first(g, OpKind::Reduce).reduce().dims = {1, 1};
       }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) {
         first(g, OpKind::Reduce).reduce().dims = {1, 0};
       }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims = {kMaxCpuRank}; }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims = {-1}; }},
      {"slice parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Slice).slice().dim = kMaxCpuRank; }},
      {"slice parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Slice).slice().dim = -1; }},
      {"slice parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Slice).slice().start = -1; }},
      {"permute is not a permutation",
       [](CpuGraph& g) {
         first(g, OpKind::Permute).permute().perm = {1, 1};
       }},
      {"permute is not a permutation",
       [](CpuGraph& g) {
         first(g, OpKind::Permute).permute().perm = {0, 2};
       }},
      {"permute is not a permutation",
       [](CpuGraph& g) {
         first(g, OpKind::Permute).permute().perm = {-1, 0};
       }},
      {"oversized parameters",
       [](CpuGraph& g) { first(g, OpKind::Permute).permute().perm.assign(7, 0); }},
      {"oversized parameters",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims.assign(7, 0); }},
  };
  for (const Case& c : cases) {
    CpuGraph g = every_kind();
    c.edit(g);
    const std::string why = reason(serialize(g));
    EXPECT_NE(why.find(c.want), std::string::npos) << c.want << " <- " << why;
  }
}

std::vector<std::pair<std::string, CpuGraph>> seed_graphs() {
  CpuGraph dynamic = small_cnn();
  dynamic.num_symbols = 1;
  for (TensorDesc& t : dynamic.tensors) {
    if (t.kind != TensorKind::Weight) t.batch_symbol = 0;
  }
  dynamic.tensors[0].dims[0] = 8;
  return {{"every_kind", every_kind()}, {"small_cnn", small_cnn()}, {"dynamic", dynamic}};
}

// The committed seeds of the fuzz target (fuzz_replay_cpu_graph, scripts/fuzz) are blobs this
// parse accepts; EMBER_WRITE_CPU_FUZZ_SEEDS=1 writes them again (after a format change).
TEST(CpuGraphFormat, FuzzSeedsParse) {
  const std::filesystem::path dir = std::filesystem::path(EMBER_CPU_TESTDATA) / "fuzz_seeds";
  if (std::getenv("EMBER_WRITE_CPU_FUZZ_SEEDS") != nullptr) {
    std::filesystem::create_directories(dir);
    for (const auto& [name, g] : seed_graphs()) {
      const std::vector<uint8_t> blob = serialize(g);
      std::ofstream out(dir / (name + ".ecpu"), std::ios::binary);
      out.write(reinterpret_cast<const char*>(blob.data()),
                static_cast<std::streamsize>(blob.size()));
    }
  }
  size_t seeds = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(in),
                                    std::istreambuf_iterator<char>()};
    std::string why;
    EXPECT_TRUE(parse(blob, &why)) << e.path() << ": " << why;
    ++seeds;
  }
  EXPECT_GE(seeds, seed_graphs().size());
}

}  // namespace
}  // namespace ember::cpu
