// The matmul family: MatMul (and the float form of a QuantMatMul) on oneDNN's matmul, in integers
// where both operands are on int8 grids, or through Ember's packed GEMM by a constant matrix.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/onednn/families.h"
#include "backends/cpu/onednn/quant_util.h"
#include "runtime/kernels/gemm/gemm.h"

namespace ember::cpu::delegate {
namespace {

// A matmul of one row by a constant matrix (a classifier, a decode step's projections) through
// Ember's packed GEMM: it streams the weight at twice oneDNN 2.6's bandwidth (packed_gemm.h);
// of several rows (a linear layer over a sequence) where own_linear_kernels_chosen() (AVX2).
// The bias, a leading residual sum and a clamp happen in the kernel; other element-wise
// post-ops follow as steps on its output. False (nothing built) when it does not apply.
Result<bool> try_matvec(Build& b, const OpDesc& op, const memory::dims& ad, const memory::dims& bd,
                        const memory::dims& od) try {
  const size_t n = ad.size();
  for (size_t i = 0; i + 2 < n; ++i) {
    if (ad[i] != 1) return false;  // no batch
  }
  const int64_t m = ad[n - 2], k = ad[n - 1], cols = bd[n - 1];
  if (m < 1 || k < 1 || cols < 1 || (m > 1 && !own_linear_kernels_chosen())) return false;
  size_t post = 0;
  if (!op.post_ops.empty() && op.post_ops[0].is_sum) ++post;
  Clamp act;
  const bool clamp = post + 1 == op.post_ops.size() && as_clamp({op.post_ops[post]}, &act);
  if (clamp) ++post;
  for (size_t i = post; i < op.post_ops.size(); ++i) {
    if (op.post_ops[i].is_sum) return false;  // a sum after an element-wise op: oneDNN's
  }
  if (op.inputs[2] >= 0) {
    const int64_t count = checked_numel(b.tensor(op.inputs[2]).dims);
    if (count != cols && count != 1) return false;
  }
  // The weight and bias packed once for every batch size the graph is built for.
  EMBER_ASSIGN_OR_RETURN(
      std::shared_ptr<PackedMatrix> packed,
      b.shared<PackedMatrix>("matvec", [&]() -> Result<std::shared_ptr<PackedMatrix>> {
        std::vector<float> bias(static_cast<size_t>(cols), 0.f);
        if (op.inputs[2] >= 0) {
          const int64_t count = checked_numel(b.tensor(op.inputs[2]).dims);
          EMBER_ASSIGN_OR_RETURN(const memory bias_m,
                                 b.as(op.inputs[2], plain_md(b.dims_of(op.inputs[2]), dt::f32)));
          const auto* v = static_cast<const float*>(bias_m.get_data_handle());
          for (int64_t j = 0; j < cols; ++j) bias[j] = v[count == 1 ? 0 : j];
        }
        // The weight as [cols][k] (PyTorch's [out][in]), then packed.
        std::vector<uint8_t> order(n);
        for (size_t i = 0; i < n; ++i) order[i] = static_cast<uint8_t>(i);
        std::swap(order[n - 2], order[n - 1]);
        EMBER_ASSIGN_OR_RETURN(const memory w, b.as(op.inputs[1], plain_md(bd, dt::f32, order)));
        auto p = std::make_shared<PackedMatrix>(
            PackedMatrix::pack(static_cast<const float*>(w.get_data_handle()), bias.data(), k, cols,
                               b.weight_storage()));
        EMBER_TRY(b.storage_error());
        return p;
      }));
  const memory::desc a_md = plain_md(ad, dt::f32);
  EMBER_ASSIGN_OR_RETURN(memory a, b.as(op.inputs[0], a_md));
  // With a leading sum, the output already holds the summand (make_output puts it there).
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, plain_md(od, dt::f32)));
  const bool sum = !op.post_ops.empty() && op.post_ops[0].is_sum;
  // The exact redo of non-finite sums (add_matvec_redo_step) needs the raw sum: the clamp runs
  // after it, as a step of its own (one row: cheap). With a sum fused, the summand is gone (it may
  // share the output's buffer): such a matvec keeps the kernel's result, as build_float_matmul
  // does.
  if (sum) {
    b.add_own_step(matvec_step(std::move(packed), m, act, sum, b.threads(), a, dst));
  } else {
    b.add_own_step(matvec_step(packed, m, Clamp{}, false, b.threads(), a, dst));
    EMBER_TRY(add_matvec_redo_step(b, std::move(packed), m, a, dst));
    if (clamp) EMBER_TRY(add_clamp_step(b, dst, dst, act));
  }
  // The post-ops the kernel does not apply, in place, in order.
  EMBER_TRY(add_post_op_steps(b, op, post, dst));
  return true;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

// A MatMul of two operands on int8 grids (op.matmul(): their parameters) in integers, u8 x s8 on
// oneDNN, where the CPU has VNNI and int8 is on; post-ops as build_float_matmul's. False (nothing
// built) otherwise: the float matmul of the dequantized values is the reference's.
Result<bool> try_int8_matmul(Build& b, const OpDesc& op, const memory::dims& ad,
                             const memory::dims& bd, const memory::dims& od) try {
  // Without VNNI, oneDNN adds pairs of u8 x s8 products in 16 bits, which activations (any of
  // int8's values) can saturate: such matmuls stay float.
  const MatMulParams& p = op.matmul();
  if (!p.quantized || op.inputs[2] >= 0 || !b.int8() || !b.int8_any_weights()) return false;
  const float sa = p.a.scale, za = p.a.zero_point, sb = p.b.scale, zb = p.b.zero_point;
  if (!int8_params(sa, za) || !int8_params(sb, zb)) return false;
  // The largest sum, k products of 255 steps by 255, must fit oneDNN's int32 accumulator and
  // stay a finite float32 when scaled (float32's own sum would overflow there; the float matmul
  // and its redo handle that).
  const double k = static_cast<double>(ad.back()), largest = 65025.0 * k;
  if (largest > 2147483647.0 || !(largest * sa * sb < 1e37)) return false;
  // The operands' integers, read through any strides (a permuted view): a's + 128 as uint8, b's
  // as int8, each exact (x / scale lands within rounding of an integer, PyTorch's q - zero point).
  auto integers = [&](int32_t id, const memory::dims& d, dt type, float scale,
                      float shift) -> Result<memory> {
    EMBER_ASSIGN_OR_RETURN(const memory from, b.src_memory(id));
    if (from.get_desc().dims() != d) return refused("matmul operand view");
    EMBER_ASSIGN_OR_RETURN(memory to, b.scratch_activation(plain_md(d, type)));
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    attr.set_output_scales(0, {1.f / scale});
    attr.set_zero_points(DNNL_ARG_DST, 0, {static_cast<int32_t>(shift)});
    dnnl::reorder::primitive_desc pd(b.engine(), from.get_desc(), b.engine(), to.get_desc(), attr);
    EMBER_TRY(b.add_primitive<dnnl::reorder>(pd, {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}));
    return to;
  };
  EMBER_ASSIGN_OR_RETURN(const memory a, integers(op.inputs[0], ad, dt::u8, sa, za + 128.f));
  EMBER_ASSIGN_OR_RETURN(const memory b_int, integers(op.inputs[1], bd, dt::s8, sb, zb));
  // sum((qa - za) * (qb - zb)) * sa * sb: the reference's value up to its float rounding.
  EMBER_ASSIGN_OR_RETURN(dnnl::primitive_attr attr, b.attr_for(op));
  attr.set_output_scales(0, {sa * sb});
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  attr.set_zero_points(DNNL_ARG_WEIGHTS, 0, {DNNL_RUNTIME_S32_VAL});
  dnnl::matmul::desc d(a.get_desc(), b_int.get_desc(), memory::desc(), plain_md(od, dt::f32));
  dnnl::matmul::primitive_desc pd(d, attr, b.engine());
  auto zero_point = [&](float z) -> Result<memory> {
    EMBER_ASSIGN_OR_RETURN(const memory m,
                           b.buffer(memory::desc({1}, dt::s32, tag::x), Held::Weights));
    *data_as<int32_t>(m) = static_cast<int32_t>(z);
    return m;
  };
  EMBER_ASSIGN_OR_RETURN(const memory za_m, zero_point(za + 128.f));
  EMBER_ASSIGN_OR_RETURN(const memory zb_m, zero_point(zb));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  EMBER_TRY(
      b.add_primitive<dnnl::matmul>(pd, {{DNNL_ARG_SRC, a},
                                         {DNNL_ARG_WEIGHTS, b_int},
                                         {DNNL_ARG_DST, dst},
                                         {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, za_m},
                                         {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_WEIGHTS, zb_m}}));
  b.count_int8_matmul();
  EMBER_TRY(add_post_op_steps(b, op, Build::fused_post_ops(op).size(), dst));
  return true;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

// Products of two activations (attention's scores and weighted sums) up to this many multiply-adds
// per batch item run on Ember's GEMM (runtime/kernels/gemm), which has no JIT: oneDNN 2.6's
// AVX2 matmul is its sgemm, whose kernels are generated at the first call of the process, 25 ms
// (a whole small transformer's first output, 20 times its steady-state run) for a 4x5x8 product.
// Larger products keep oneDNN's, where that cost is small against the work.
constexpr int64_t kOwnMatMulMaxMacs = int64_t{64} * 64 * 64;

// The product of two activations, float32, without bias, on Ember's GEMM (see above); the
// post-ops as steps after it. Its float sums are redone in double where they come out non-finite
// (gemm.h), the rule the redo step keeps for oneDNN's.
Result<bool> try_own_small_matmul(Build& b, const OpDesc& op, const memory::dims& ad,
                                  const memory::dims& bd, const memory::dims& od) try {
  const size_t r = ad.size();
  const int64_t m = ad[r - 2], k = ad[r - 1], n = bd[r - 1];
  const int64_t batch = r == 3 ? ad[0] : 1;
  if (!b.own_kernels() || op.inputs[2] >= 0 || m < 1 || k < 1 || n < 1 ||
      m * n * k > kOwnMatMulMaxMacs) {
    return false;
  }
  // Each operand through its strides where it is a plain layout, else a dense copy.
  auto operand = [&](int32_t id, const memory::dims& d) -> Result<memory> {
    EMBER_ASSIGN_OR_RETURN(const memory src, b.src_memory(id));
    if (src.get_desc().dims() == d && !plain_strides(src.get_desc()).empty()) return src;
    return b.as(id, plain_md(d, dt::f32));
  };
  EMBER_ASSIGN_OR_RETURN(const memory a, operand(op.inputs[0], ad));
  EMBER_ASSIGN_OR_RETURN(const memory w, operand(op.inputs[1], bd));
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, plain_md(od, dt::f32)));
  const memory::dims as = plain_strides(a.get_desc()), ws = plain_strides(w.get_desc());
  const int64_t a_bs = r == 3 ? as[0] : 0, w_bs = r == 3 ? ws[0] : 0;
  const int64_t a_rs = as[r - 2], a_cs = as[r - 1], w_rs = ws[r - 2], w_cs = ws[r - 1];
  const int threads = b.threads();
  OwnStep s{OwnKind::SmallMatMul,
            "matmul,ember:small_gemm,forward_inference,,",
            dims_text(ad) + ":" + dims_text(bd) + ":" + dims_text(od),
            {}};
  s.run = [a, w, dst, batch, m, n, k, a_bs, a_rs, a_cs, w_bs, w_rs, w_cs, threads](void*) {
    const float* x = data_as<const float>(a);
    const float* y = data_as<const float>(w);
    float* z = data_as<float>(dst);
    // Batch items on the threads (a GEMM this small is not worth splitting).
    split(batch, batch * m * n * k < (int64_t{1} << 16) ? 1 : threads,
          [&](int64_t begin, int64_t count) {
            for (int64_t i = begin; i < begin + count; ++i) {
              gemm(GemmProblem<float>{m, n, k, 1.0f, x + i * a_bs, a_rs, a_cs, y + i * w_bs, w_rs,
                                      w_cs, 0.0f, z + i * m * n, n, 1},
                   nullptr);
            }
          });
  };
  b.add_own_step(std::move(s), {a, w, dst});
  EMBER_TRY(add_post_op_steps(b, op, 0, dst));
  return true;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace

Error build_matmul(Build& b, const OpDesc& op) { return build_float_matmul(b, op, b.math_type()); }

Error build_float_matmul(Build& b, const OpDesc& op, dt wdt) try {
  const memory::dims ad = b.dims_of(op.inputs[0]);
  const memory::dims bd = to_dims(b.tensor(op.inputs[1]).dims);
  const memory::dims od = b.dims_of(op.output);
  if (ad.size() < 2 || ad.size() > 3 || bd.size() != ad.size() || od.size() != ad.size()) {
    return refused("matmul ranks disagree");
  }
  const size_t n = ad.size();
  for (size_t i = 0; i + 2 < n; ++i) {
    if (ad[i] != bd[i] || od[i] != ad[i]) return refused("matmul batch sizes differ");
  }
  if (ad[n - 1] != bd[n - 2] || od[n - 2] != ad[n - 2] || od[n - 1] != bd[n - 1]) {
    return refused("matmul sizes disagree");
  }
  EMBER_ASSIGN_OR_RETURN(const bool int8_built, try_int8_matmul(b, op, ad, bd, od));
  if (int8_built) return Error::Ok;
  const bool const_b = b.tensor(op.inputs[1]).kind == TensorKind::Weight;
  if (b.own_kernels() && const_b) {
    EMBER_ASSIGN_OR_RETURN(const bool matvec_built, try_matvec(b, op, ad, bd, od));
    if (matvec_built) return Error::Ok;
  }
  if (!const_b && wdt == dt::f32) {
    EMBER_ASSIGN_OR_RETURN(const bool own_built, try_own_small_matmul(b, op, ad, bd, od));
    if (own_built) return Error::Ok;
  }
  // A constant weight is loaded only where no build at another batch size reordered it already.
  memory b_src;
  if (!const_b) {
    EMBER_ASSIGN_OR_RETURN(b_src, b.src_memory(op.inputs[1]));
    if (b_src.get_desc().dims() != bd) return refused("matmul weight view");
  }
  // An activation operand that is a strided view (a permuted KV cache) is read through its
  // strides, in float32: oneDNN's matmul takes any plain strides.
  auto operand_md = [&](const memory& m, const memory::dims& d) {
    const bool strided =
        wdt == dt::f32 && !plain_strides(m.get_desc()).empty() && m.get_desc().dims() == d;
    return strided ? m.get_desc() : plain_md(d, wdt);
  };
  EMBER_ASSIGN_OR_RETURN(const memory a_src, b.src_memory(op.inputs[0]));
  const memory::desc a_md = operand_md(a_src, ad);
  const memory::desc b_md = const_b ? memory::desc(bd, wdt, tag::any) : operand_md(b_src, bd);
  const memory::desc o_md = plain_md(od, dt::f32);
  memory::desc bias_md;
  if (op.inputs[2] >= 0) {
    const memory::dims biasd = pad_rank(b.dims_of(op.inputs[2]), od.size());
    if (biasd.size() != od.size()) return refused("matmul bias of higher rank");
    for (size_t i = 0; i < od.size(); ++i) {
      if (biasd[i] != 1 && biasd[i] != od[i]) return refused("matmul bias does not broadcast");
    }
    bias_md = plain_md(biasd, dt::f32);
  }
  dnnl::matmul::desc d(a_md, b_md, bias_md, o_md);
  EMBER_ASSIGN_OR_RETURN(const dnnl::primitive_attr attr, b.attr_for(op));
  dnnl::matmul::primitive_desc pd(d, attr, b.engine());
  EMBER_ASSIGN_OR_RETURN(memory a, b.as(op.inputs[0], pd.src_desc()));
  memory wei;
  if (const_b) {
    EMBER_ASSIGN_OR_RETURN(
        wei,
        b.shared_weight_reorder(op.inputs[1], pd.weights_desc(), "matmul", [&]() -> Result<memory> {
          EMBER_ASSIGN_OR_RETURN(const memory w, b.src_memory(op.inputs[1]));
          if (w.get_desc().dims() != bd) return refused("matmul weight view");
          return w;
        }));
  } else {
    EMBER_ASSIGN_OR_RETURN(wei, b.reorder_weight(b_src, op.inputs[1], pd.weights_desc()));
  }
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  std::vector<std::pair<int, memory>> args = {
      {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  memory bias;
  if (op.inputs[2] >= 0) {
    EMBER_ASSIGN_OR_RETURN(const memory bias_plain,
                           b.as(op.inputs[2], plain_md(b.dims_of(op.inputs[2]), dt::f32)));
    EMBER_ASSIGN_OR_RETURN(bias, b.view(bias_plain, bias_md));
    args.emplace_back(DNNL_ARG_BIAS, bias);
  }
  EMBER_TRY(b.add_primitive<dnnl::matmul>(pd, std::move(args)));
  // oneDNN's float sums overflow in an order of their own near float32's maximum: the redo finds
  // such elements by their non-finite value, which only the raw sum (plus bias) keeps. A fused
  // sum or element-wise post-op (tanh, a residual: clamps, sigmoid and gelu never fuse) can map it
  // to a finite one, or lose the summand the redo would need, so such matmuls keep oneDNN's result
  // (they stay fused: unfusing them would cost every call a pass over the output). bf16 math is not
  // float32's result anyway.
  if (wdt == dt::f32 && Build::fused_post_ops(op).empty()) {
    EMBER_TRY(add_matmul_redo_step(b, a, wei, bias, dst));
  }
  EMBER_TRY(add_post_op_steps(b, op, Build::fused_post_ops(op).size(), dst));
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
