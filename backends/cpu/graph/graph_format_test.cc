// The cpu backend's blob (graph/graph_format.h, graph/cpu_graph.fbs): a graph with every op kind
// and field comes back the same; truncated, padded, corrupted, foreign and out-of-range blobs are
// refused with a reason and never crash (run it under ASan). The committed fuzz seeds
// (testdata/fuzz_seeds) parse; EMBER_WRITE_CPU_FUZZ_SEEDS=1 rewrites them from the graphs here.
// Past fuzz findings are in testdata/fuzz_regressions.
#include <array>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
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
           std::vector<int64_t> ints = {}, std::vector<float> floats = {},
           std::vector<PostOp> post_ops = {}) {
  OpDesc o;
  o.kind = kind;
  o.inputs = std::move(inputs);
  o.output = add(g, std::move(out));
  o.ints = std::move(ints);
  o.floats = std::move(floats);
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

// Every op kind, every field of every record set to something other than its default: a dynamic
// batch, dim orders, int8 and int4 weights, a bool input, a 0-d weight, a key with a NUL and
// UTF-8, post-ops of both kinds.
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

  const std::vector<int64_t> conv2d = {2, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
  const int32_t conv = op(g, OpKind::Conv, {tx, w_conv, b_conv}, value({4, 8, 8, 8}, 0), conv2d, {},
                          {eltwise(EltwiseAlg::Relu), sum(tx)});
  const int32_t qconv = op(g, OpKind::QuantConv, {tx, w_q, -1, s_q}, value({4, 8, 8, 8}, 0), conv2d,
                           {0.05f, 3}, {eltwise(EltwiseAlg::Clip, -1, 1)});
  const int32_t bn =
      op(g, OpKind::BatchNorm, {conv, -1, b_conv, mean, var}, value({4, 8, 8, 8}, 0), {}, {1e-5f});
  const int32_t elt =
      op(g, OpKind::Eltwise, {bn}, value({4, 8, 8, 8}, 0), {static_cast<int64_t>(EltwiseAlg::Elu)},
         {0.5f, std::numeric_limits<float>::quiet_NaN()});
  const int32_t pool =
      op(g, OpKind::Pool, {elt}, value({4, 8, 4, 4}, 0),
         {static_cast<int64_t>(PoolAlg::AvgExcludePad), 2, 2, 2, 2, 2, 0, 1, 0, 1, 1, 1});
  const int32_t bin = op(g, OpKind::Binary, {pool, pool}, value({4, 8, 4, 4}, 0),
                         {static_cast<int64_t>(BinaryAlg::Mul)}, {}, {sum(pool)});
  TensorDesc flat = value({4, 128}, 0);
  flat.dim_order = {1, 0};
  const int32_t reshape = op(g, OpKind::Reshape, {bin}, flat);
  const int32_t perm = op(g, OpKind::Permute, {ty}, value({16, 4}), {1, 0});
  const int32_t soft = op(g, OpKind::Softmax, {perm}, value({16, 4}), {1});
  const int32_t mm =
      op(g, OpKind::MatMul, {ty, w_mm, -1}, value({4, 6}), {}, {}, {eltwise(EltwiseAlg::Swish, 1)});
  const int32_t qmm =
      op(g, OpKind::QuantMatMul, {ty, w_q8, -1, s_q8}, value({4, 6}), {}, {0.1f, -2});
  const int32_t gmm = op(g, OpKind::GroupQuantMatMul, {ty, w_g4, -1, s_g, z_g}, value({4, 6}), {4});
  const int32_t gmm8 =
      op(g, OpKind::GroupQuantMatMul, {ty, w_q8, -1, s_g, -1}, value({4, 6}), {4, 1}, {1e-6f});
  const int32_t gmm_t = op(g, OpKind::GroupQuantMatMul, {ty, w_q8, -1, s_g, -1}, value({4, 6}),
                           {4, static_cast<int64_t>(InputQuant::PerTensor)}, {0.000244140625f});
  const int32_t ln = op(g, OpKind::LayerNorm, {ty, gamma, -1}, value({4, 16}), {}, {1e-5f});
  const int32_t cat =
      op(g, OpKind::Concat, {mm, qmm, gmm, gmm8, gmm_t, w_mm_t}, value({30, 6}), {0});
  const int32_t red =
      op(g, OpKind::Reduce, {cat}, value({30}), {static_cast<int64_t>(ReduceAlg::Mean), 1});
  const int32_t slice = op(g, OpKind::Slice, {cat}, value({3, 6}), {0, 2});
  const int32_t sel = op(g, OpKind::Where, {tmask, mm, fill}, value({4, 6}));
  g.outputs = {reshape, soft, ln, red, slice, qconv, sel};
  g.output_dim_orders = {{}, {1, 0}, {}, {}, {}, {0, 3, 1, 2}, {}};
  return g;
}

// A convolution, a relu, a pooling and a linear: the shape of what the compiler writes most.
CpuGraph small_cnn() {
  CpuGraph g;
  g.num_inputs = 2;
  const int32_t x = add(g, input(0, {1, 3, 8, 8}));
  const int32_t w = weight(g, "conv1.weight", {4, 3, 3, 3});
  const int32_t b = weight(g, "conv1.bias", {4});
  const int32_t c = op(g, OpKind::Conv, {x, w, b}, value({1, 4, 8, 8}),
                       {2, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0}, {}, {eltwise(EltwiseAlg::Relu)});
  const int32_t p = op(g, OpKind::Pool, {c}, value({1, 4, 4, 4}),
                       {static_cast<int64_t>(PoolAlg::Max), 2, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1});
  const int32_t f = op(g, OpKind::Reshape, {p}, value({1, 64}));
  const int32_t fc = weight(g, "fc.weight", {64, 10});
  const int32_t y = op(g, OpKind::MatMul, {f, fc, -1}, value({1, 10}));
  g.outputs = {y};
  g.output_dim_orders = {{}};
  return g;
}

std::string reason(std::span<const uint8_t> blob) {
  std::string why;
  std::optional<CpuGraph> g = parse(blob, &why);
  return g ? std::string("accepted") : why;
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
    EXPECT_EQ(o.ints, p.ints) << "op " << i;
    ASSERT_EQ(o.floats.size(), p.floats.size()) << "op " << i;
    for (size_t k = 0; k < o.floats.size(); ++k) {  // bit for bit: NaN too
      EXPECT_EQ(std::bit_cast<uint32_t>(o.floats[k]), std::bit_cast<uint32_t>(p.floats[k]));
    }
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
  g.ops[3].floats = {0.031f, -3.f, 0.057f, 127.f};
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
  const std::vector<int64_t> pool = {0, 2, 1, 1, 1, 1, 0, 0, 0, 0, 1, 1};
  for (uint8_t a = 0; a < kNumEltwiseAlgs; ++a) {
    const int32_t y = op(g, OpKind::Eltwise, {x}, value({2, 3, 4, 4}), {a}, {0.25f, 2}, {});
    op(g, OpKind::Binary, {y, x}, value({2, 3, 4, 4}), {0}, {},
       {eltwise(static_cast<EltwiseAlg>(a), 1, 2)});
  }
  for (uint8_t a = 0; a < kNumBinaryAlgs; ++a) {
    op(g, OpKind::Binary, {x, x}, value({2, 3, 4, 4}), {a});
  }
  for (uint8_t a = 0; a < kNumPoolAlgs; ++a) {
    std::vector<int64_t> ints = pool;
    ints[0] = a;
    op(g, OpKind::Pool, {x}, value({2, 3, 4, 4}), ints);
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
  EXPECT_NE(why.find("blob version 4, this runtime reads 5"), std::string::npos) << why;
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
  g.ops[1].ints[0] = kNumPoolAlgs;
  EXPECT_NE(refused(g).find("op 1: pooling parameters out of range"), std::string::npos);
  g = small_cnn();
  g.tensors[0].kind = static_cast<TensorKind>(200);
  EXPECT_NE(refused(g).find("tensor 0: kind out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.tensors[1].storage = static_cast<WeightStorage>(200);
  EXPECT_NE(refused(g).find("tensor 1: weight storage out of range"), std::string::npos);
  g = every_kind();
  for (OpDesc& o : g.ops) {
    if (o.kind == OpKind::GroupQuantMatMul && o.ints.size() == 2) o.ints[1] = 3;  // no InputQuant
  }
  EXPECT_NE(refused(g).find("grouped quantized matmul needs"), std::string::npos) << refused(g);
  g = small_cnn();
  g.precision = static_cast<Precision>(200);
  EXPECT_NE(refused(g).find("precision out of range"), std::string::npos) << refused(g);

  CpuGraph e;
  e.num_inputs = 1;
  const int32_t x = add(e, input(0, {4}));
  op(e, OpKind::Eltwise, {x}, value({4}), {kNumEltwiseAlgs}, {0, 0});
  op(e, OpKind::Binary, {x, x}, value({4}), {kNumBinaryAlgs});
  EXPECT_NE(refused(e).find("op 0: eltwise parameters out of range"), std::string::npos);
  e.ops[0].ints[0] = 0;
  EXPECT_NE(refused(e).find("op 1: binary parameters out of range"), std::string::npos);

  // A post-op's is_sum other than 0 or 1 (a CpuGraph cannot hold one).
  flatbuffers::FlatBufferBuilder fbb;
  const auto p = fb::CreatePostOp(fbb, /*is_sum=*/2, /*tensor=*/0);
  const auto o = fb::CreateOp(fbb, static_cast<uint8_t>(OpKind::Binary),
                              fbb.CreateVector(std::vector<int32_t>{0, 0}), 1,
                              fbb.CreateVector(std::vector<int64_t>{0}), 0,
                              fbb.CreateVector(std::vector<flatbuffers::Offset<fb::PostOp>>{p}));
  const std::vector<int64_t> dims = {4};
  const auto t0 =
      fb::CreateTensor(fbb, static_cast<uint8_t>(TensorKind::Input), 0, fbb.CreateVector(dims));
  const auto t1 = fb::CreateTensor(fbb, static_cast<uint8_t>(TensorKind::Intermediate), 0,
                                   fbb.CreateVector(dims));
  fb::FinishSizePrefixedGraphBuffer(
      fbb, fb::CreateGraph(fbb, 5, 0, 1, 0, 0,
                           fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Tensor>>{t0, t1}),
                           fbb.CreateVector(std::vector<flatbuffers::Offset<fb::Op>>{o})));
  const std::string why = reason(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
  EXPECT_NE(why.find("op 0: post-op out of range"), std::string::npos) << why;
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
      {"op 0: oversized parameters", [](CpuGraph& g) { g.ops[0].ints.assign(65, 1); }},
      {"op 0: oversized parameters", [](CpuGraph& g) { g.ops[0].floats.assign(17, 1); }},
      {"op 0: more than 16 post-ops",
       [](CpuGraph& g) { g.ops[0].post_ops.assign(17, eltwise(EltwiseAlg::Relu)); }},
      {"op 0: convolution parameters have the wrong count",
       [](CpuGraph& g) { g.ops[0].ints.pop_back(); }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].ints[3] = 0; }},
      {"op 1: post-ops on an op that takes none",
       [](CpuGraph& g) { g.ops[1].post_ops.push_back(eltwise(EltwiseAlg::Relu)); }},
      {"op 3: matmul needs a, b and bias", [](CpuGraph& g) { g.ops[3].inputs.pop_back(); }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].floats = {0.1f, 0.f, 0.2f};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].floats = {0.1f, 0.f, 0.2f, 128.f};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].floats = {0.1f, 0.5f, 0.2f, 0.f};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].floats = {-0.1f, 0.f, 0.2f, 0.f};
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
