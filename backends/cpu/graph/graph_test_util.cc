#include "backends/cpu/graph/graph_test_util.h"

#include <cstdint>
#include <functional>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/graph/graph_format.h"
#include "ember/backends/cpu/cpu_graph_generated.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace ember::cpu::graph_test {

TensorDesc input(uint32_t index, std::vector<int64_t> dims, int32_t batch_symbol) {
  TensorDesc t;
  t.kind = TensorKind::Input;
  t.index = index;
  t.dims = std::move(dims);
  t.batch_symbol = batch_symbol;
  return t;
}

TensorDesc value(std::vector<int64_t> dims, int32_t batch_symbol) {
  TensorDesc t;
  t.dims = std::move(dims);
  t.batch_symbol = batch_symbol;
  return t;
}

int32_t weight(CpuGraph& g, std::string key, std::vector<int64_t> dims, WeightStorage storage) {
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

int32_t op(CpuGraph& g, OpKind kind, std::vector<int32_t> inputs, TensorDesc out, OpParams params,
           std::vector<PostOp> post_ops) {
  OpDesc o;
  o.kind = kind;
  o.inputs = std::move(inputs);
  o.output = add(g, std::move(out));
  o.params = std::move(params);
  o.post_ops = std::move(post_ops);
  g.ops.push_back(std::move(o));
  return g.ops.back().output;
}

PostOp eltwise(EltwiseAlg alg, float alpha, float beta) {
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

ConvParams conv3x3() {
  ConvParams c;
  c.stride = {1, 1};
  c.pad_l = {1, 1};
  c.pad_r = {1, 1};
  c.dilation = {1, 1};
  c.output_padding = {0, 0};
  return c;
}

PoolParams pool2x2(PoolAlg alg, std::vector<int64_t> pad) {
  return PoolParams{alg, {2, 2}, {2, 2}, pad, pad, {1, 1}};
}

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
  const int32_t padded =
      op(g, OpKind::Pad, {slice}, value({4, 9}), PadParams{{1, 0}, {0, 3}, -0.f});
  const int32_t resized = op(g, OpKind::Resize, {elt}, value({4, 8, 12, 10}, 0),
                             ResizeParams{ResizeAlg::Bilinear, true, 12, 10});
  g.outputs = {reshape, soft, ln, red, slice, qconv, sel, upsampled, padded, resized};
  g.output_dim_orders = {{}, {1, 0}, {}, {}, {}, {0, 3, 1, 2}, {}, {}, {}, {}};
  return g;
}

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
  clear_error_message();
  const Result<CpuGraph> g = parse(blob);
  if (g.ok()) return "accepted";
  EXPECT_EQ(g.error(), Error::InvalidProgram) << last_error_message();
  return last_error_message();
}

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

}  // namespace ember::cpu::graph_test
