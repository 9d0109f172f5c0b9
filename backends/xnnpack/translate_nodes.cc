// The Translator's other nodes (translate_internal.h): binary and unary element-wise nodes,
// clamps, softmax, poolings, resizing, and nodes that move values (transpose, reshape, copy,
// concatenate, slice, pad).
#include "backends/xnnpack/translate_internal.h"

#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

namespace ember::xnn::detail {

Error Translator::binary(const Node& n, BinaryAlg alg) {
  EMBER_TRY(real_values(n));
  if (alg == BinaryAlg::Add && !n.has_output_min_max && fold_add(n)) return Error::Ok;
  const Value& y = value(n.outputs[0]);
  uint32_t a = n.inputs[0], b = n.inputs[1];
  for (const uint32_t id : {a, b}) EMBER_TRY(check_broadcast(value(id), y));
  // The first operand broadcast: swapped where the op commutes and the second has the output's
  // dims, else expanded to the output's dims (a x 1 for each element: a's values exactly, -0,
  // inf and NaN kept).
  bool expand_a = false;
  if (value(a).dims != y.dims) {
    const bool commutes = alg == BinaryAlg::Add || alg == BinaryAlg::Mul ||
                          alg == BinaryAlg::Minimum || alg == BinaryAlg::Maximum;
    if (commutes && value(b).dims == y.dims) {
      std::swap(a, b);
    } else {
      expand_a = true;
    }
  }
  Mapped ma;
  if (expand_a) {
    // In the layout b is held in where b has the output's dims.
    Perm perm = identity(y.dims.size());
    if (value(b).dims == y.dims) {
      EMBER_ASSIGN_OR_RETURN(const Mapped mb, any(b));
      perm = mb.perm;
    }
    const int64_t count = numel(y.dims);
    if (count > (int64_t{1} << 24)) {
      return refuse("the first operand %s is broadcast to %s elements, too many to expand",
                    dims_text(value(a).dims).c_str(), dims_text(y.dims).c_str());
    }
    const std::vector<int64_t> dims = engine_dims(y.dims, perm);
    const int32_t ones =
        owned_floats("ones", std::vector<float>(static_cast<size_t>(count), 1.0f), dims);
    EMBER_ASSIGN_OR_RETURN(const int32_t ta, broadcast_operand(a, y.dims.size(), perm));
    ma = {emit(OpKind::Binary, {ones, ta}, cpu::BinaryParams{BinaryAlg::Mul}, dims), perm};
  } else {
    EMBER_ASSIGN_OR_RETURN(ma, any(a));
  }
  EMBER_ASSIGN_OR_RETURN(const int32_t tb, broadcast_operand(b, y.dims.size(), ma.perm));
  const int32_t t = emit(OpKind::Binary, {ma.tensor, tb}, cpu::BinaryParams{alg},
                         engine_dims(y.dims, ma.perm), clamp_post_ops(n));
  define(y.id, t, ma.perm);
  return Error::Ok;
}

Error Translator::prelu(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& x = value(n.inputs[0]);
  const Value& slope = value(n.inputs[1]);
  const Value& y = value(n.outputs[0]);
  if (x.dims != y.dims || slope.constant == 0 || x.dims.empty()) {
    return refuse("a slope constant and an output of the input's dims");
  }
  const int64_t channels = x.dims.back();
  if (numel(slope.dims) != channels && numel(slope.dims) != 1) {
    return refuse("a slope of %lld elements for %lld channels",
                  static_cast<long long>(numel(slope.dims)), static_cast<long long>(channels));
  }
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
  // The slope as a constant of x's rank, along x's innermost dim, held as x is.
  EMBER_ASSIGN_OR_RETURN(int32_t s, held(slope.id, identity(slope.dims.size())));
  std::vector<int64_t> full(x.dims.size(), 1);
  full.back() = numel(slope.dims);
  TensorDesc w = out_.graph.tensors[s];
  if (w.kind != TensorKind::Weight || !w.dim_order.empty()) return refuse("the slope's layout");
  w.dims = engine_dims(full, m.perm);
  s = add_tensor(std::move(w));
  const int32_t t = emit(OpKind::Binary, {m.tensor, s}, cpu::BinaryParams{BinaryAlg::Prelu},
                         engine_dims(y.dims, m.perm), clamp_post_ops(n));
  define(y.id, t, m.perm);
  return Error::Ok;
}

Error Translator::resize(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  if (x.dims.size() != 4 || y.dims.size() != 4 || y.dims[0] != x.dims[0] ||
      y.dims[3] != x.dims[3] || y.dims[1] != n.new_height || y.dims[2] != n.new_width) {
    return refuse("output %s of input %s resized to %u x %u", dims_text(y.dims).c_str(),
                  dims_text(x.dims).c_str(), n.new_height, n.new_width);
  }
  if ((n.flags & ~0x8u) != 0) return refuse("flags %u are not supported", n.flags);
  EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
  cpu::ResizeParams r;
  r.alg = cpu::ResizeAlg::Bilinear;
  r.align_corners = (n.flags & 0x8u) != 0;
  r.height = n.new_height;
  r.width = n.new_width;
  const int32_t t = emit(OpKind::Resize, {src}, r, engine_dims(y.dims, kNhwc), clamp_post_ops(n));
  define(y.id, t, kNhwc);
  return Error::Ok;
}

Error Translator::unary(const Node& n, EltwiseAlg alg, float alpha, float beta) {
  EMBER_TRY(real_values(n));
  EMBER_TRY(same_dims(n));
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(n.inputs[0]));
  const Value& y = value(n.outputs[0]);
  const int32_t t = emit(OpKind::Eltwise, {m.tensor}, cpu::EltwiseParams{alg, alpha, beta},
                         engine_dims(y.dims, m.perm), clamp_post_ops(n));
  define(y.id, t, m.perm);
  return Error::Ok;
}

Error Translator::clamp(const Node& n) {
  const float lo = n.has_output_min_max ? n.output_min : -kInf;
  const float hi = n.has_output_min_max ? n.output_max : kInf;
  if (!std::isnan(lo) && !std::isnan(hi) && lo <= hi && fold_clamp(n, lo, hi)) return Error::Ok;
  if (lo == 0 && hi == kInf) return unary(n, EltwiseAlg::Relu);
  if (std::isnan(lo) || std::isnan(hi) || lo > hi) {
    return refuse("bounds [%g, %g]", static_cast<double>(lo), static_cast<double>(hi));
  }
  Node plain = n;
  plain.has_output_min_max = false;  // the bounds are the clip's own
  return unary(plain, EltwiseAlg::Clip, lo, hi);
}

Error Translator::softmax(const Node& n) {
  EMBER_TRY(real_values(n));
  EMBER_TRY(same_dims(n));
  if (n.has_output_min_max) return refuse("a fused output clamp");
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(n.inputs[0]));
  const Value& y = value(n.outputs[0]);
  // XNNPACK normalizes over the innermost dim.
  const int32_t t = emit(OpKind::Softmax, {m.tensor}, cpu::SoftmaxParams{m.perm.back()},
                         engine_dims(y.dims, m.perm));
  define(y.id, t, m.perm);
  return Error::Ok;
}

Error Translator::pool(const Node& n) {
  EMBER_TRY(real_values(n));
  const Window& w = n.window;
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  const bool is_max = n.type == NodeType::MaxPooling2d;
  if (x.dims.size() != 4 || y.dims.size() != 4) return refuse("pooling of rank-4 NHWC values");
  const uint32_t dh = is_max ? w.dilation_h : 1, dw = is_max ? w.dilation_w : 1;
  if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 || dh < 1 || dw < 1 ||
      y.dims[0] != x.dims[0] || y.dims[3] != x.dims[3]) {
    return refuse("inconsistent window or shapes");
  }
  // XNNPACK's flag 0x40 keeps dims; its absence would flatten, which the exporter never writes.
  if ((n.flags & ~0x40u) != 0) return refuse("flags %u are not supported", n.flags);
  if (window_out(x.dims[1], w.pad_top, w.pad_bottom, w.kernel_h, dh, w.stride_h) != y.dims[1] ||
      window_out(x.dims[2], w.pad_left, w.pad_right, w.kernel_w, dw, w.stride_w) != y.dims[2]) {
    return refuse("output %s does not follow from input %s and the window",
                  dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
  }
  const bool padded = w.pad_top + w.pad_bottom + w.pad_left + w.pad_right != 0;
  cpu::PoolParams p;
  // XNNPACK's average pooling divides by the count of elements inside the input (padding
  // excluded), PyTorch's count_include_pad=False; without padding the two agree.
  p.alg = is_max ? cpu::PoolAlg::Max
                 : (padded ? cpu::PoolAlg::AvgExcludePad : cpu::PoolAlg::AvgIncludePad);
  p.kernel = {w.kernel_h, w.kernel_w};
  p.stride = {w.stride_h, w.stride_w};
  p.pad_l = {w.pad_top, w.pad_left};
  p.pad_r = {w.pad_bottom, w.pad_right};
  p.dilation = {dh, dw};
  EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
  const std::vector<cpu::PostOp> post = clamp_post_ops(n);
  const int32_t t = emit(OpKind::Pool, {src}, p, engine_dims(y.dims, kNhwc), post);
  define(y.id, t, kNhwc, is_max && post.empty() && moves_on_grid(n));
  return Error::Ok;
}

Error Translator::global_avg_pool(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  if (x.dims.size() != 4) return refuse("global pooling of a rank-%zu value", x.dims.size());
  const bool keep = (n.flags & 0x40u) != 0;
  if ((n.flags & ~0x40u) != 0) return refuse("flags %u are not supported", n.flags);
  const std::vector<int64_t> want = keep ? std::vector<int64_t>{x.dims[0], 1, 1, x.dims[3]}
                                         : std::vector<int64_t>{x.dims[0], x.dims[3]};
  if (y.dims != want)
    return refuse("output %s, expected %s", dims_text(y.dims).c_str(), dims_text(want).c_str());
  EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, kNhwc));
  // A pooling over the whole plane: oneDNN's pooling reads the blocked layouts convolutions
  // write, where its reduction is several times slower (MobileNetV3's squeeze-and-excite).
  cpu::PoolParams p;
  p.alg = cpu::PoolAlg::AvgIncludePad;
  p.kernel = {x.dims[1], x.dims[2]};
  p.stride = {1, 1};
  p.pad_l = {0, 0};
  p.pad_r = {0, 0};
  p.dilation = {1, 1};
  int32_t t = emit(OpKind::Pool, {src}, p, {x.dims[0], x.dims[3], 1, 1}, clamp_post_ops(n));
  if (!keep) t = emit(OpKind::Reshape, {t}, cpu::NoParams{}, {x.dims[0], x.dims[3]});
  define(y.id, t, keep ? kNhwc : identity(2));
  return Error::Ok;
}

Error Translator::transpose(const Node& n) {
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  EMBER_TRY(real_values(n));
  const size_t r = x.dims.size();
  if (n.ints.size() != r || y.dims.size() != r) return refuse("a permutation of %zu dims", r);
  std::vector<bool> seen(r, false);
  for (size_t i = 0; i < r; ++i) {
    if (n.ints[i] >= r || seen[n.ints[i]] || y.dims[i] != x.dims[n.ints[i]]) {
      return refuse("not a permutation of the input's dims onto the output's");
    }
    seen[n.ints[i]] = true;
  }
  if (n.has_output_min_max) return refuse("a fused output clamp");
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
  // Output dim i is input dim ints[i], which is the tensor's dim m.perm[ints[i]]: no step.
  Perm p(r);
  for (size_t i = 0; i < r; ++i) p[i] = m.perm[n.ints[i]];
  define(y.id, m.tensor, std::move(p), moves_on_grid(n));
  return Error::Ok;
}

Error Translator::reshape(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  if (numel(x.dims) != numel(y.dims)) {
    return refuse("%s to %s changes the number of elements", dims_text(x.dims).c_str(),
                  dims_text(y.dims).c_str());
  }
  if (n.has_output_min_max) return refuse("a fused output clamp");
  EMBER_ASSIGN_OR_RETURN(const int32_t src, held(x.id, identity(x.dims.size())));
  const TensorDesc& s = out_.graph.tensors[src];
  int32_t t;
  if (s.kind == TensorKind::Weight && s.dim_order.empty()) {
    TensorDesc w = s;
    w.dims = y.dims;
    t = add_tensor(std::move(w));
  } else {
    t = emit(OpKind::Reshape, {src}, cpu::NoParams{}, y.dims);
  }
  define(y.id, t, identity(y.dims.size()), moves_on_grid(n));
  return Error::Ok;
}

Error Translator::copy(const Node& n) {
  EMBER_TRY(real_values(n));
  if (value(n.inputs[0]).dims != value(n.outputs[0]).dims) return refuse("a copy of new dims");
  if (n.has_output_min_max) return unary(n, EltwiseAlg::Clip, -kInf, kInf);
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(n.inputs[0]));
  define(n.outputs[0], m.tensor, m.perm, moves_on_grid(n));
  return Error::Ok;
}

Error Translator::concat(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& y = value(n.outputs[0]);
  const size_t r = y.dims.size();
  if (n.axis >= r) return refuse("axis %u of a rank-%zu output", n.axis, r);
  int64_t total = 0;
  for (const uint32_t id : n.inputs) {
    const Value& v = value(id);
    if (v.dims.size() != r) return refuse("inputs of different ranks");
    for (size_t d = 0; d < r; ++d) {
      if (d != n.axis && v.dims[d] != y.dims[d]) return refuse("inputs of different dims");
    }
    total += v.dims[n.axis];
  }
  if (total != y.dims[n.axis]) return refuse("the output's dim %u is not the inputs' sum", n.axis);
  if (n.has_output_min_max) return refuse("a fused output clamp");
  EMBER_ASSIGN_OR_RETURN(const Mapped first, any(n.inputs[0]));
  std::vector<int32_t> srcs;
  for (const uint32_t id : n.inputs) {
    EMBER_ASSIGN_OR_RETURN(const int32_t t, held(id, first.perm));
    srcs.push_back(t);
  }
  const int32_t t = emit(OpKind::Concat, srcs, cpu::ConcatParams{first.perm[n.axis]},
                         engine_dims(y.dims, first.perm));
  define(y.id, t, first.perm, moves_on_grid(n));
  return Error::Ok;
}

Error Translator::slice(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  const size_t r = x.dims.size();
  if (n.ints.size() != r || n.ints2.size() != r || y.dims.size() != r) {
    return refuse("offsets and sizes for each of %zu dims", r);
  }
  for (size_t d = 0; d < r; ++d) {
    const int64_t off = n.ints[d], size = n.ints2[d];
    if (size != y.dims[d] || off + size > x.dims[d]) {
      return refuse("dim %zu: [%lld, +%lld) of %lld", d, static_cast<long long>(off),
                    static_cast<long long>(size), static_cast<long long>(x.dims[d]));
    }
  }
  if (n.has_output_min_max) return refuse("a fused output clamp");
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
  int32_t t = m.tensor;
  std::vector<int64_t> dims = out_.graph.tensors[t].dims;
  for (size_t d = 0; d < r; ++d) {
    if (n.ints2[d] == x.dims[d]) continue;
    const int64_t e = m.perm[d];
    dims[e] = n.ints2[d];
    t = emit(OpKind::Slice, {t}, cpu::SliceParams{e, n.ints[d]}, dims);
  }
  if (t == m.tensor) t = emit(OpKind::Reshape, {t}, cpu::NoParams{}, dims);  // a copy
  define(y.id, t, m.perm, moves_on_grid(n));
  return Error::Ok;
}

Error Translator::pad(const Node& n) {
  EMBER_TRY(real_values(n));
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  const size_t r = x.dims.size();
  if (n.ints.size() != r || n.ints2.size() != r || y.dims.size() != r) {
    return refuse("paddings for each of %zu dims", r);
  }
  for (size_t d = 0; d < r; ++d) {
    if (x.dims[d] + n.ints[d] + n.ints2[d] != y.dims[d]) return refuse("dim %zu: bad padding", d);
  }
  if (n.has_output_min_max) return refuse("a fused output clamp");
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
  cpu::PadParams p;
  p.before.assign(r, 0);
  p.after.assign(r, 0);
  for (size_t d = 0; d < r; ++d) {
    p.before[m.perm[d]] = n.ints[d];
    p.after[m.perm[d]] = n.ints2[d];
  }
  p.value = n.alpha;
  const int32_t t = emit(OpKind::Pad, {m.tensor}, p, engine_dims(y.dims, m.perm));
  define(y.id, t, m.perm);
  return Error::Ok;
}

}  // namespace ember::xnn::detail
