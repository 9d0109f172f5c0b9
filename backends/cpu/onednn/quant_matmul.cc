// The quantized linear layers and matmuls of the cpu engine (docs/backends/cpu.md "Quantized
// programs"): by weights quantized per output feature (QuantMatMul, PT2E's), in integers on oneDNN
// as onednn/quant_conv.cc's convolutions; by weights quantized by groups of a row
// (GroupQuantMatMul): torchao's 8da4w, 8da8w and weight-only int4/int8, on Ember's kernels
// (kernels/quant_gemm.h). (A MatMul of two quantized activations, attention's, is matmul.cc's.)
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/onednn/families.h"
#include "backends/cpu/onednn/own_steps.h"
#include "backends/cpu/onednn/quant_util.h"

namespace ember::cpu::delegate {
namespace {

// A grouped linear's weight as its integers (one int8 each), unpacked on the first call.
using WeightInts = std::function<Result<const int8_t*>()>;

// What try_dynamic_int8_matmul makes of a weight: its integers in oneDNN's layout, the bias,
// each row's sign.
struct DynamicInt8Weights {
  memory wei, bias, signs;
};

// A grouped weight packed for one of Ember's kernels: the integer one (dot) or the float one.
struct GroupPacked {
  std::shared_ptr<DotPackedMatrix> dot;
  std::shared_ptr<QuantPackedMatrix> packed;
};

// A GroupQuantMatMul that quantizes its input per tensor (PT2E's dynamic quantization), by a
// weight of one group a row, zero points 0 (q [n][k], scales [n], bias [n] or null), on
// oneDNN's u8 x s8 matmul where the CPU has VNNI and int8 is on. False (nothing built)
// otherwise.
Result<bool> try_dynamic_int8_matmul(Build& b, const OpDesc& op, const WeightInts& ints,
                                     const float* scales, const float* bias, int64_t m, int64_t k,
                                     int64_t n);
// Whether QuantMatMul `op` (in integers; weights [n][k]; its post-ops from `fused` on a
// requantize, clamps before) runs on Ember's int8 1x1 kernel: int8 on, where the kernels have no
// VNNI (any weights: 7-bit ones in its quads form, full-range ones in its pairs form), k a
// multiple of 4.
bool own_quant_linear(const Build& b, const OpDesc& op, int64_t k, int64_t n, size_t fused);

}  // namespace

Error build_group_quant_matmul(Build& b, const OpDesc& op) {
  // A dynamically quantized input (7 inputs), or a float one the op quantizes (an input_quant),
  // may have any shape of m * k elements.
  const GroupQuantMatMulParams& p = op.group_quant_matmul();
  const bool quantize = p.input_quant != InputQuant::None;
  const bool dynamic = op.inputs.size() == 7 || quantize;
  const memory::dims wd = b.dims_of(op.inputs[1]), od = b.dims_of(op.output);
  memory::dims ad = b.dims_of(op.inputs[0]);
  if (dynamic && wd.size() == 2 && od.size() == 2) ad = {od[0], checked_numel(ad) / od[0]};
  if (ad.size() != 2 || wd.size() != 2 || od.size() != 2 || ad[1] != wd[1] || od[0] != ad[0] ||
      od[1] != wd[0] || checked_numel(b.tensor(op.inputs[0]).dims) != ad[0] * ad[1]) {
    return refused("grouped quantized matmul sizes disagree");
  }
  const int64_t m = ad[0], k = ad[1], n = wd[0], group = p.group;
  const WeightStorage storage = b.tensor(op.inputs[1]).storage;
  const int64_t bits = storage == WeightStorage::Int4 ? 4 : 8;
  if (k % group != 0 || (bits == 4 && group % 2 != 0)) {
    return refused("grouped quantized matmul: the group size does not divide the rows");
  }
  const int64_t count = n * (k / group);
  // The float parameters read below, alive while the kernels pack them (a reorder of a weight
  // is a buffer of its own, which nothing else holds).
  std::vector<memory> keep;
  auto per_group = [&](int32_t id, const char* what) -> Result<const float*> {
    if (checked_numel(b.tensor(id).dims) != count) {
      return refused(std::string("grouped quantized matmul: one ") + what + " a group");
    }
    return b.weight_data(id, &keep);
  };
  EMBER_ASSIGN_OR_RETURN(const float* scales, per_group(op.inputs[3], "scale"));
  const float* zeros = nullptr;
  if (op.inputs[4] >= 0) {
    EMBER_ASSIGN_OR_RETURN(zeros, per_group(op.inputs[4], "zero point"));
  }
  const float* bias = nullptr;
  if (op.inputs[2] >= 0) {
    if (checked_numel(b.tensor(op.inputs[2]).dims) != n) {
      return refused("grouped quantized matmul: bias size differs from the output features");
    }
    EMBER_ASSIGN_OR_RETURN(bias, b.weight_data(op.inputs[2], &keep));
  }
  // The weight's integers, one int8 each, read only where a build at another batch size did
  // not pack them already.
  std::vector<int8_t> q;
  const WeightInts ints = [&]() -> Result<const int8_t*> {
    if (!q.empty()) return q.data();
    EMBER_ASSIGN_OR_RETURN(const memory stored_m, b.src_memory(op.inputs[1]));
    const auto* stored = data_as<uint8_t>(stored_m);
    q.resize(static_cast<size_t>(n * k));
    for (size_t i = 0; i < q.size(); ++i) {
      if (bits == 8) {
        q[i] = static_cast<int8_t>(stored[i]);
      } else {  // two's complement nibbles, the low one first
        const auto nibble = static_cast<uint8_t>((stored[i / 2] >> (i % 2 ? 4 : 0)) & 0xF);
        q[i] = static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);
      }
    }
    return q.data();
  };
  if (quantize && p.input_quant == InputQuant::PerTensor && zeros == nullptr && group == k) {
    EMBER_ASSIGN_OR_RETURN(const bool built,
                           try_dynamic_int8_matmul(b, op, ints, scales, bias, m, k, n));
    if (built) return Error::Ok;
  }
  EMBER_ASSIGN_OR_RETURN(const memory a,
                         b.as(op.inputs[0], plain_md(b.dims_of(op.inputs[0]), dt::f32)));
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, plain_md(od, dt::f32)));
  memory zero_points, input_scales;  // a's, one a row (7 inputs)
  if (op.inputs.size() == 7) {
    for (int32_t id : {op.inputs[5], op.inputs[6]}) {
      if (checked_numel(b.tensor(id).dims) != m) {
        return refused("grouped quantized matmul: one input zero point and scale a row");
      }
    }
    EMBER_ASSIGN_OR_RETURN(zero_points,
                           b.as(op.inputs[5], plain_md(b.dims_of(op.inputs[5]), dt::f32)));
    EMBER_ASSIGN_OR_RETURN(input_scales,
                           b.as(op.inputs[6], plain_md(b.dims_of(op.inputs[6]), dt::f32)));
  }
  // A quantized input (8da) by a weight of zero points 0 runs in integers from AVX2 up; the rest
  // on the float kernel.
  // Packed once for every batch size the graph is built for.
  EMBER_ASSIGN_OR_RETURN(
      const std::shared_ptr<GroupPacked> packed,
      b.shared<GroupPacked>("group_quant", [&]() -> Result<std::shared_ptr<GroupPacked>> {
        auto g = std::make_shared<GroupPacked>();
        const bool dot = dynamic && own_kernels_supported();
        if (dot && bits == 4 && group % 8 == 0) {
          // Straight from the stored nibbles: no int8 copy of the whole weight.
          EMBER_ASSIGN_OR_RETURN(const memory stored_m, b.src_memory(op.inputs[1]));
          auto packed_dot = std::make_shared<DotPackedMatrix>(DotPackedMatrix::pack_nibbles(
              data_as<uint8_t>(stored_m), zeros, scales, bias, k, n, group, b.weight_storage()));
          EMBER_TRY(b.storage_error());
          if (!packed_dot->data.empty()) {
            g->dot = std::move(packed_dot);
            return g;
          }
        }
        EMBER_ASSIGN_OR_RETURN(const int8_t* qd, ints());
        if (const int dot_bits = dot ? DotPackedMatrix::fits(qd, zeros, k, n, group) : 0) {
          g->dot = std::make_shared<DotPackedMatrix>(
              DotPackedMatrix::pack(qd, scales, bias, k, n, group, dot_bits, b.weight_storage()));
        } else {
          g->packed = std::make_shared<QuantPackedMatrix>(QuantPackedMatrix::pack(
              qd, scales, zeros, bias, k, n, group, bits, b.weight_storage()));
        }
        EMBER_TRY(b.storage_error());
        return g;
      }));
  std::optional<InputQuantizer> quantizer;
  if (quantize) {
    quantizer = {p.eps, p.input_quant == InputQuant::PerTensor};
  }
  b.add_own_step(group_quant_matmul_step(packed->dot, packed->packed, m, b.threads(), quantizer, a,
                                         zero_points, input_scales, dst));
  return Error::Ok;
}

namespace {

Result<bool> try_dynamic_int8_matmul(Build& b, const OpDesc& op, const WeightInts& ints,
                                     const float* scales, const float* bias, int64_t m, int64_t k,
                                     int64_t n) try {
  // Without VNNI oneDNN adds pairs of u8 x s8 products in 16 bits, which saturate: Ember's kernel
  // (dot_gemm) runs those. The largest sum, k products of 255 by 128, fits int32. The weight
  // scales positive: the signs of the weights are their integers' (the non-finite case below).
  const simd::Kernels* kernels = simd::kernels();
  if (!b.int8() || !b.int8_any_weights() || kernels == nullptr ||
      static_cast<double>(k) * 255 * 128 > 2147483647.0) {
    return false;
  }
  for (int64_t j = 0; j < n; ++j) {
    if (!(scales[j] > 0) || !std::isfinite(scales[j])) return false;
  }
  // oneDNN computes sum (q - zp) w times the weight scales: its output scales are constants
  // (runtime ones take it from brgemm to its slower gemm:jit: 0.50 against 0.33 ms for
  // 128x768x768), and its source zero point the call's. A step after it multiplies by the
  // call's scale and adds the bias.
  const memory::dims ad = {m, k}, od = {m, n};
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_output_scales(1 << 1, std::vector<float>(scales, scales + n));
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  const dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(memory::desc(ad, dt::u8, tag::ab), memory::desc({k, n}, dt::s8, tag::any),
                         memory::desc(), plain_md(od, dt::f32)),
      attr, b.engine());
  // The weight in the primitive's layout, the bias and each row's sign (below): made once for
  // every batch size the graph is built for.
  EMBER_ASSIGN_OR_RETURN(
      const std::shared_ptr<DynamicInt8Weights> shared,
      b.shared<DynamicInt8Weights>(
          "dynamic_int8",
          [&]() -> Result<std::shared_ptr<DynamicInt8Weights>> {
            EMBER_ASSIGN_OR_RETURN(const int8_t* q, ints());
            auto w = std::make_shared<DynamicInt8Weights>();
            const memory w_view(memory::desc({k, n}, dt::s8, memory::dims{1, k}), b.engine(),
                                const_cast<int8_t*>(q));  // the weight [n][k] read as [k][n]
            EMBER_ASSIGN_OR_RETURN(w->wei, b.buffer(pd.weights_desc(), Held::Weights));
            EMBER_TRY(b.reorder_now(w_view, w->wei));
            if (bias) {
              EMBER_ASSIGN_OR_RETURN(w->bias,
                                     b.buffer(memory::desc({n}, dt::f32, tag::x), Held::Weights));
              std::copy_n(bias, n, data_as<float>(w->bias));
            }
            // Weight row j's sign: 1 where every dequantized weight is positive, -1 where every
            // one is negative, 0 where one is 0 or the signs differ.
            EMBER_ASSIGN_OR_RETURN(w->signs,
                                   b.buffer(memory::desc({n}, dt::s8, tag::x), Held::Weights));
            for (int64_t j = 0; j < n; ++j) {
              bool pos = true, neg = true;
              for (int64_t i = 0; i < k; ++i) {
                pos = pos && q[j * k + i] > 0;
                neg = neg && q[j * k + i] < 0;
              }
              data_as<int8_t>(w->signs)[j] = static_cast<int8_t>(pos ? 1 : neg ? -1 : 0);
            }
            return w;
          },
          pd.weights_desc()));
  const memory wei = shared->wei, bias_m = shared->bias, signs = shared->signs;
  // What the quantize step sets at each call: the uint8 source (q + 128), its zero point + 128,
  // and the scale and zero point for the step after.
  EMBER_ASSIGN_OR_RETURN(const memory a,
                         b.as(op.inputs[0], plain_md(b.dims_of(op.inputs[0]), dt::f32)));
  EMBER_ASSIGN_OR_RETURN(const memory src, b.scratch_activation(memory::desc(ad, dt::u8, tag::ab)));
  EMBER_ASSIGN_OR_RETURN(const memory zp,
                         b.buffer(memory::desc({1}, dt::s32, tag::x), Held::Activations));
  EMBER_ASSIGN_OR_RETURN(const memory params,
                         b.buffer(memory::desc({2}, dt::f32, tag::x), Held::Activations));
  const int64_t count = m * k;
  const float eps = op.group_quant_matmul().eps;
  OwnStep quantize{OwnKind::Int8Elementwise,
                   "reorder,ember:quantize_per_tensor_u8,,,",
                   "src_f32::" + dims_text(ad) + " dst_u8::" + dims_text(ad),
                   {}};
  const int threads = b.threads();
  quantize.run = [=](void*) {
    const float* x = data_as<float>(a);
    const TensorQParams p = per_tensor_qparams(x, count, eps);
    auto* u = data_as<uint8_t>(src);
    split_elements(count, threads, [&](int64_t begin, int64_t len) {
      kernels->quantize_u8(x + begin, u + begin, len, p.inverse, static_cast<float>(p.zero_point));
    });
    *data_as<int32_t>(zp) = p.zero_point + 128;
    data_as<float>(params)[0] = p.scale;
    data_as<float>(params)[1] = static_cast<float>(p.zero_point);
  };
  b.add_own_step(std::move(quantize));
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, pd.dst_desc()));
  EMBER_TRY(b.add_primitive<dnnl::matmul>(pd, {{DNNL_ARG_SRC, src},
                                               {DNNL_ARG_WEIGHTS, wei},
                                               {DNNL_ARG_DST, dst},
                                               {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp}}));
  b.count_int8_matmul();
  // y = y * scale + bias. A scale that is not finite (inf or NaN in the input) makes every
  // dequantized value inf or NaN, and the reference's sums NaN; or where the input is all
  // infinite (every value quantized to 0, dequantized to (0 - zero point) * inf alike), that
  // value times each row's sign (NaN for 0), plus the bias.
  OwnStep rescale{OwnKind::Int8Elementwise, "eltwise,ember:scale_bias,,,", dims_text(od), {}};
  rescale.run = [=](void*) {
    const float s = data_as<float>(params)[0], z = data_as<float>(params)[1];
    float* y = data_as<float>(dst);
    const float* add = bias ? data_as<float>(bias_m) : nullptr;
    if (std::isfinite(s)) {
      for (int64_t r = 0; r < m; ++r) {
        float* row = y + r * n;
        if (add != nullptr) {
          for (int64_t j = 0; j < n; ++j) row[j] = row[j] * s + add[j];
        } else {
          for (int64_t j = 0; j < n; ++j) row[j] *= s;
        }
      }
      return;
    }
    const uint8_t* u = data_as<uint8_t>(src);
    const bool nan =
        std::isnan(s) || std::find(u, u + count, static_cast<uint8_t>(z + 128.f)) != u + count;
    const float v = nan ? NAN : (0.f - z) * s;
    for (int64_t j = 0; j < n; ++j) {
      const int8_t sign = data_as<int8_t>(signs)[j];
      const float yj = (sign == 0 ? NAN : v * static_cast<float>(sign)) + (add ? add[j] : 0.f);
      for (int64_t r = 0; r < m; ++r) y[r * n + j] = yj;
    }
  };
  b.add_own_step(std::move(rescale));
  return true;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace

Error add_to_u8_step(Build& b, const memory& src_f32, const memory& src_u8, float scale,
                     float zero_point) try {
  // The values are integers (q - zp) * scale, so x / scale lands within 2^-16 of an integer and
  // either rounding gives that integer: exact. Ember's quantize_u8 where its kernels run
  // (oneDNN's reorders of the BERT encoder's 72 linears took 3.2 ms at 1 thread, these 1.7).
  if (const simd::Kernels* kernels = simd::kernels()) {
    OwnStep to_u8{OwnKind::Int8Elementwise,
                  "eltwise,ember:quantize_u8,forward_inference,,",
                  "alg:quantize_per_tensor " + dims_text(src_f32.get_desc().dims()),
                  {}};
    const int64_t count = checked_numel(src_f32.get_desc().dims());
    const int threads = b.threads();
    const float inv = 1.f / scale;
    to_u8.run = [kernels, src_f32, src_u8, count, threads, inv, zero_point](void*) {
      const float* x = data_as<float>(src_f32);
      auto* u = data_as<uint8_t>(src_u8);
      split_elements(count, threads, [&](int64_t begin, int64_t len) {
        kernels->quantize_u8(x + begin, u + begin, len, inv, zero_point);
      });
    };
    b.add_own_step(std::move(to_u8));
    return Error::Ok;
  }
  dnnl::primitive_attr to_u8;
  to_u8.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  to_u8.set_output_scales(0, {1.f / scale});
  to_u8.set_zero_points(DNNL_ARG_DST, 0, {static_cast<int32_t>(zero_point + 128.f)});
  dnnl::reorder::primitive_desc pd(b.engine(), src_f32.get_desc(), b.engine(), src_u8.get_desc(),
                                   to_u8);
  return b.add_primitive<dnnl::reorder>(pd, {{DNNL_ARG_FROM, src_f32}, {DNNL_ARG_TO, src_u8}});
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

namespace {

bool own_quant_linear(const Build& b, const OpDesc& op, int64_t k, int64_t n, size_t fused) {
  const simd::Kernels* kernels = simd::kernels();
  // Measured against oneDNN's gemm:jit without VNNI only (with VNNI oneDNN's brgemm takes
  // MobileNetV2's classifier in 0.05 ms). Full-range weights take the kernel's pairs form
  // (vpmaddwd, exact on any weights), where oneDNN's pmaddubsw pairs would saturate and the
  // layer ran as a float matmul of the dequantized weight (four times the bytes a call streams).
  if (!b.int8() || !b.own_kernels() || kernels == nullptr || kernels->vnni || k % 4 != 0 || n < 1 ||
      fused + 2 != op.post_ops.size()) {
    return false;
  }
  const PostOp &quantize = op.post_ops[fused], &dequantize = op.post_ops[fused + 1];
  Clamp c;
  for (size_t i = 0; i < fused; ++i) {
    if (!is_clamp(op.post_ops[i], &c)) return false;
  }
  return !quantize.is_sum && !dequantize.is_sum && quantize.alg == EltwiseAlg::Quantize &&
         dequantize.alg == EltwiseAlg::Dequantize && quantize.beta == dequantize.beta &&
         int8_params(quantize.alpha, quantize.beta) &&
         int8_params(dequantize.alpha, dequantize.beta);
}

}  // namespace

Error build_quant_matmul(Build& b, const OpDesc& op) try {
  const memory::dims ad = b.dims_of(op.inputs[0]), wd = b.dims_of(op.inputs[1]),
                     od = b.dims_of(op.output);
  if (ad.size() != 2 || wd.size() != 2 || od.size() != 2 || ad[1] != wd[1] || od[0] != ad[0] ||
      od[1] != wd[0]) {
    return refused("quantized matmul sizes disagree");
  }
  const int64_t k = ad[1], n = wd[0];
  EMBER_ASSIGN_OR_RETURN(const QuantOperands operands,
                         quant_operands(b, op, op.quant_matmul().src, wd, "quantized matmul"));
  const float src_scale = operands.src_scale, src_zp = operands.src_zp;
  const float* scales = operands.scales;
  const memory& q_m = operands.q_m;
  const int8_t* q = operands.q;

  if (op.inputs[2] >= 0) {
    const int64_t count = checked_numel(b.tensor(op.inputs[2]).dims);
    if (count != n) return refused("quantized matmul: bias size differs from the output features");
  }
  const size_t fused = before_requantize(op);
  const bool own = own_quant_linear(b, op, k, n, fused);
  if (!own && (!b.int8() || !(b.int8_any_weights() || seven_bits(q, n * k)))) {
    // The float matmul by PyTorch's dequantized weight, transposed: a [K, N] view of [N, K].
    EMBER_ASSIGN_OR_RETURN(memory w,
                           b.weight_buffer(op.inputs[1], plain_md({k, n}, dt::f32, {1, 0})));
    dequantize_per_channel(q, scales, n * k, k, data_as<float>(w));
    b.replace_weight(op.inputs[1], w, {k, n}, {1, 0});
    OpDesc mm = op;
    mm.kind = OpKind::MatMul;
    mm.inputs.resize(3);
    mm.params = MatMulParams{};
    return build_float_matmul(b, mm, dt::f32);
  }
  // The source's integers + 128 as uint8, exact as for a convolution (build_quant_conv).
  EMBER_ASSIGN_OR_RETURN(const memory src_f32, b.as(op.inputs[0], plain_md(ad, dt::f32)));
  EMBER_ASSIGN_OR_RETURN(const memory src_u8,
                         b.buffer(memory::desc(ad, dt::u8, tag::ab), Held::Activations));
  const float shift = src_zp + 128.f;
  EMBER_TRY(add_to_u8_step(b, src_f32, src_u8, src_scale, src_zp));
  if (own) {
    // Ember's int8 1x1 kernel (QuantPointwise: a linear layer is a 1x1 convolution of m
    // pixels) writes the requantized bytes, then a step dequantizes them into the float output
    // as the reference's dequantize does. Without VNNI oneDNN 2.6 runs this matmul on its
    // gemm:jit, which took 0.43 ms for MobileNetV2's classifier (1x1280 by 1280x1000, AVX2).
    memory bias_in;
    if (op.inputs[2] >= 0) {
      EMBER_ASSIGN_OR_RETURN(bias_in, b.as(op.inputs[2], plain_md({n}, dt::f32)));
    }
    EMBER_ASSIGN_OR_RETURN(const Clamp act, clamps_in(op, 0, fused));
    auto kernel = std::make_shared<QuantPointwise>(QuantPointwise::pack(
        q, scales, op.inputs[2] >= 0 ? data_as<float>(bias_in) : nullptr, k, n, src_scale, src_zp,
        act, op.post_ops[fused].alpha, op.post_ops[fused].beta, b.weight_storage()));
    EMBER_TRY(b.storage_error());
    EMBER_ASSIGN_OR_RETURN(const memory u8,
                           b.scratch_activation(memory::desc(od, dt::u8, tag::ab)));
    OwnStep mm = quant_pointwise_step(std::move(kernel), ad[0], 1, 1, b.threads(), src_u8, u8);
    mm.what = "matmul,ember:linear_u8,forward_inference,,";
    mm.problem = dims_text(ad) + ":" + dims_text({k, n}) + ":" + dims_text(od);
    b.add_own_step(std::move(mm));
    b.count_int8_matmul();
    const PostOp& dq = op.post_ops[fused + 1];
    EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, plain_md(od, dt::f32)));
    const int64_t count = ad[0] * n;
    const float scale = dq.alpha, out_shift = dq.beta + 128.f;
    OwnStep s{OwnKind::Int8Elementwise,
              "eltwise,ember:dequantize_u8,forward_inference,,",
              "alg:dequantize_per_tensor " + dims_text(od),
              {}};
    s.run = [u8, dst, count, scale, out_shift](void*) {
      simd::kernels()->dequantize_u8(data_as<uint8_t>(u8), data_as<float>(dst), count, out_shift,
                                     scale);
    };
    b.add_own_step(std::move(s));
    return Error::Ok;
  }
  // Output feature c's integer sum times src_scale * scales[c]; the bias added before that scale
  // (oneDNN 2.x's order, for matmul as for convolution: measured), so divided by it.
  std::vector<float> out_scales(static_cast<size_t>(n));
  for (int64_t c = 0; c < n; ++c) out_scales[c] = src_scale * scales[c];
  const memory::desc bias_md =
      op.inputs[2] >= 0 ? memory::desc({1, n}, dt::f32, tag::ab) : memory::desc();
  memory bias;
  if (op.inputs[2] >= 0) {
    EMBER_ASSIGN_OR_RETURN(const memory bias_in,
                           b.as(op.inputs[2], plain_md(b.dims_of(op.inputs[2]), dt::f32)));
    EMBER_ASSIGN_OR_RETURN(bias, b.buffer(bias_md, Held::Weights));
    for (int64_t c = 0; c < n; ++c) {
      data_as<float>(bias)[c] = data_as<float>(bias_in)[c] / out_scales[c];
    }
  }
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  attr.set_output_scales(1 << 1, out_scales);
  attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  EMBER_ASSIGN_OR_RETURN(const dnnl::post_ops post_ops,
                         Build::onednn_post_ops({op.post_ops.data(), fused}));
  attr.set_post_ops(post_ops);
  dnnl::matmul::desc d(src_u8.get_desc(), memory::desc({k, n}, dt::s8, tag::any), bias_md,
                       plain_md(od, dt::f32));
  dnnl::matmul::primitive_desc pd(d, attr, b.engine());
  // The weight [N, K] read as [K, N].
  const memory w_view(memory::desc({k, n}, dt::s8, memory::dims{1, k}), b.engine(),
                      q_m.get_data_handle());
  EMBER_ASSIGN_OR_RETURN(memory wei, b.buffer(pd.weights_desc(), Held::Weights));
  EMBER_TRY(b.reorder_now(w_view, wei));
  EMBER_ASSIGN_OR_RETURN(const memory zp_m,
                         b.buffer(memory::desc({1}, dt::s32, tag::x), Held::Weights));
  *data_as<int32_t>(zp_m) = static_cast<int32_t>(shift);
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, pd.dst_desc()));
  StepArgs args = {{DNNL_ARG_SRC, src_u8},
                   {DNNL_ARG_WEIGHTS, wei},
                   {DNNL_ARG_DST, dst},
                   {DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_m}};
  if (op.inputs[2] >= 0) args.emplace_back(DNNL_ARG_BIAS, bias);
  EMBER_TRY(b.add_primitive<dnnl::matmul>(pd, std::move(args)));
  b.count_int8_matmul();
  return add_post_op_steps(b, op, fused, dst);
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
