// serialize (graph_format.h): a CpuGraph into the size-prefixed flatbuffer of graph/cpu_graph.fbs,
// every field as it is, so that what parse accepts comes back the same bytes (graph_fuzz.cc checks
// that). It checks nothing: parse is where a graph is refused, on both sides of the blob.
#include <cstdint>
#include <utility>
#include <variant>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_format_internal.h"
#include "ember/backends/cpu/cpu_graph_generated.h"

namespace ember::cpu {
namespace {

// `v` as a vector in `fbb`; absent where empty.
template <typename T>
flatbuffers::Offset<flatbuffers::Vector<T>> write_vector(flatbuffers::FlatBufferBuilder& fbb,
                                                         const std::vector<T>& v) {
  return v.empty() ? flatbuffers::Offset<flatbuffers::Vector<T>>() : fbb.CreateVector(v);
}

fb::QuantParams quant_params(const QuantParams& q) {
  return fb::QuantParams(q.scale, q.zero_point);
}

flatbuffers::Offset<fb::ConvParams> write_conv(flatbuffers::FlatBufferBuilder& fbb,
                                               const ConvParams& c) {
  return fb::CreateConvParams(fbb, c.groups, c.transposed ? 1 : 0, write_vector(fbb, c.stride),
                              write_vector(fbb, c.pad_l), write_vector(fbb, c.pad_r),
                              write_vector(fbb, c.dilation), write_vector(fbb, c.output_padding));
}

// An op's parameters as the union's type and table in `fbb`.
struct ParamsWriter {
  using Written = std::pair<fb::OpParams, flatbuffers::Offset<void>>;
  flatbuffers::FlatBufferBuilder& fbb;

  Written operator()(const NoParams&) const { return {fb::OpParams::NONE, 0}; }
  Written operator()(const ConvParams& p) const {
    return {fb::OpParams::ConvParams, write_conv(fbb, p).Union()};
  }
  Written operator()(const QuantConvParams& p) const {
    const auto conv = write_conv(fbb, p.conv);
    const fb::QuantParams src = quant_params(p.src);
    return {fb::OpParams::QuantConvParams, fb::CreateQuantConvParams(fbb, conv, &src).Union()};
  }
  Written operator()(const MatMulParams& p) const {
    const fb::QuantParams a = quant_params(p.a), b = quant_params(p.b);
    return {fb::OpParams::MatMulParams,
            fb::CreateMatMulParams(fbb, p.quantized ? &a : nullptr, p.quantized ? &b : nullptr)
                .Union()};
  }
  Written operator()(const QuantMatMulParams& p) const {
    const fb::QuantParams src = quant_params(p.src);
    return {fb::OpParams::QuantMatMulParams, fb::CreateQuantMatMulParams(fbb, &src).Union()};
  }
  Written operator()(const GroupQuantMatMulParams& p) const {
    return {
        fb::OpParams::GroupQuantMatMulParams,
        fb::CreateGroupQuantMatMulParams(fbb, p.group, static_cast<uint8_t>(p.input_quant), p.eps)
            .Union()};
  }
  Written operator()(const PoolParams& p) const {
    return {fb::OpParams::PoolParams,
            fb::CreatePoolParams(fbb, static_cast<uint8_t>(p.alg), write_vector(fbb, p.kernel),
                                 write_vector(fbb, p.stride), write_vector(fbb, p.pad_l),
                                 write_vector(fbb, p.pad_r), write_vector(fbb, p.dilation))
                .Union()};
  }
  Written operator()(const EltwiseParams& p) const {
    return {fb::OpParams::EltwiseParams,
            fb::CreateEltwiseParams(fbb, static_cast<uint8_t>(p.alg), p.alpha, p.beta).Union()};
  }
  Written operator()(const BinaryParams& p) const {
    return {fb::OpParams::BinaryParams,
            fb::CreateBinaryParams(fbb, static_cast<uint8_t>(p.alg)).Union()};
  }
  Written operator()(const SoftmaxParams& p) const {
    return {fb::OpParams::SoftmaxParams, fb::CreateSoftmaxParams(fbb, p.axis).Union()};
  }
  Written operator()(const NormParams& p) const {
    return {fb::OpParams::NormParams, fb::CreateNormParams(fbb, p.eps).Union()};
  }
  Written operator()(const ConcatParams& p) const {
    return {fb::OpParams::ConcatParams, fb::CreateConcatParams(fbb, p.axis).Union()};
  }
  Written operator()(const PermuteParams& p) const {
    return {fb::OpParams::PermuteParams,
            fb::CreatePermuteParams(fbb, write_vector(fbb, p.perm)).Union()};
  }
  Written operator()(const ReduceParams& p) const {
    return {fb::OpParams::ReduceParams,
            fb::CreateReduceParams(fbb, static_cast<uint8_t>(p.alg), write_vector(fbb, p.dims))
                .Union()};
  }
  Written operator()(const SliceParams& p) const {
    return {fb::OpParams::SliceParams, fb::CreateSliceParams(fbb, p.dim, p.start).Union()};
  }
  Written operator()(const PadParams& p) const {
    return {fb::OpParams::PadParams, fb::CreatePadParams(fbb, write_vector(fbb, p.before),
                                                         write_vector(fbb, p.after), p.value)
                                         .Union()};
  }
  Written operator()(const ResizeParams& p) const {
    return {fb::OpParams::ResizeParams,
            fb::CreateResizeParams(fbb, static_cast<uint8_t>(p.alg), p.align_corners ? 1 : 0,
                                   p.height, p.width)
                .Union()};
  }
};

}  // namespace

std::vector<uint8_t> serialize(const CpuGraph& g) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  for (const WeightRef& w : g.weights) {
    weights.push_back(fb::CreateWeight(fbb, fbb.CreateString(w.key), w.nbytes));
  }
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const TensorDesc& t : g.tensors) {
    tensors.push_back(fb::CreateTensor(fbb, static_cast<uint8_t>(t.kind), t.index,
                                       write_vector(fbb, t.dims), write_vector(fbb, t.dim_order),
                                       t.batch_symbol, static_cast<uint8_t>(t.storage)));
  }
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (const OpDesc& op : g.ops) {
    std::vector<flatbuffers::Offset<fb::PostOp>> post_ops;
    for (const PostOp& p : op.post_ops) {
      post_ops.push_back(fb::CreatePostOp(fbb, p.is_sum ? 1 : 0, p.tensor,
                                          static_cast<uint8_t>(p.alg), p.alpha, p.beta));
    }
    // Every field of the parameters is written, defaults too: a float keeps its every bit (a
    // field equal to its default is otherwise left out, and -0 equals the default 0).
    fbb.ForceDefaults(true);
    const auto [params_type, params] = std::visit(ParamsWriter{fbb}, op.params);
    fbb.ForceDefaults(false);
    ops.push_back(fb::CreateOp(fbb, static_cast<uint8_t>(op.kind), write_vector(fbb, op.inputs),
                               op.output, write_vector(fbb, post_ops), params_type, params));
  }
  std::vector<flatbuffers::Offset<fb::Output>> outputs;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::vector<uint8_t> contiguous;
    const std::vector<uint8_t>& order =
        i < g.output_dim_orders.size() ? g.output_dim_orders[i] : contiguous;
    outputs.push_back(fb::CreateOutput(fbb, g.outputs[i], write_vector(fbb, order)));
  }
  const auto root =
      fb::CreateGraph(fbb, internal::kVersion, static_cast<uint8_t>(g.precision), g.num_inputs,
                      g.num_symbols, write_vector(fbb, weights), write_vector(fbb, tensors),
                      write_vector(fbb, ops), write_vector(fbb, outputs));
  fb::FinishSizePrefixedGraphBuffer(fbb, root);
  const uint8_t* p = fbb.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb.GetSize());
}

}  // namespace ember::cpu
