// The delegate's NaN-exact steps (nan_exact.h): the clamps oneDNN would compute with max/min,
// max pooling and softmax's NaN rows (issue 20).
#include <algorithm>
#include <initializer_list>
#include <limits>
#include <string>

#include "backends/cpu/cpu_delegate.h"
#include "backends/cpu/nan_exact.h"

namespace ember::cpu::delegate {
namespace {

float* data_of(const memory& m) {
  void* p = nullptr;
  dnnl_memory_get_data_handle(m.get(), &p);
  return static_cast<float*>(p);
}

// Appends (gcc 12 warns falsely of overlapping copies in chains of operator+).
std::string dims_text(const memory::dims& d) {
  std::string out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0) out.append("x");
    out.append(std::to_string(d[i]));
  }
  return out;
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

std::span<const PostOp> CpuDelegate::fused_post_ops(const OpDesc& op) {
  size_t k = 0;
  Clamp c;
  const size_t n = op.post_ops.size();
  // A gelu last stays fused: the step after the primitive (add_post_op_steps) makes its +inf NaN.
  while (k < n && !is_clamp(op.post_ops[k], &c) && !(is_gelu_erf(op.post_ops[k]) && k + 1 < n)) {
    ++k;
  }
  return std::span<const PostOp>(op.post_ops).first(k);
}

void CpuDelegate::add_post_op_steps(const OpDesc& op, size_t from, const memory& dst) {
  if (from > 0 && from == op.post_ops.size() && is_gelu_erf(op.post_ops.back())) {
    add_gelu_nan_step(dst);  // the primitive ran the gelu (fused_post_ops)
  }
  for (size_t i = from; i < op.post_ops.size(); ++i) {
    const PostOp& p = op.post_ops[i];
    Clamp c;
    if (is_clamp(p, &c)) {
      add_clamp_step(dst, dst, c);
    } else if (!p.is_sum) {
      auto [alpha, beta] = eltwise_params(p.alg, p.alpha, p.beta);
      dnnl::eltwise_forward::desc d(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg),
                                    dst.get_desc(), alpha, beta);
      dnnl::primitive_attr attr;
      attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
      dnnl::eltwise_forward::primitive_desc pd(d, attr, engine_);
      add_step<dnnl::eltwise_forward>(pd, {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}});
      if (is_gelu_erf(p)) add_gelu_nan_step(dst);
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
  const memory::desc md = dst.get_desc();
  if (src.get_desc() != md || md.data_type() != dt::f32) {
    refuse("clamp: source and destination layouts differ");
  }
  const int64_t total = static_cast<int64_t>(md.get_size() / sizeof(float));
  OwnStep s{OwnKind::Exact,
            "eltwise,ember:clamp,forward_inference,,",
            cat({"alg:clip alpha:", std::to_string(act.lo), " beta:", std::to_string(act.hi), " ",
                 dims_text(md.dims())}),
            {}};
  const dnnl_memory_desc_t& d = md.data;
  bool padded = false;
  for (int i = 0; i < d.ndims; ++i) padded = padded || d.padded_dims[i] != d.dims[i];
  const int threads = threads_;
  if (!padded || (act.lo <= 0.f && 0.f <= act.hi)) {
    // Every element, the zeros of a blocked layout's padding included (they stay zero).
    s.run = [src, dst, total, act, threads]() {
      const float* x = data_of(src);
      float* y = data_of(dst);
      if (x != y) std::copy(x, x + total, y);
      clamp_in_place(y, total, act, threads);
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
    if (!ok) refuse("clamp of a padded layout it does not know");
    const int64_t batch = d.dims[0], channels = d.dims[1], blocks = d.padded_dims[1] / b;
    s.run = [src, dst, total, act, batch, channels, blocks, b, spatial, threads]() {
      const float* x = data_of(src);
      float* y = data_of(dst);
      if (x != y) std::copy(x, x + total, y);
      for (int64_t n = 0; n < batch; ++n) {
        for (int64_t cb = 0; cb < blocks; ++cb) {
          float* chunk = y + (n * blocks + cb) * spatial * b;
          const int64_t valid = std::min(b, channels - cb * b);
          if (valid == b) {
            clamp_in_place(chunk, spatial * b, act, threads);
            continue;
          }
          for (int64_t i = 0; i < spatial; ++i) clamp_in_place(chunk + i * b, valid, act, 1);
        }
      }
    };
  }
  add_own_step(std::move(s));
}

void CpuDelegate::add_gelu_nan_step(const memory& dst) {
  const memory::desc md = dst.get_desc();
  if (md.data_type() != dt::f32) refuse("gelu: a destination that is not float32");
  int64_t elements = 1;
  for (const int64_t d : md.dims()) elements *= d;
  if (elements < 2) return;
  // Every element, a blocked layout's padding included: gelu(0) is 0 there, which stays.
  const int64_t total = static_cast<int64_t>(md.get_size() / sizeof(float));
  OwnStep s{OwnKind::Exact,
            "eltwise,ember:gelu_posinf_nan,forward_inference,,",
            cat({"alg:posinf_to_nan ", dims_text(md.dims())}),
            {}};
  const int threads = threads_;
  s.run = [dst, total, threads]() { posinf_to_nan(data_of(dst), total, threads); };
  add_own_step(std::move(s));
}

void CpuDelegate::build_max_pool(const OpDesc& op, memory src, memory::desc dst_md) {
  const int64_t r = op.ints[1];
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
    w.kernel[at] = op.ints[2 + k];
    w.stride[at] = op.ints[2 + r + k];
    w.pad[at] = op.ints[2 + 2 * r + k];
    w.dilation[at] = op.ints[2 + 4 * r + k];
  }
  memory dst = make_output(op, dst_md);
  const int threads = threads_;
  OwnStep s{OwnKind::Exact,
            "pooling,ember:max,forward_inference,,",
            cat({"alg:pooling_max ", dims_text(sd), ":", dims_text(od)}),
            {}};
  s.run = [src, dst, in, out, w, threads]() {
    max_pool(data_of(src), in, data_of(dst), out, w, threads);
  };
  add_own_step(std::move(s));
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
  s.run = [src, dst, outer, len, inner, threads]() {
    softmax_nan_rows(data_of(src), data_of(dst), outer, len, inner, threads);
  };
  add_own_step(std::move(s));
}

}  // namespace ember::cpu::delegate
