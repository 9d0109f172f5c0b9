// The engine's exact steps: the NaN-exact ones (kernels/nan_exact.h: the clamps oneDNN
// would compute with max/min, max pooling and softmax's NaN rows) and layer norm by the portable
// library's row kernel (statistics in double); the redo in double of the sums that oneDNN's float
// order overflowed is exact_redo.cc.
#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "backends/cpu/kernels/elementwise.h"
#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/onednn/families.h"
#include "runtime/kernels/portable/util/row_kernels.h"

namespace ember::cpu::delegate {
namespace {

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

const char* unary_name(UnaryOp op) {
  switch (op) {
    case UnaryOp::Abs:
      return "abs";
    case UnaryOp::Exp:
      return "exp";
    case UnaryOp::Log:
      return "log";
    case UnaryOp::Floor:
      return "floor";
    case UnaryOp::Ceil:
      return "ceil";
    case UnaryOp::Round:
      return "round";
    case UnaryOp::Sin:
      return "sin";
    case UnaryOp::Cos:
      return "cos";
    case UnaryOp::LeakyRelu:
      return "leaky_relu";
    case UnaryOp::Reciprocal:
      return "reciprocal";
  }
  return "unary";
}

// Below this many floats a layer norm runs on the calling thread (a parallel region costs a few
// microseconds).
constexpr int64_t kMinParallelFloats = int64_t{1} << 15;

}  // namespace

bool is_clamp(const PostOp& p, Clamp* c) {
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

bool is_own_eltwise(const PostOp& p) {
  Clamp c;
  // Quantize and dequantize have no oneDNN algorithm: their chain of linear, round and clip
  // post-ops would repeat eltwise_linear, and oneDNN 2.6's injector then gives every repeat the
  // first one's parameters (measured: linear(50) then linear(1, -5) computed 2500 x).
  return is_clamp(p, &c) ||
         (!p.is_sum && (p.alg == EltwiseAlg::Logistic || p.alg == EltwiseAlg::GeluErf ||
                        p.alg == EltwiseAlg::Elu || p.alg == EltwiseAlg::Quantize ||
                        p.alg == EltwiseAlg::Dequantize || p.alg == EltwiseAlg::Rsqrt ||
                        p.alg == EltwiseAlg::Neg || unary_op_of(p.alg).has_value()));
}

std::optional<UnaryOp> unary_op_of(EltwiseAlg alg) {
  switch (alg) {
    case EltwiseAlg::Abs:
      return UnaryOp::Abs;
    case EltwiseAlg::Exp:
      return UnaryOp::Exp;
    case EltwiseAlg::Log:
      return UnaryOp::Log;
    case EltwiseAlg::Floor:
      return UnaryOp::Floor;
    case EltwiseAlg::Ceil:
      return UnaryOp::Ceil;
    case EltwiseAlg::Sin:
      return UnaryOp::Sin;
    case EltwiseAlg::Cos:
      return UnaryOp::Cos;
    case EltwiseAlg::LeakyRelu:
      return UnaryOp::LeakyRelu;
    case EltwiseAlg::Reciprocal:
      return UnaryOp::Reciprocal;
    case EltwiseAlg::Round:
      return UnaryOp::Round;
    default:
      return std::nullopt;
  }
}

Result<dnnl::eltwise_forward::primitive_desc> eltwise_primitive(Build& b, const memory::desc& src,
                                                                const PostOp& p) try {
  auto [alpha, beta] = eltwise_params(p.alg, p.alpha, p.beta);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg), src, alpha,
                                beta);
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return dnnl::eltwise_forward::primitive_desc(d, attr, b.engine());
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_post_op_steps(Build& b, const OpDesc& op, size_t from, const memory& dst) try {
  for (size_t i = from; i < op.post_ops.size(); ++i) {
    const PostOp& p = op.post_ops[i];
    if (p.alg == EltwiseAlg::Quantize && !p.is_sum && i + 1 < op.post_ops.size() &&
        !op.post_ops[i + 1].is_sum && op.post_ops[i + 1].alg == EltwiseAlg::Dequantize) {
      EMBER_TRY(add_quantize_step(b, dst, dst, p, &op.post_ops[++i]));  // one pass for the pair
    } else if (is_own_eltwise(p)) {
      EMBER_TRY(add_own_eltwise_step(b, dst, dst, p));
    } else if (!p.is_sum) {
      EMBER_ASSIGN_OR_RETURN(const auto pd, eltwise_primitive(b, dst.get_desc(), p));
      EMBER_TRY(
          b.add_primitive<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}}));
    } else {
      EMBER_ASSIGN_OR_RETURN(memory summand, b.as(p.tensor, dst.get_desc()));
      dnnl::binary::desc d(dnnl::algorithm::binary_add, dst.get_desc(), summand.get_desc(),
                           dst.get_desc());
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::binary::primitive_desc pd(d, attr, b.engine());
      EMBER_TRY(b.add_primitive<dnnl::binary>(
          pd, {{DNNL_ARG_SRC_0, dst}, {DNNL_ARG_SRC_1, summand}, {DNNL_ARG_DST, dst}}));
    }
  }
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_clamp_step(Build& b, const memory& src, const memory& dst, Clamp act) {
  PostOp p;
  p.alg = EltwiseAlg::Clip;
  p.alpha = act.lo;
  p.beta = act.hi;
  return add_own_eltwise_step(b, src, dst, p);
}

std::optional<OwnEltwise> own_eltwise_kernel(const PostOp& p) {
  if (Clamp c; is_clamp(p, &c)) {
    return OwnEltwise{
        "eltwise,ember:clamp,forward_inference,,",
        cat({"alg:clip alpha:", std::to_string(c.lo), " beta:", std::to_string(c.hi)}),
        c.lo <= 0.f && 0.f <= c.hi,
        [c](float* y, int64_t n, int threads) { clamp_in_place(y, n, c, threads); }};
  } else if (p.is_sum) {
    return std::nullopt;
  } else if (p.alg == EltwiseAlg::Logistic) {
    return OwnEltwise{"eltwise,ember:logistic,forward_inference,,", "alg:logistic", false,
                      sigmoid_in_place};
  } else if (p.alg == EltwiseAlg::Elu) {
    const float alpha = p.alpha;
    return OwnEltwise{
        "eltwise,ember:elu,forward_inference,,", cat({"alg:elu alpha:", std::to_string(alpha)}),
        true, [alpha](float* y, int64_t n, int threads) { elu_in_place(y, n, alpha, threads); }};
  } else if (p.alg == EltwiseAlg::GeluErf) {
    return OwnEltwise{"eltwise,ember:gelu_erf,forward_inference,,", "alg:gelu_erf", true,
                      gelu_in_place};
  } else if (p.alg == EltwiseAlg::Rsqrt) {
    return OwnEltwise{"eltwise,ember:rsqrt,forward_inference,,", "alg:rsqrt", false,
                      rsqrt_in_place};
  } else if (p.alg == EltwiseAlg::Neg) {
    return OwnEltwise{"eltwise,ember:neg,forward_inference,,", "alg:neg", true, neg_in_place};
  } else if (const std::optional<UnaryOp> u = unary_op_of(p.alg)) {
    const UnaryOp op = *u;
    const float alpha = p.alpha;
    const std::string name = unary_name(op);
    return OwnEltwise{
        cat({"eltwise,ember:", name, ",forward_inference,,"}),
        cat({"alg:", name, op == UnaryOp::LeakyRelu ? " alpha:" + std::to_string(alpha) : ""}),
        unary_keeps_zero(op), [op, alpha](float* y, int64_t n, int threads) {
          unary_in_place(op, y, n, alpha, threads);
        }};
  }
  return std::nullopt;
}

Error add_own_eltwise_step(Build& b, const memory& src, const memory& dst, const PostOp& p) {
  if (!p.is_sum && (p.alg == EltwiseAlg::Quantize || p.alg == EltwiseAlg::Dequantize)) {
    return add_quantize_step(b, src, dst, p);
  }
  std::optional<OwnEltwise> k = own_eltwise_kernel(p);
  if (!k) return refused("an element-wise op Ember has no kernel of");
  return add_in_place_step(b, src, dst, k->zero_stays_zero, std::move(k->name), std::move(k->info),
                           std::move(k->kernel));
}

Error eltwise_now(Build& b, const PostOp& p, float* y, int64_t n) try {
  if (p.is_sum || p.alg == EltwiseAlg::Quantize || p.alg == EltwiseAlg::Dequantize) {
    return refused("eltwise_now: not a float element-wise op");
  }
  if (is_own_eltwise(p)) {
    std::optional<OwnEltwise> k = own_eltwise_kernel(p);
    if (!k) return refused("an element-wise op Ember has no kernel of");
    k->kernel(y, n, 1);
    return Error::Ok;
  }
  const memory::desc md({n}, dt::f32, tag::a);
  auto [alpha, beta] = eltwise_params(p.alg, p.alpha, p.beta);
  dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg), md, alpha,
                                beta);
  const dnnl::eltwise_forward::primitive_desc pd(d, b.engine());
  const memory m(md, b.engine(), y);
  dnnl::stream stream(b.engine());
  dnnl::eltwise_forward(pd).execute(stream, {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}});
  stream.wait();
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_in_place_step(Build& b, const memory& src, const memory& dst, bool zero_stays_zero,
                        std::string name, std::string info, InPlaceKernel kernel) try {
  const memory::desc md = dst.get_desc();
  if (src.get_desc() != md || md.data_type() != dt::f32) {
    return refused(cat({name, ": source and destination layouts differ"}));
  }
  const int64_t total = static_cast<int64_t>(md.get_size() / sizeof(float));
  OwnStep s{OwnKind::Exact, std::move(name), cat({info, " ", dims_text(md.dims())}), {}};
  const dnnl_memory_desc_t& d = md.data;
  bool padded = false;
  for (int i = 0; i < d.ndims; ++i) padded = padded || d.padded_dims[i] != d.dims[i];
  const int threads = b.threads();
  if (!padded || zero_stays_zero) {
    // Every element, the zeros of a blocked layout's padding included (they stay zero).
    s.run = [src, dst, total, kernel = std::move(kernel), threads](void*) {
      const float* x = data_as<float>(src);
      float* y = data_as<float>(dst);
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
    const int64_t block = ok ? blk.inner_blks[0] : 1;
    ok = ok && blk.strides[1] == spatial * block && blk.strides[0] == d.padded_dims[1] * spatial;
    if (!ok) return refused(cat({s.what, " of a padded layout it does not know"}));
    const int64_t batch = d.dims[0], channels = d.dims[1], blocks = d.padded_dims[1] / block;
    s.run = [src, dst, total, kernel = std::move(kernel), batch, channels, blocks, block, spatial,
             threads](void*) {
      const float* x = data_as<float>(src);
      float* y = data_as<float>(dst);
      if (x != y) std::copy(x, x + total, y);
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t cb = 0; cb < blocks; ++cb) {
          float* chunk = y + (n * blocks + cb) * spatial * block;
          const int64_t valid = std::min(block, channels - cb * block);
          if (valid == block) {
            kernel(chunk, spatial * block, threads);
            continue;
          }
          for (int64_t i = 0; i < spatial; ++i) kernel(chunk + i * block, valid, 1);
        }
      }
    };
  }
  b.add_own_step(std::move(s));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error build_max_pool(Build& b, const OpDesc& op, const memory& source,
                     const memory::desc& dst_layout) try {
  const PoolParams& p = op.pool();
  const auto r = static_cast<int64_t>(p.rank());
  const memory::dims sd = b.dims_of(op.inputs[0]);
  const memory::dims od = b.dims_of(op.output);
  memory src = source;
  memory::desc dst_md = dst_layout;
  PoolLayout in, out;
  if (!pool_layout(src.get_desc(), r, &in)) {
    EMBER_ASSIGN_OR_RETURN(src, b.as(op.inputs[0], plain_md(sd, dt::f32)));
    if (!pool_layout(src.get_desc(), r, &in)) return refused("max pooling layout");
  }
  if (!pool_layout(dst_md, r, &out)) {
    dst_md = plain_md(od, dt::f32);
    if (!pool_layout(dst_md, r, &out)) return refused("max pooling layout");
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
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, dst_md));
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "pooling,ember:max,forward_inference,,",
            cat({"alg:pooling_max ", dims_text(sd), ":", dims_text(od)}),
            {}};
  s.run = [src, dst, in, out, w, threads](void*) {
    max_pool(data_as<float>(src), in, data_as<float>(dst), out, w, threads);
  };
  b.add_own_step(std::move(s));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_softmax_rows_step(Build& b, const memory& src, const memory& dst, int64_t axis) try {
  const memory::dims d = src.get_desc().dims();
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= d[i];
  for (size_t i = static_cast<size_t>(axis) + 1; i < d.size(); ++i) inner *= d[i];
  const int64_t len = d[axis];
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "softmax,ember:nan_rows,forward_inference,,",
            cat({dims_text(d), " axis:", std::to_string(axis)}),
            {}};
  s.run = [src, dst, outer, len, inner, threads](void*) {
    softmax_nan_rows(data_as<float>(src), data_as<float>(dst), outer, len, inner, threads);
  };
  b.add_own_step(std::move(s));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_softmax_last_dim_step(Build& b, const memory& src, const memory& dst) try {
  const memory::dims d = src.get_desc().dims();
  if (src.get_desc() != plain_md(d, dt::f32) || dst.get_desc() != src.get_desc()) {
    return refused("softmax: source and destination are not the same plain float32 layout");
  }
  const int64_t len = d.back(), rows = len == 0 ? 0 : checked_numel(d) / len;
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "softmax,ember:softmax,forward_inference,,",
            cat({dims_text(d), " axis:", std::to_string(d.size() - 1)}),
            {}};
  s.run = [src, dst, rows, len, threads](void*) {
    softmax_rows(data_as<float>(src), data_as<float>(dst), rows, len, threads);
  };
  b.add_own_step(std::move(s));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_layer_norm_step(Build& b, const memory& src, const memory& gamma, const memory& beta,
                          const memory& dst, float eps) try {
  const memory::desc md = src.get_desc();
  const memory::dims d = md.dims();
  if (d.empty() || md != dst.get_desc() || md != plain_md(d, dt::f32)) {
    return refused("layer norm: source and destination are not the same plain float32 layout");
  }
  const int64_t n = d.back();
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < d.size(); ++i) rows *= d[i];
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "layer_normalization,ember:rows_f64,forward_inference,,",
            cat({dims_text(d), " eps:", std::to_string(eps)}),
            {}};
  s.run = [src, gamma, beta, dst, rows, n, eps, threads](void*) {
    const float* x = data_as<float>(src);
    float* y = data_as<float>(dst);
    const float* w = gamma ? data_as<float>(gamma) : nullptr;
    const float* shift = beta ? data_as<float>(beta) : nullptr;
    const int t =
        rows * n < kMinParallelFloats ? 1 : static_cast<int>(std::min<int64_t>(threads, rows));
#pragma omp parallel for num_threads(t) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      float mean, rstd;  // the kernel's statistics, unused here
      layer_norm_row_f32(x + r * n, y + r * n, n, w, shift, eps, &mean, &rstd);
    }
  };
  b.add_own_step(std::move(s), {src, gamma, beta, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
