// The redo in double of the sums of average poolings, matmuls and convolutions that oneDNN's float
// order overflowed near float32's maximum: each non-finite output summed again in
// double from the operands and rounded once; one scan of the output where all are finite.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "backends/cpu/kernels/nan_exact.h"
#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {
namespace {

std::string cat(std::initializer_list<std::string> parts) {
  std::string out;
  for (const std::string& p : parts) out.append(p);
  return out;
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

}  // namespace

// After oneDNN's average pooling: each output element that came out inf or NaN (a float sum that
// overflowed near float32's maximum, where ATen's mean is finite, or a window holding inf or NaN)
// is recomputed from the input in double, divided as ATen's avg_pool divides (the window clipped
// to the padded input with count_include_pad, to the input without).
Error add_avg_pool_redo_step(Build& b, const OpDesc& op, const memory& src, const memory& dst,
                             bool include_pad) try {
  const PoolParams& p = op.pool();
  const auto r = static_cast<int64_t>(p.rank());
  const memory::dims sd = b.dims_of(op.inputs[0]), od = b.dims_of(op.output);
  const dnnl_memory_desc_t s_d = src.get_desc().data, o_d = dst.get_desc().data;
  if (s_d.format_kind != dnnl_blocked || o_d.format_kind != dnnl_blocked || r < 1 || r > 3) {
    return refused("average pooling: a layout the exact redo cannot read");
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
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "pooling,ember:redo_non_finite_f64,forward_inference,,",
            cat({include_pad ? "alg:pooling_avg_include_padding " : "alg:pooling_avg ",
                 dims_text(sd), ":", dims_text(od)}),
            {}};
  s.run = [src, dst, g, r, s_d, o_d, batch, channels, total, include_pad, threads](void*) {
    float* y = data_as<float>(dst);
    if (all_within(y, total, std::numeric_limits<float>::max(), threads)) return;
    const float* x = data_as<float>(src);
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
  b.add_own_step(std::move(s), {src, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_matmul_redo_step(Build& b, const memory& a, const memory& w, const memory& bias,
                           const memory& dst) try {
  const memory::desc dm = dst.get_desc();
  const memory::dims od = dm.dims();
  const size_t rank = od.size();
  const std::initializer_list<const memory*> all = {&a, &w, &bias, &dst};
  for (const memory* m : all) {
    if (!*m) continue;
    const memory::desc md = m->get_desc();
    if (md.data_type() != dt::f32 || md.data.format_kind != dnnl_blocked ||
        md.dims().size() != rank) {
      return refused("matmul: an operand the exact redo cannot read");
    }
  }
  if ((rank != 2 && rank != 3) || dm != plain_md(od, dt::f32)) {
    return refused("matmul: a destination the exact redo cannot read");
  }
  const int64_t batch = rank == 3 ? od[0] : 1, m = od[rank - 2], n = od[rank - 1];
  const int64_t k = a.get_desc().dims()[rank - 1];
  const int64_t total = batch * m * n;
  const dnnl_memory_desc_t ad = a.get_desc().data, wd = w.get_desc().data;
  const dnnl_memory_desc_t cd = bias ? bias.get_desc().data : dnnl_memory_desc_t{};
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "matmul,ember:redo_non_finite_f64,forward_inference,,",
            cat({dims_text(a.get_desc().dims()), ":", dims_text(w.get_desc().dims()), ":",
                 dims_text(od)}),
            {}};
  s.run = [a, w, bias, dst, ad, wd, cd, rank, batch, m, n, k, total, threads](void*) {
    float* y = data_as<float>(dst);
    // The common case: every element finite, one scan.
    if (all_within(y, total, std::numeric_limits<float>::max(), threads)) return;
    const float* x = data_as<float>(a);
    const float* weights = data_as<float>(w);
    const float* c = bias ? data_as<float>(bias) : nullptr;
    const size_t at = rank - 2;  // where the row index goes in a position
    for (int64_t q = 0; q < batch; ++q) {
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          float& out = y[(q * m + i) * n + j];
          if (std::isfinite(out)) continue;
          // Products of floats are exact in double, and no sum of them overflows it.
          double sum = 0.0;
          int64_t pa[3] = {q, 0, 0}, pw[3] = {q, 0, 0};
          pa[at] = i;
          pw[at + 1] = j;
          for (int64_t r = 0; r < k; ++r) {
            pa[at + 1] = r;
            pw[at] = r;
            sum += static_cast<double>(x[element_offset(ad, pa)]) *
                   static_cast<double>(weights[element_offset(wd, pw)]);
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
  b.add_own_step(std::move(s), {a, w, bias, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_matvec_redo_step(Build& b, std::shared_ptr<PackedMatrix> packed, int64_t m,
                           const memory& a, const memory& dst) try {
  const int64_t k = packed->k, n = packed->n;
  if (a.get_desc().get_size() != static_cast<size_t>(m * k) * sizeof(float) ||
      dst.get_desc().get_size() != static_cast<size_t>(m * n) * sizeof(float)) {
    return refused("matrix-vector product: operands the exact redo cannot read");
  }
  const std::string mk = std::to_string(m), ks = std::to_string(k), ns = std::to_string(n);
  OwnStep s{OwnKind::Exact,
            "matmul,ember:redo_non_finite_f64,forward_inference,,",
            cat({mk, "x", ks, ":", ks, "x", ns, ":", mk, "x", ns}),
            {}};
  const int threads = b.threads();
  s.run = [packed = std::move(packed), a, dst, m, k, n, threads](void*) {
    float* y = data_as<float>(dst);
    if (all_within(y, m * n, std::numeric_limits<float>::max(), threads)) return;
    for (int64_t i = 0; i < m; ++i) {
      const float* x = data_as<float>(a) + i * k;
      float* row = y + i * n;
      for (const PackedMatrix::Panel& p : packed->panels) {
        // Column j of the panel is row kk's element p.offset + kk * width + j (PackedMatrix::pack).
        const int64_t width = p.nv * kGroup;
        for (int64_t j = 0; j < width && p.n0 + j < n; ++j) {
          float& out = row[p.n0 + j];
          if (std::isfinite(out)) continue;
          double sum = 0.0;
          const float* col = packed->data + p.offset + j;
          for (int64_t kk = 0; kk < k; ++kk) {
            sum += static_cast<double>(x[kk]) * static_cast<double>(col[kk * width]);
          }
          out = static_cast<float>(sum + static_cast<double>(packed->bias[p.n0 + j]));
        }
      }
    }
  };
  b.add_own_step(std::move(s), {a, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Error add_conv_redo_step(Build& b, const memory& src, const memory& wei, const memory& bias,
                         const memory& dst, int64_t r, int64_t groups, const memory::dims& strides,
                         const memory::dims& pad_l, const memory::dims& dil) try {
  const std::initializer_list<const memory*> all = {&src, &wei, &bias, &dst};
  for (const memory* m : all) {
    if (*m &&
        (m->get_desc().data_type() != dt::f32 || m->get_desc().data.format_kind != dnnl_blocked)) {
      return refused("convolution: an operand the exact redo cannot read");
    }
  }
  const memory::dims sd = src.get_desc().dims(), od = dst.get_desc().dims();
  const memory::dims wd = wei.get_desc().dims();
  if (r < 1 || r > 3 || static_cast<int64_t>(sd.size()) != r + 2 || od.size() != sd.size() ||
      static_cast<int64_t>(wd.size()) != r + 2 + (groups > 1)) {
    return refused("convolution: ranks the exact redo cannot read");
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
  const int threads = b.threads();
  OwnStep s{OwnKind::Exact,
            "convolution,ember:redo_non_finite_f64,forward_inference,,",
            cat({dims_text(sd), ":", dims_text(wd), ":", dims_text(od)}),
            {}};
  s.run = [src, wei, bias, dst, g, r, s_d, w_d, o_d, b_d, total, threads](void*) {
    float* y = data_as<float>(dst);
    // The common case: every element finite (a blocked layout's zero padding included), one scan.
    if (all_within(y, total, std::numeric_limits<float>::max(), threads)) return;
    const float* x = data_as<float>(src);
    const float* w = data_as<float>(wei);
    const float* c = bias ? data_as<float>(bias) : nullptr;
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
  b.add_own_step(std::move(s), {src, wei, bias, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
