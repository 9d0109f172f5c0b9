// The delegate's exact steps (issue 20): the NaN-exact ones (kernels/nan_exact.h: the clamps oneDNN
// would compute with max/min, max pooling and softmax's NaN rows), layer norm by the portable
// library's row kernel (statistics in double), and the redo in double of the sums of matmuls and
// convolutions that oneDNN's float order overflowed.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>

#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/onednn/delegate.h"
#include "runtime/kernels/portable/util/row_kernels.h"

namespace ember::cpu::delegate {
namespace {

float* data_of(const memory& m) {
  void* p = nullptr;
  dnnl_memory_get_data_handle(m.get(), &p);
  return static_cast<float*>(p);
}

std::string cat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& p : parts) out.append(p);
  return out;
}

// Where a plain or channel-blocked tensor of rank r + 2 keeps its elements; false for any other
// layout.
bool pool_layout(const memory::desc& md, int64_t r, PoolLayout* out) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.offset0 != 0 || d.ndims != r + 2 || r < 1 || r > 3) {
    return false;
  }
  const auto& blk = d.format_desc.blocking;
  if (blk.inner_nblks == 0) {
    out->block = 1;
    out->channel = out->channel_block = blk.strides[1];
  } else if (blk.inner_nblks == 1 && blk.inner_idxs[0] == 1) {
    out->block = blk.inner_blks[0];
    out->channel = 1;
    out->channel_block = blk.strides[1];
  } else {
    return false;
  }
  for (int i = 2; i < d.ndims; ++i) {
    if (d.padded_dims[i] != d.dims[i]) return false;
  }
  out->batch = blk.strides[0];
  for (int64_t k = 0; k < r; ++k) out->spatial[3 - r + k] = blk.strides[2 + k];
  return true;
}

// Where element `pos` (one index per dim; a dim of size 1 takes index 0: broadcast) of a tensor
// in blocked layout `d` lies, in elements: oneDNN's own rule (memory_desc_wrapper::off_v), the
// inner blocks from the innermost out, then the outer strides.
int64_t element_offset(const dnnl_memory_desc_t& d, const int64_t* pos) {
  int64_t p[DNNL_MAX_NDIMS];
  for (int i = 0; i < d.ndims; ++i) p[i] = d.dims[i] == 1 ? 0 : pos[i];
  const auto& blk = d.format_desc.blocking;
  int64_t off = d.offset0, inner = 1;
  for (int b = blk.inner_nblks - 1; b >= 0; --b) {
    const int64_t dim = blk.inner_idxs[b];
    off += p[dim] % blk.inner_blks[b] * inner;
    p[dim] /= blk.inner_blks[b];
    inner *= blk.inner_blks[b];
  }
  for (int i = 0; i < d.ndims; ++i) off += p[i] * blk.strides[i];
  return off;
}

// Below this many floats a layer norm runs on the calling thread (a parallel region costs a few
// microseconds).
constexpr int64_t kMinParallelFloats = int64_t{1} << 15;

}  // namespace

bool CpuDelegate::is_clamp(const PostOp& p, Clamp* c) {
  if (p.is_sum) return false;
  if (p.alg == EltwiseAlg::Relu && p.alpha == 0.f) {
    *c = Clamp{};
    c->lo = 0.f;
    return true;
  }
  if (p.alg == EltwiseAlg::Clip) {
    c->lo = p.alpha;
    c->hi = p.beta;
    return true;
  }
  return false;
}

bool CpuDelegate::is_own_eltwise(const PostOp& p) {
  Clamp c;
  // Quantize and dequantize have no oneDNN algorithm: their chain of linear, round and clip
  // post-ops would repeat eltwise_linear, and oneDNN 2.6's injector then gives every repeat the
  // first one's parameters (measured: linear(50) then linear(1, -5) computed 2500 x).
  return is_clamp(p, &c) ||
         (!p.is_sum && (p.alg == EltwiseAlg::Logistic || p.alg == EltwiseAlg::GeluErf ||
                        p.alg == EltwiseAlg::Elu || p.alg == EltwiseAlg::Quantize ||
                        p.alg == EltwiseAlg::Dequantize || p.alg == EltwiseAlg::Rsqrt ||
                        p.alg == EltwiseAlg::Neg));
}

std::span<const PostOp> CpuDelegate::fused_post_ops(const OpDesc& op) {
  size_t k = 0;
  while (k < op.post_ops.size() && !is_own_eltwise(op.post_ops[k])) ++k;
  return std::span<const PostOp>(op.post_ops).first(k);
}

void CpuDelegate::add_post_op_steps(const OpDesc& op, size_t from, const memory& dst) {
  for (size_t i = from; i < op.post_ops.size(); ++i) {
    const PostOp& p = op.post_ops[i];
    if (p.alg == EltwiseAlg::Quantize && !p.is_sum && i + 1 < op.post_ops.size() &&
        !op.post_ops[i + 1].is_sum && op.post_ops[i + 1].alg == EltwiseAlg::Dequantize) {
      add_quantize_step(dst, dst, p, &op.post_ops[++i]);  // one pass for the pair
    } else if (is_own_eltwise(p)) {
      add_own_eltwise_step(dst, dst, p);
    } else if (!p.is_sum) {
      auto [alpha, beta] = eltwise_params(p.alg, p.alpha, p.beta);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg),
                                    dst.get_desc(), alpha, beta);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::eltwise_forward::primitive_desc pd(d, attr, engine_);
      add_step<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
    } else {
      memory summand = as(p.tensor, dst.get_desc());
      dnnl::binary::desc d(dnnl::algorithm::binary_add, dst.get_desc(), summand.get_desc(),
                           dst.get_desc());
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::binary::primitive_desc pd(d, attr, engine_);
      add_step<dnnl::binary>(
          pd, {{DNNL_ARG_SRC_0, dst}, {DNNL_ARG_SRC_1, summand}, {DNNL_ARG_DST, dst}});
    }
  }
}

void CpuDelegate::add_clamp_step(const memory& src, const memory& dst, Clamp act) {
  add_in_place_step(
      src, dst, act.lo <= 0.f && 0.f <= act.hi, "eltwise,ember:clamp,forward_inference,,",
      cat({"alg:clip alpha:", std::to_string(act.lo), " beta:", std::to_string(act.hi)}),
      [act](float* y, int64_t n, int threads) { clamp_in_place(y, n, act, threads); });
}

void CpuDelegate::add_own_eltwise_step(const memory& src, const memory& dst, const PostOp& p) {
  if (p.alg == EltwiseAlg::Quantize || p.alg == EltwiseAlg::Dequantize) {
    add_quantize_step(src, dst, p);
  } else if (Clamp c; is_clamp(p, &c)) {
    add_clamp_step(src, dst, c);
  } else if (p.alg == EltwiseAlg::Logistic) {
    add_in_place_step(src, dst, false, "eltwise,ember:logistic,forward_inference,,", "alg:logistic",
                      sigmoid_in_place);
  } else if (p.alg == EltwiseAlg::Elu) {
    const float alpha = p.alpha;
    add_in_place_step(
        src, dst, true, "eltwise,ember:elu,forward_inference,,",
        cat({"alg:elu alpha:", std::to_string(alpha)}),
        [alpha](float* y, int64_t n, int threads) { elu_in_place(y, n, alpha, threads); });
  } else if (p.alg == EltwiseAlg::GeluErf) {
    add_in_place_step(src, dst, true, "eltwise,ember:gelu_erf,forward_inference,,", "alg:gelu_erf",
                      gelu_in_place);
  } else if (p.alg == EltwiseAlg::Rsqrt) {
    add_in_place_step(src, dst, false, "eltwise,ember:rsqrt,forward_inference,,", "alg:rsqrt",
                      rsqrt_in_place);
  } else if (p.alg == EltwiseAlg::Neg) {
    add_in_place_step(src, dst, true, "eltwise,ember:neg,forward_inference,,", "alg:neg",
                      neg_in_place);
  } else {
    refuse("an element-wise op Ember has no kernel of");
  }
}

void CpuDelegate::add_in_place_step(const memory& src, const memory& dst, bool zero_stays_zero,
                                    std::string name, std::string info, InPlaceKernel kernel) {
  const memory::desc md = dst.get_desc();
  if (src.get_desc() != md || md.data_type() != dt::f32) {
    refuse(cat({name, ": source and destination layouts differ"}));
  }
  const int64_t total = static_cast<int64_t>(md.get_size() / sizeof(float));
  OwnStep s{OwnKind::Exact, std::move(name), cat({info, " ", dims_text(md.dims())}), {}};
  const dnnl_memory_desc_t& d = md.data;
  bool padded = false;
  for (int i = 0; i < d.ndims; ++i) padded = padded || d.padded_dims[i] != d.dims[i];
  const int threads = threads_;
  if (!padded || zero_stays_zero) {
    // Every element, the zeros of a blocked layout's padding included (they stay zero).
    s.run = [src, dst, total, kernel = std::move(kernel), threads](void*) {
      const float* x = data_of(src);
      float* y = data_of(dst);
      if (x != y) std::copy(x, x + total, y);
      kernel(y, total, threads);
    };
  } else {
    // The padding must stay zero: the real channels of each block only.
    const auto& blk = d.format_desc.blocking;
    int64_t spatial = 1;
    for (int i = 2; i < d.ndims; ++i) spatial *= d.dims[i];
    bool ok = d.ndims >= 2 && blk.inner_nblks == 1 && blk.inner_idxs[0] == 1 && d.offset0 == 0;
    for (int i = 0; ok && i < d.ndims; ++i) ok = i == 1 || d.padded_dims[i] == d.dims[i];
    const int64_t b = ok ? blk.inner_blks[0] : 1;
    ok = ok && blk.strides[1] == spatial * b && blk.strides[0] == d.padded_dims[1] * spatial;
    if (!ok) refuse(cat({s.what, " of a padded layout it does not know"}));
    const int64_t batch = d.dims[0], channels = d.dims[1], blocks = d.padded_dims[1] / b;
    s.run = [src, dst, total, kernel = std::move(kernel), batch, channels, blocks, b, spatial,
             threads](void*) {
      const float* x = data_of(src);
      float* y = data_of(dst);
      if (x != y) std::copy(x, x + total, y);
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t cb = 0; cb < blocks; ++cb) {
          float* chunk = y + (n * blocks + cb) * spatial * b;
          const int64_t valid = std::min(b, channels - cb * b);
          if (valid == b) {
            kernel(chunk, spatial * b, threads);
            continue;
          }
          for (int64_t i = 0; i < spatial; ++i) kernel(chunk + i * b, valid, 1);
        }
      }
    };
  }
  add_own_step(std::move(s));
}

void CpuDelegate::build_max_pool(const OpDesc& op, memory src, memory::desc dst_md) {
  const PoolParams& p = op.pool();
  const auto r = static_cast<int64_t>(p.rank());
  const memory::dims sd = dims_of(op.inputs[0]);
  const memory::dims od = dims_of(op.output);
  PoolLayout in, out;
  if (!pool_layout(src.get_desc(), r, &in)) {
    src = as(op.inputs[0], plain_md(sd, dt::f32));
    if (!pool_layout(src.get_desc(), r, &in)) refuse("max pooling layout");
  }
  if (!pool_layout(dst_md, r, &out)) {
    dst_md = plain_md(od, dt::f32);
    if (!pool_layout(dst_md, r, &out)) refuse("max pooling layout");
  }
  PoolWindow w;
  w.batch = sd[0];
  w.channels = sd[1];
  for (int64_t k = 0; k < r; ++k) {
    const int64_t at = 3 - r + k;
    w.in[at] = sd[2 + k];
    w.out[at] = od[2 + k];
    w.kernel[at] = p.kernel[k];
    w.stride[at] = p.stride[k];
    w.pad[at] = p.pad_l[k];
    w.dilation[at] = p.dilation[k];
  }
  memory dst = make_output(op, dst_md);
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "pooling,ember:max,forward_inference,,",
            cat({"alg:pooling_max ", dims_text(sd), ":", dims_text(od)}),
            {}};
  s.run = [src, dst, in, out, w, threads](void*) {
    max_pool(data_of(src), in, data_of(dst), out, w, threads);
  };
  add_own_step(std::move(s));
}

// After oneDNN's average pooling: each output element that came out inf or NaN (a float sum that
// overflowed near float32's maximum, where ATen's mean is finite, or a window holding inf or NaN)
// is recomputed from the input in double, divided as ATen's avg_pool divides (the window clipped
// to the padded input with count_include_pad, to the input without).
void CpuDelegate::add_avg_pool_redo_step(const OpDesc& op, const memory& src, const memory& dst,
                                         bool include_pad) {
  const PoolParams& p = op.pool();
  const auto r = static_cast<int64_t>(p.rank());
  const memory::dims sd = dims_of(op.inputs[0]), od = dims_of(op.output);
  const dnnl_memory_desc_t s_d = src.get_desc().data, o_d = dst.get_desc().data;
  if (s_d.format_kind != dnnl_blocked || o_d.format_kind != dnnl_blocked || r < 1 || r > 3) {
    refuse("average pooling: a layout the exact redo cannot read");
  }
  // Over 3 spatial dims (lower ranks: size 1, kernel 1, no padding).
  struct Window {
    int64_t in[3], out[3], kernel[3], stride[3], pad[3];
  } g{};
  for (int64_t d = 0; d < 3; ++d) {
    const bool real = d >= 3 - r;
    const int64_t k = d - (3 - r);
    g.in[d] = real ? sd[2 + k] : 1;
    g.out[d] = real ? od[2 + k] : 1;
    g.kernel[d] = real ? p.kernel[k] : 1;
    g.stride[d] = real ? p.stride[k] : 1;
    g.pad[d] = real ? p.pad_l[k] : 0;
  }
  const int64_t batch = od[0], channels = od[1];
  const int64_t total = static_cast<int64_t>(dst.get_desc().get_size() / sizeof(float));
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "pooling,ember:redo_non_finite_f64,forward_inference,,",
            cat({include_pad ? "alg:pooling_avg_include_padding " : "alg:pooling_avg ",
                 dims_text(sd), ":", dims_text(od)}),
            {}};
  s.run = [src, dst, g, r, s_d, o_d, batch, channels, total, include_pad, threads](void*) {
    float* y = data_of(dst);
    if (all_within(y, total, std::numeric_limits<float>::max(), threads)) return;
    const float* x = data_of(src);
    const int64_t lead = 3 - r;
    int64_t po[5], ps[5];
    for (int64_t n = 0; n < batch; ++n) {
      for (int64_t c = 0; c < channels; ++c) {
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
              const int64_t o[3] = {o0, o1, o2};
              po[0] = ps[0] = n;
              po[1] = ps[1] = c;
              for (int64_t d = lead; d < 3; ++d) po[2 + d - lead] = o[d];
              float& out = y[element_offset(o_d, po)];
              if (std::isfinite(out)) continue;
              int64_t lo[3], hi[3], padded = 1, inside = 1;
              for (int64_t d = 0; d < 3; ++d) {
                const int64_t start = o[d] * g.stride[d] - g.pad[d];
                const int64_t end = std::min(start + g.kernel[d], g.in[d] + g.pad[d]);
                padded *= end - start;
                lo[d] = std::max<int64_t>(start, 0);
                hi[d] = std::min(end, g.in[d]);
                inside *= std::max<int64_t>(hi[d] - lo[d], 0);
              }
              double sum = 0.0;
              for (int64_t i0 = lo[0]; i0 < hi[0]; ++i0) {
                for (int64_t i1 = lo[1]; i1 < hi[1]; ++i1) {
                  for (int64_t i2 = lo[2]; i2 < hi[2]; ++i2) {
                    const int64_t i[3] = {i0, i1, i2};
                    for (int64_t d = lead; d < 3; ++d) ps[2 + d - lead] = i[d];
                    sum += static_cast<double>(x[element_offset(s_d, ps)]);
                  }
                }
              }
              out = static_cast<float>(sum / static_cast<double>(include_pad ? padded : inside));
            }
          }
        }
      }
    }
  };
  add_own_step(std::move(s), {src, dst});
}

void CpuDelegate::add_softmax_rows_step(const memory& src, const memory& dst, int64_t axis) {
  const memory::dims d = src.get_desc().dims();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= d[i];
  for (size_t i = static_cast<size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  const int64_t len = d[axis];
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "softmax,ember:nan_rows,forward_inference,,",
            cat({dims_text(d), " axis:", std::to_string(axis)}),
            {}};
  s.run = [src, dst, outer, len, inner, threads](void*) {
    softmax_nan_rows(data_of(src), data_of(dst), outer, len, inner, threads);
  };
  add_own_step(std::move(s));
}

void CpuDelegate::add_softmax_last_dim_step(const memory& src, const memory& dst) {
  const memory::dims d = src.get_desc().dims();
  if (src.get_desc() != plain_md(d, dt::f32) || dst.get_desc() != src.get_desc()) {
    refuse("softmax: source and destination are not the same plain float32 layout");
  }
  const int64_t len = d.back(), rows = len == 0 ? 0 : checked_numel(d) / len;
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "softmax,ember:softmax,forward_inference,,",
            cat({dims_text(d), " axis:", std::to_string(d.size() - 1)}),
            {}};
  s.run = [src, dst, rows, len, threads](void*) {
    softmax_rows(data_of(src), data_of(dst), rows, len, threads);
  };
  add_own_step(std::move(s));
}

void CpuDelegate::build_where(const OpDesc& op) {
  const memory::dims od = dims_of(op.output);
  if (od.size() > 6) refuse("where of rank above 6");
  WhereShape shape;
  shape.rank = static_cast<int64_t>(od.size());
  for (size_t i = 0; i < od.size(); ++i) shape.dims[i] = od[i];
  // Each operand plain and dense at its own dims, read with stride 0 along a broadcast dim.
  std::vector<memory> reads;
  for (size_t k = 0; k < 3; ++k) {
    const int32_t id = op.inputs[k];
    const bool is_condition = k == 0;
    if ((graph_.tensors[id].storage == WeightStorage::Bool) != is_condition) {
      refuse("where: the condition must be bool and the values float32");
    }
    const memory::dims d = pad_rank(dims_of(id), od.size());
    if (d.size() != od.size()) refuse("where operand of higher rank than the result");
    const dt type = is_condition ? dt::u8 : dt::f32;
    reads.push_back(as(id, plain_md(dims_of(id), type)));
    const memory::dims strides = dense_strides(d, {});
    int64_t* out = k == 0 ? shape.c : (k == 1 ? shape.a : shape.b);
    for (size_t i = 0; i < d.size(); ++i) {
      if (d[i] != od[i] && d[i] != 1) refuse("where operand does not broadcast");
      out[i] = d[i] == 1 ? 0 : strides[i];
    }
  }
  memory dst = make_output(op, plain_md(od, dt::f32));
  const int threads = threads_;
  OwnStep s{OwnKind::Exact, "binary,ember:where,forward_inference,,", dims_text(od), {}};
  s.run = [c = reads[0], a = reads[1], b = reads[2], dst, shape, threads](void*) {
    where_broadcast(reinterpret_cast<const uint8_t*>(data_of(c)), data_of(a), data_of(b),
                    data_of(dst), shape, threads);
  };
  add_own_step(std::move(s), {reads[0], reads[1], reads[2]});
}

void CpuDelegate::add_layer_norm_step(const memory& src, const memory& gamma, const memory& beta,
                                      const memory& dst, float eps) {
  const memory::desc md = src.get_desc();
  const memory::dims d = md.dims();
  if (d.empty() || md != dst.get_desc() || md != plain_md(d, dt::f32)) {
    refuse("layer norm: source and destination are not the same plain float32 layout");
  }
  const int64_t n = d.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < d.size(); ++i) rows *= d[i];
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "layer_normalization,ember:rows_f64,forward_inference,,",
            cat({dims_text(d), " eps:", std::to_string(eps)}),
            {}};
  s.run = [src, gamma, beta, dst, rows, n, eps, threads](void*) {
    const float* x = data_of(src);
    float* y = data_of(dst);
    const float* w = gamma ? data_of(gamma) : nullptr;
    const float* b = beta ? data_of(beta) : nullptr;
    const int t =
        rows * n < kMinParallelFloats ? 1 : static_cast<int>(std::min<int64_t>(threads, rows));
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float mean, rstd;  // the kernel's statistics, unused here
      layer_norm_row_f32(x + r * n, y + r * n, n, w, b, eps, &mean, &rstd);
    }
  };
  add_own_step(std::move(s), {src, gamma, beta, dst});
}

void CpuDelegate::add_matmul_redo_step(const memory& a, const memory& b, const memory& bias,
                                       const memory& dst) {
  const memory::desc dm = dst.get_desc();
  const memory::dims od = dm.dims();
  const size_t rank = od.size();
  const std::initializer_list<const memory*> all = {&a, &b, &bias, &dst};
  for (const memory* m : all) {
    if (!*m) continue;
    const memory::desc md = m->get_desc();
    if (md.data_type() != dt::f32 || md.data.format_kind != dnnl_blocked ||
        md.dims().size() != rank) {
      refuse("matmul: an operand the exact redo cannot read");
    }
  }
  if ((rank != 2 && rank != 3) || dm != plain_md(od, dt::f32)) {
    refuse("matmul: a destination the exact redo cannot read");
  }
  const int64_t batch = rank == 3 ? od[0] : 1, m = od[rank - 2], n = od[rank - 1];
  const int64_t k = a.get_desc().dims()[rank - 1];
  const int64_t total = batch * m * n;
  const dnnl_memory_desc_t ad = a.get_desc().data, bd = b.get_desc().data;
  const dnnl_memory_desc_t cd = bias ? bias.get_desc().data : dnnl_memory_desc_t{};
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "matmul,ember:redo_non_finite_f64,forward_inference,,",
            cat({dims_text(a.get_desc().dims()), ":", dims_text(b.get_desc().dims()), ":",
                 dims_text(od)}),
            {}};
  s.run = [a, b, bias, dst, ad, bd, cd, rank, batch, m, n, k, total, threads](void*) {
    float* y = data_of(dst);
    // The common case: every element finite, one scan.
    if (all_within(y, total, std::numeric_limits<float>::max(), threads)) return;
    const float* x = data_of(a);
    const float* w = data_of(b);
    const float* c = bias ? data_of(bias) : nullptr;
    const size_t at = rank - 2;  // where the row index goes in a position
    for (int64_t q = 0; q < batch; ++q) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          float& out = y[(q * m + i) * n + j];
          if (std::isfinite(out)) continue;
          // Products of floats are exact in double, and no sum of them overflows it.
          double sum = 0.0;
          int64_t pa[3] = {q, 0, 0}, pb[3] = {q, 0, 0};
          pa[at] = i;
          pb[at + 1] = j;
          for (int64_t r = 0; r < k; ++r) {
            pa[at + 1] = r;
            pb[at] = r;
            sum += static_cast<double>(x[element_offset(ad, pa)]) *
                   static_cast<double>(w[element_offset(bd, pb)]);
          }
          if (c != nullptr) {
            int64_t pc[3] = {q, 0, 0};
            pc[at] = i;
            pc[at + 1] = j;
            sum += static_cast<double>(c[element_offset(cd, pc)]);
          }
          out = static_cast<float>(sum);
        }
      }
    }
  };
  add_own_step(std::move(s), {a, b, bias, dst});
}

void CpuDelegate::add_matvec_redo_step(std::shared_ptr<PackedMatrix> b, int64_t m, const memory& a,
                                       const memory& dst) {
  const int64_t k = b->k, n = b->n;
  if (a.get_desc().get_size() != static_cast<size_t>(m * k) * sizeof(float) ||
      dst.get_desc().get_size() != static_cast<size_t>(m * n) * sizeof(float)) {
    refuse("matrix-vector product: operands the exact redo cannot read");
  }
  const std::string mk = std::to_string(m), ks = std::to_string(k), ns = std::to_string(n);
  OwnStep s{OwnKind::Exact,
            "matmul,ember:redo_non_finite_f64,forward_inference,,",
            cat({mk, "x", ks, ":", ks, "x", ns, ":", mk, "x", ns}),
            {}};
  const int threads = threads_;
  s.run = [b = std::move(b), a, dst, m, k, n, threads](void*) {
    float* y = data_of(dst);
    if (all_within(y, m * n, std::numeric_limits<float>::max(), threads)) return;
    for (int64_t i = 0; i < m; ++i) {
      const float* x = data_of(a) + i * k;
      float* row = y + i * n;
      for (const PackedMatrix::Panel& p : b->panels) {
        // Column j of the panel is row kk's element p.offset + kk * width + j (PackedMatrix::pack).
        const int64_t width = p.nv * kGroup;
        for (int64_t j = 0; j < width && p.n0 + j < n; ++j) {
          float& out = row[p.n0 + j];
          if (std::isfinite(out)) continue;
          double sum = 0.0;
          const float* col = b->data + p.offset + j;
          for (int64_t kk = 0; kk < k; ++kk) {
            sum += static_cast<double>(x[kk]) * static_cast<double>(col[kk * width]);
          }
          out = static_cast<float>(sum + static_cast<double>(b->bias[p.n0 + j]));
        }
      }
    }
  };
  add_own_step(std::move(s), {a, dst});
}

void CpuDelegate::add_conv_redo_step(const memory& src, const memory& wei, const memory& bias,
                                     const memory& dst, int64_t r, int64_t groups,
                                     const memory::dims& strides, const memory::dims& pad_l,
                                     const memory::dims& dil) {
  const std::initializer_list<const memory*> all = {&src, &wei, &bias, &dst};
  for (const memory* m : all) {
    if (*m &&
        (m->get_desc().data_type() != dt::f32 || m->get_desc().data.format_kind != dnnl_blocked)) {
      refuse("convolution: an operand the exact redo cannot read");
    }
  }
  const memory::dims sd = src.get_desc().dims(), od = dst.get_desc().dims();
  const memory::dims wd = wei.get_desc().dims();
  if (r < 1 || r > 3 || static_cast<int64_t>(sd.size()) != r + 2 || od.size() != sd.size() ||
      static_cast<int64_t>(wd.size()) != r + 2 + (groups > 1)) {
    refuse("convolution: ranks the exact redo cannot read");
  }
  // Sizes, strides, paddings and dilations over 3 spatial dims (lower ranks: size 1, none).
  struct Geometry {
    int64_t batch, in_c, out_c, groups;
    int64_t in[3], out[3], kernel[3], stride[3], pad[3], step[3];
  } g{};
  g.batch = od[0];
  g.in_c = sd[1];
  g.out_c = od[1];
  g.groups = groups;
  for (int64_t d = 0; d < 3; ++d) {
    const bool real = d >= 3 - r;
    const int64_t k = d - (3 - r);
    g.in[d] = real ? sd[2 + k] : 1;
    g.out[d] = real ? od[2 + k] : 1;
    g.kernel[d] = real ? wd[wd.size() - r + k] : 1;
    g.stride[d] = real ? strides[k] : 1;
    g.pad[d] = real ? pad_l[k] : 0;
    g.step[d] = real ? dil[k] + 1 : 1;
  }
  const dnnl_memory_desc_t s_d = src.get_desc().data, w_d = wei.get_desc().data;
  const dnnl_memory_desc_t o_d = dst.get_desc().data;
  const dnnl_memory_desc_t b_d = bias ? bias.get_desc().data : dnnl_memory_desc_t{};
  const int64_t total = static_cast<int64_t>(dst.get_desc().get_size() / sizeof(float));
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "convolution,ember:redo_non_finite_f64,forward_inference,,",
            cat({dims_text(sd), ":", dims_text(wd), ":", dims_text(od)}),
            {}};
  s.run = [src, wei, bias, dst, g, r, s_d, w_d, o_d, b_d, total, threads](void*) {
    float* y = data_of(dst);
    // The common case: every element finite (a blocked layout's zero padding included), one scan.
    if (all_within(y, total, std::numeric_limits<float>::max(), threads)) return;
    const float* x = data_of(src);
    const float* w = data_of(wei);
    const float* c = bias ? data_of(bias) : nullptr;
    const int64_t ocg = g.out_c / g.groups, icg = g.in_c / g.groups;
    const int64_t lead = 3 - r;  // unused spatial slots before the real ones
    const bool grouped = g.groups > 1;
    int64_t po[5], ps[5], pw[6];
    for (int64_t n = 0; n < g.batch; ++n) {
      for (int64_t oc = 0; oc < g.out_c; ++oc) {
        for (int64_t o0 = 0; o0 < g.out[0]; ++o0) {
          for (int64_t o1 = 0; o1 < g.out[1]; ++o1) {
            for (int64_t o2 = 0; o2 < g.out[2]; ++o2) {
              const int64_t o[3] = {o0, o1, o2};
              po[0] = n;
              po[1] = oc;
              for (int64_t d = lead; d < 3; ++d) po[2 + d - lead] = o[d];
              float& out = y[element_offset(o_d, po)];
              if (std::isfinite(out)) continue;
              const int64_t grp = oc / ocg;
              double sum = 0.0;
              for (int64_t ic = 0; ic < icg; ++ic) {
                for (int64_t k0 = 0; k0 < g.kernel[0]; ++k0) {
                  for (int64_t k1 = 0; k1 < g.kernel[1]; ++k1) {
                    for (int64_t k2 = 0; k2 < g.kernel[2]; ++k2) {
                      const int64_t k[3] = {k0, k1, k2};
                      bool inside = true;
                      ps[0] = n;
                      ps[1] = grp * icg + ic;
                      int64_t at = 0;
                      if (grouped) pw[at++] = grp;
                      pw[at++] = oc % ocg;
                      pw[at++] = ic;
                      for (int64_t d = lead; d < 3; ++d) {
                        const int64_t i = o[d] * g.stride[d] - g.pad[d] + k[d] * g.step[d];
                        inside = inside && i >= 0 && i < g.in[d];
                        ps[2 + d - lead] = i;
                        pw[at++] = k[d];
                      }
                      if (!inside) continue;
                      sum += static_cast<double>(x[element_offset(s_d, ps)]) *
                             static_cast<double>(w[element_offset(w_d, pw)]);
                    }
                  }
                }
              }
              if (c != nullptr) {
                const int64_t pb[1] = {oc};
                sum += static_cast<double>(c[element_offset(b_d, pb)]);
              }
              out = static_cast<float>(sum);
            }
          }
        }
      }
    }
  };
  add_own_step(std::move(s), {src, wei, bias, dst});
}

}  // namespace ember::cpu::delegate
