// The cpu backend's blob (graph/graph_format.h, graph/cpu_graph.fbs) comes back the same through
// serialize and parse: a graph with every op kind and field, every algorithm, every float
// parameter bit for bit, and the same bytes again.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_test_util.h"
#include "ember/backends/cpu/cpu_graph_generated.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace ember::cpu::graph_test {
namespace {

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
void expect_same_params(const PadParams& a, const PadParams& b) {
  EXPECT_EQ(a.before, b.before);
  EXPECT_EQ(a.after, b.after);
  EXPECT_EQ(std::bit_cast<uint32_t>(a.value), std::bit_cast<uint32_t>(b.value));
}
void expect_same_params(const ResizeParams& a, const ResizeParams& b) {
  EXPECT_EQ(a.alg, b.alg);
  EXPECT_EQ(a.align_corners, b.align_corners);
  EXPECT_EQ(a.height, b.height);
  EXPECT_EQ(a.width, b.width);
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
  Result<CpuGraph> back = parse(blob);
  ASSERT_TRUE(back.ok()) << last_error_message();
  expect_same(g, *back);
  EXPECT_EQ(serialize(*back), blob);
  EXPECT_TRUE(flatbuffers::BufferHasIdentifier(blob.data(), "ECPU", /*size_prefixed=*/true));
  // Where the blob is stored unaligned (parse copies it).
  std::vector<uint8_t> shifted(blob.size() + 1);
  std::memcpy(shifted.data() + 1, blob.data(), blob.size());
  back = parse(std::span<const uint8_t>(shifted).subspan(1));
  ASSERT_TRUE(back.ok()) << last_error_message();
  expect_same(g, *back);
}

TEST(CpuGraphFormat, MatMulOfInt8ValuesRoundTrips) {
  CpuGraph g = small_cnn();
  ASSERT_EQ(g.ops[3].kind, OpKind::MatMul);
  g.ops[3].params = MatMulParams{true, {0.031f, -3.f}, {0.057f, 127.f}};
  const Result<CpuGraph> back = parse(serialize(g));
  ASSERT_TRUE(back.ok()) << last_error_message();
  expect_same(g, *back);
}

TEST(CpuGraphFormat, EmptyGraphRoundTrips) {
  Result<CpuGraph> back = parse(serialize(CpuGraph{}));
  ASSERT_TRUE(back.ok()) << last_error_message();
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
  for (uint8_t a = 0; a < kNumResizeAlgs; ++a) {
    op(g, OpKind::Resize, {x}, value({2, 3, 7, 5}),
       ResizeParams{static_cast<ResizeAlg>(a), a == 0, 7, 5});
  }
  g.outputs = {g.ops.back().output};
  g.output_dim_orders = {{}};
  Result<CpuGraph> back = parse(serialize(g));
  ASSERT_TRUE(back.ok()) << last_error_message();
  expect_same(g, *back);
}

// Each float parameter keeps its every bit through the blob: -0, the smallest subnormal, NaN.
TEST(CpuGraphFormat, FloatParametersKeepEveryBit) {
  for (const float f :
       {-0.f, std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::quiet_NaN()}) {
    CpuGraph g = every_kind();
    for (OpDesc& o : g.ops) {
      if (o.kind == OpKind::Eltwise) o.eltwise().alpha = o.eltwise().beta = f;
      if (o.kind == OpKind::LayerNorm && !std::isnan(f)) o.norm().eps = f;
      if (o.kind == OpKind::Pad) o.pad().value = f;
    }
    g.ops[1].quant_conv().src.zero_point = -0.f;
    const Result<CpuGraph> back = parse(serialize(g));
    ASSERT_TRUE(back.ok()) << last_error_message();
    expect_same(g, *back);
  }
}

}  // namespace
}  // namespace ember::cpu::graph_test
