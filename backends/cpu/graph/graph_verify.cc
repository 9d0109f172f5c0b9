// The per-op parameter checks of parse (graph_format_internal.h, check_params): each op's inputs
// and every parameter's range, kind by kind, so that nothing out of range reaches oneDNN or the
// kernels. Separate from the reader (graph_parse.cc), which only copies the flatbuffer's fields.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_format_internal.h"
#include "runtime/core/error.h"

namespace ember::cpu::internal {
namespace {

// A zero point of int8's grid: an integer in [-128, 127].
bool int8_zero_point(float z) { return z >= -128.f && z <= 127.f && z == std::floor(z); }

// Whether each of a convolution's or a pooling's per-dim vectors holds one value per spatial dim.
template <typename... V>
bool same_rank(size_t r, const V&... v) {
  return ((v.size() == r) && ...);
}

// An element-wise algorithm of EltwiseAlg, and a finite slope for a leaky relu.
bool eltwise_in_range(EltwiseAlg alg, float alpha) {
  if (static_cast<uint8_t>(alg) >= kNumEltwiseAlgs) return false;
  return alg != EltwiseAlg::LeakyRelu || std::isfinite(alpha);
}

// A resize's output height or width at most this.
constexpr int64_t kMaxResizeSize = int64_t{1} << 20;

}  // namespace

Error check_params(const OpDesc& op, size_t op_index) {
  const std::string where = "op " + std::to_string(op_index) + ": ";
  auto need_inputs = [&](size_t min, size_t max) {
    return op.inputs.size() >= min && op.inputs.size() <= max;
  };
  auto required = [&](size_t i) { return i < op.inputs.size() && op.inputs[i] >= 0; };
  switch (op.kind) {
    case OpKind::Conv:
    case OpKind::QuantConv: {
      const bool quant = op.kind == OpKind::QuantConv;
      const ConvParams& c = op.conv();
      if (!need_inputs(quant ? 4 : 3, quant ? 4 : 3) || !required(0) || !required(1) ||
          (quant && !required(3))) {
        return invalid_blob(where + "convolution needs src, weight, bias and parameters");
      }
      if (quant && (!(op.quant_conv().src.scale > 0) || c.rank() != 2 || c.transposed)) {
        return invalid_blob(where + "quantized convolution: a 2-D one, with a positive scale");
      }
      const size_t r = c.rank();
      if (r < 1 || r > 3) {
        return invalid_blob(where + "convolution of " + std::to_string(r) +
                            " spatial dims (1 to 3)");
      }
      if (!same_rank(r, c.pad_l, c.pad_r, c.dilation, c.output_padding)) {
        return invalid_blob(where +
                            "convolution stride, paddings, dilation and output padding differ "
                            "in length");
      }
      if (c.groups < 1) {
        return invalid_blob(where + "convolution groups or transposed flag out of range");
      }
      for (size_t i = 0; i < r; ++i) {
        const int64_t stride = c.stride[i], pl = c.pad_l[i], pr = c.pad_r[i];
        const int64_t dil = c.dilation[i], opad = c.output_padding[i];
        // A transposed convolution's right padding is negative where output_padding exceeds it.
        if (stride < 1 || stride > 4096 || pl < 0 || pl > 4096 || pr < -4096 || pr > 4096 ||
            dil < 1 || dil > 4096 || opad < 0 || opad > 4096) {
          return invalid_blob(where + "convolution stride/padding/dilation out of range");
        }
      }
      break;
    }
    case OpKind::MatMul: {
      const MatMulParams& p = op.matmul();
      if (!need_inputs(3, 3) || !required(0) || !required(1)) {
        return invalid_blob(where + "matmul needs a, b and bias");
      }
      if (p.quantized && (!(p.a.scale > 0) || !(p.b.scale > 0) ||
                          !int8_zero_point(p.a.zero_point) || !int8_zero_point(p.b.zero_point))) {
        return invalid_blob(where + "matmul of int8 values needs two scales and zero points");
      }
      break;
    }
    case OpKind::QuantMatMul:
      if (!need_inputs(4, 4) || !required(0) || !required(1) || !required(3) ||
          !(op.quant_matmul().src.scale > 0)) {
        return invalid_blob(where + "quantized matmul needs a, weight, bias, scales, parameters");
      }
      break;
    case OpKind::GroupQuantMatMul: {
      const GroupQuantMatMulParams& p = op.group_quant_matmul();
      const bool quantize = p.input_quant != InputQuant::None;
      if ((!need_inputs(5, 5) && !need_inputs(7, 7)) || !required(0) || !required(1) ||
          !required(3) || (op.inputs.size() == 7 && (!required(5) || !required(6))) ||
          p.group < 2 || static_cast<uint8_t>(p.input_quant) >= kNumInputQuants ||
          (quantize && (op.inputs.size() != 5 || !(p.eps >= 0))) || (!quantize && p.eps != 0)) {
        return invalid_blob(where +
                            "grouped quantized matmul needs a, weight, bias, scales, zero "
                            "points and a group size of at least 2");
      }
      break;
    }
    case OpKind::Pool: {
      const PoolParams& p = op.pool();
      const size_t r = p.rank();
      if (!need_inputs(1, 1) || !required(0)) {
        return invalid_blob(where + "pooling needs src and parameters");
      }
      if (static_cast<uint8_t>(p.alg) >= kNumPoolAlgs || r < 1 || r > 3) {
        return invalid_blob(where + "pooling parameters out of range");
      }
      if (!same_rank(r, p.stride, p.pad_l, p.pad_r, p.dilation)) {
        return invalid_blob(where +
                            "pooling kernel, stride, paddings and dilation differ in length");
      }
      for (size_t i = 0; i < r; ++i) {
        for (int64_t v : {p.kernel[i], p.stride[i], p.dilation[i]}) {
          if (v < 1 || v > 4096) {
            return invalid_blob(where + "pooling kernel/stride/padding out of range");
          }
        }
        for (int64_t v : {p.pad_l[i], p.pad_r[i]}) {
          if (v < 0 || v > 4096) {
            return invalid_blob(where + "pooling kernel/stride/padding out of range");
          }
        }
      }
      break;
    }
    case OpKind::Eltwise:
      if (!need_inputs(1, 1) || !required(0) ||
          !eltwise_in_range(op.eltwise().alg, op.eltwise().alpha)) {
        return invalid_blob(where + "eltwise parameters out of range");
      }
      break;
    case OpKind::Binary:
      if (!need_inputs(2, 2) || !required(0) || !required(1) ||
          static_cast<uint8_t>(op.binary().alg) >= kNumBinaryAlgs) {
        return invalid_blob(where + "binary parameters out of range");
      }
      break;
    case OpKind::Softmax:
      if (!need_inputs(1, 1) || !required(0) || op.softmax().axis < 0 ||
          op.softmax().axis >= kMaxCpuRank) {
        return invalid_blob(where + "softmax parameters out of range");
      }
      break;
    case OpKind::LayerNorm:
      if (!need_inputs(3, 3) || !required(0) || !(op.norm().eps >= 0)) {
        return invalid_blob(where + "layer norm parameters out of range");
      }
      break;
    case OpKind::BatchNorm:
      if (!need_inputs(5, 5) || !required(0) || !required(3) || !required(4) ||
          !(op.norm().eps >= 0)) {
        return invalid_blob(where + "batch norm parameters out of range");
      }
      break;
    case OpKind::Concat:
      if (op.inputs.empty() || op.inputs.size() > 1024 || op.concat().axis < 0 ||
          op.concat().axis >= kMaxCpuRank) {
        return invalid_blob(where + "concat parameters out of range");
      }
      for (int32_t t : op.inputs) {
        if (t < 0) return invalid_blob(where + "concat input missing");
      }
      break;
    case OpKind::Reshape:
      if (!need_inputs(1, 1) || !required(0)) {
        return invalid_blob(where + "reshape parameters out of range");
      }
      break;
    case OpKind::Reduce: {
      const ReduceParams& p = op.reduce();
      if (!need_inputs(1, 1) || !required(0) || p.dims.empty() || p.dims.size() > kMaxCpuRank ||
          static_cast<uint8_t>(p.alg) >= kNumReduceAlgs) {
        return invalid_blob(where + "reduction parameters out of range");
      }
      for (size_t i = 0; i < p.dims.size(); ++i) {
        if (p.dims[i] < 0 || p.dims[i] >= kMaxCpuRank || (i > 0 && p.dims[i] <= p.dims[i - 1])) {
          return invalid_blob(where + "reduction dims are not distinct ascending dims");
        }
      }
      break;
    }
    case OpKind::Where:
      if (!need_inputs(3, 3) || !required(0) || !required(1) || !required(2)) {
        return invalid_blob(where + "where needs a condition and two values");
      }
      break;
    case OpKind::Slice:
      if (!need_inputs(1, 1) || !required(0) || op.slice().dim < 0 ||
          op.slice().dim >= kMaxCpuRank || op.slice().start < 0) {
        return invalid_blob(where + "slice parameters out of range");
      }
      break;
    case OpKind::Pad: {
      const PadParams& p = op.pad();
      if (!need_inputs(1, 1) || !required(0) || p.before.empty() || p.before.size() > kMaxCpuRank ||
          p.after.size() != p.before.size()) {
        return invalid_blob(where + "padding needs src and a pad pair per dim");
      }
      for (size_t d = 0; d < p.before.size(); ++d) {
        if (p.before[d] < 0 || p.before[d] > 4096 || p.after[d] < 0 || p.after[d] > 4096) {
          return invalid_blob(where + "padding out of range");
        }
      }
      break;
    }
    case OpKind::Resize: {
      const ResizeParams& p = op.resize();
      if (!need_inputs(1, 1) || !required(0)) return invalid_blob(where + "resize needs src");
      if (static_cast<uint8_t>(p.alg) >= kNumResizeAlgs ||
          (p.align_corners && p.alg != ResizeAlg::Bilinear) || p.height < 1 ||
          p.height > kMaxResizeSize || p.width < 1 || p.width > kMaxResizeSize) {
        return invalid_blob(where + "resize parameters out of range");
      }
      break;
    }
    case OpKind::Permute: {
      const std::vector<int64_t>& perm = op.permute().perm;
      if (!need_inputs(1, 1) || !required(0) || perm.size() > kMaxCpuRank) {
        return invalid_blob(where + "permute parameters out of range");
      }
      bool seen[kMaxCpuRank] = {};
      for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) {
          return invalid_blob(where + "permute is not a permutation");
        }
        seen[p] = true;
      }
      break;
    }
    default:  // a kind appended to OpKind without its parameter check here: refused
      return invalid_blob(where + "op kind " + std::to_string(static_cast<unsigned>(op.kind)) +
                          " has no parameter check");
  }
  if (!op.post_ops.empty() && op.kind != OpKind::Conv && op.kind != OpKind::MatMul &&
      op.kind != OpKind::Binary && op.kind != OpKind::QuantConv && op.kind != OpKind::QuantMatMul) {
    return invalid_blob(where + "post-ops on an op that takes none");
  }
  for (const PostOp& p : op.post_ops) {
    if (!p.is_sum && !eltwise_in_range(p.alg, p.alpha)) {
      return invalid_blob(where + "post-op algorithm out of range");
    }
  }
  return Error::Ok;
}

}  // namespace ember::cpu::internal
