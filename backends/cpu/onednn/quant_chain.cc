// The uint8 chain between the cpu engine's int8 steps (docs/quantization.md): a tensor that a
// quantized convolution or add, a quantize or a max pooling writes as uint8 (int8 + 128,
// channels-last: QuantChain::u8_tensors) where every reader takes it so (readers_take_u8), so
// that no float tensor is written between two int8 steps; and the fusions of a quantize with its
// dequantize (try_quantize_u8, try_fake_quant_pair).
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "backends/cpu/kernels/policy.h"
#include "backends/cpu/kernels/simd_kernels.h"
#include "backends/cpu/onednn/families.h"
#include "backends/cpu/onednn/quant_util.h"

namespace ember::cpu::delegate {
namespace {

// The element loops, compiled for AVX-512 and AVX2 beside the baseline and chosen at load by the
// CPU (the arithmetic is the same on each: no contraction, exact roundings).
#define EMBER_QUANT_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))

EMBER_QUANT_CLONES void max_u8(uint8_t* acc, const uint8_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] = std::max(acc[i], x[i]);
}

bool quantize_pair(const Build& b, size_t i);

// Whether ops i, i + 1, i + 2 are a unary element-wise op (no post-ops) of a 4-D tensor, read by a
// quantize alone, and its dequantize (quantize_pair) onto an int8 grid: with its input uint8,
// try_u8_lookup builds the three as a lookup of the op's 256 requantized results.
bool lookup_pattern(const Build& b, size_t i) {
  const std::vector<OpDesc>& ops = b.graph().ops;
  if (!b.own_kernels() || !own_kernels_supported() || i + 2 >= ops.size()) return false;
  const OpDesc& f = ops[i];
  if (f.kind != OpKind::Eltwise || !f.post_ops.empty() || f.inputs.size() != 1 ||
      f.eltwise().alg == EltwiseAlg::Quantize || f.eltwise().alg == EltwiseAlg::Dequantize) {
    return false;
  }
  if (!quantize_pair(b, i + 1) || ops[i + 1].inputs[0] != f.output || b.readers(f.output) != 1 ||
      b.is_graph_output(f.output)) {
    return false;
  }
  const OpDesc &q = ops[i + 1], &d = ops[i + 2];
  const std::vector<int64_t>& dims = b.tensor(d.output).dims;
  return q.eltwise().beta == d.eltwise().beta && int8_params(q.eltwise().alpha, q.eltwise().beta) &&
         int8_params(d.eltwise().alpha, d.eltwise().beta) && dims.size() == 4 &&
         b.tensor(f.inputs[0]).dims == dims;
}

Result<bool> readers_take_u8_uncached(Build& b, int32_t t, float scale, float zero_point) {
  if (b.is_graph_output(t)) return false;
  int readers = 0;
  const std::vector<OpDesc>& ops = b.graph().ops;
  for (const OpDesc& reader : ops) {
    for (size_t k = 0; k < reader.inputs.size(); ++k) {
      if (reader.inputs[k] != t) continue;
      // A unary op requantized: a lookup of each byte's result.
      if (lookup_pattern(b, static_cast<size_t>(&reader - ops.data()))) {
        ++readers;
        continue;
      }
      // A quantized convolution of t's parameters: in float (quant_conv_in_integers) it would
      // read the uint8 as floats. An add dequantizes by t's own parameters.
      bool conv = reader.kind == OpKind::QuantConv && k == 0 &&
                  reader.quant_conv().src.scale == scale &&
                  reader.quant_conv().src.zero_point == zero_point;
      if (conv) {
        EMBER_ASSIGN_OR_RETURN(conv, quant_conv_in_integers(b, reader));
        if (!conv) {
          EMBER_ASSIGN_OR_RETURN(conv, own_quant_depthwise(b, reader));
        }
      }
      if (!conv) {
        EMBER_ASSIGN_OR_RETURN(const bool pool, max_pool_takes_u8(b, reader));
        if (!pool) return false;
      }
      ++readers;
    }
    for (const PostOp& p : reader.post_ops) {
      if (!p.is_sum || p.tensor != t) continue;
      // A residual added to a requantized result in uint8 (add_tail) dequantizes by t's own
      // parameters.
      EMBER_ASSIGN_OR_RETURN(const bool tail, add_tail(b, reader));
      if (!tail) return false;
      ++readers;
    }
  }
  return readers > 0;
}

// Whether ops i, i + 1 are a quantize and the dequantize alone reading it (Eltwise ops without
// post-ops; the int8 values no delegate output).
bool quantize_pair(const Build& b, size_t i) {
  if (i + 1 >= b.graph().ops.size()) return false;
  const OpDesc &q = b.graph().ops[i], &d = b.graph().ops[i + 1];
  auto is = [](const OpDesc& op, EltwiseAlg alg) {
    return op.kind == OpKind::Eltwise && op.eltwise().alg == alg && op.post_ops.empty();
  };
  return is(q, EltwiseAlg::Quantize) && is(d, EltwiseAlg::Dequantize) && d.inputs[0] == q.output &&
         b.readers(q.output) == 1 && !b.is_graph_output(q.output);
}

// Whether try_quantize_u8 takes ops i, i + 1 (with the kernels, of an int8 grid, the quantized
// values read by nothing else, 4-D, the dequantized ones read as uint8).
Result<bool> quantize_pair_u8(Build& b, size_t i) {
  if (!b.own_kernels() || !own_kernels_supported() || !quantize_pair(b, i)) return false;
  const OpDesc &q = b.graph().ops[i], &d = b.graph().ops[i + 1];
  if (q.eltwise().beta != d.eltwise().beta || !int8_params(q.eltwise().alpha, q.eltwise().beta) ||
      !int8_params(d.eltwise().alpha, d.eltwise().beta)) {
    return false;
  }
  const std::vector<int64_t>& dims = b.tensor(d.output).dims;
  if (dims.size() != 4 || b.tensor(q.inputs[0]).dims != dims) return false;
  return readers_take_u8(b, d.output, d.eltwise().alpha, d.eltwise().beta);
}

// The quantize q and dequantize d of a uint8 max pooling's result: each byte dequantized as
// PyTorch does its floats, then quantized to the new grid.
Error add_requantize_u8_step(Build& b, const OpDesc& q, const OpDesc& d) try {
  const auto [scale, zero_point] = b.quant_chain().u8_tensors.at(q.inputs[0]);
  EMBER_ASSIGN_OR_RETURN(const memory src, b.src_memory(q.inputs[0]));
  const memory::dims dims = b.dims_of(d.output);
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(d, memory::desc(dims, dt::u8, tag::nhwc)));
  const int64_t n = checked_numel(b.tensor(d.output).dims);
  const int threads = b.threads();
  const float shift = zero_point + 128.f, inv = q.eltwise().alpha, zp = q.eltwise().beta;
  OwnStep s{OwnKind::Int8Elementwise,
            "eltwise,ember:requantize_u8,forward_inference,,",
            "alg:quantize_per_tensor " + dims_text(dims),
            {}};
  // Each byte dequantized as PyTorch does, then quantized to the new grid, a block at a time.
  s.run = [src, dst, n, threads, shift, scale, inv, zp](void*) {
    const simd::Kernels& k = *simd::kernels();
    const auto* x = data_as<uint8_t>(src);
    auto* y = data_as<uint8_t>(dst);
    split_elements(n, threads, [&](int64_t begin, int64_t count) {
      constexpr int64_t kBlock = 256;
      alignas(64) float f[kBlock];
      for (int64_t i = begin; i < begin + count; i += kBlock) {
        const int64_t len = std::min(kBlock, begin + count - i);
        k.dequantize_u8(x + i, f, len, shift, scale);
        k.quantize_u8(f, y + i, len, inv, zp);
      }
    });
  };
  b.add_own_step(std::move(s));
  b.quant_chain().u8_tensors[d.output] = {d.eltwise().alpha, d.eltwise().beta};
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace

Result<bool> readers_take_u8(Build& b, int32_t t, float scale, float zero_point) {
  // Asked again of the same tensors down every path of the graph (a reader's answer asks its own
  // readers'): each answer is kept, so that a graph of many paths costs no more than its ops.
  const auto key = std::make_tuple(t, scale, zero_point);
  const auto& known_answers = b.quant_chain().readers_take_u8;
  if (auto known = known_answers.find(key); known != known_answers.end()) {
    return known->second;
  }
  EMBER_ASSIGN_OR_RETURN(const bool answer, readers_take_u8_uncached(b, t, scale, zero_point));
  b.quant_chain().readers_take_u8[key] = answer;
  return answer;
}

bool requantized_at_end(const OpDesc& op, size_t fused) {
  // [relu/clips...] quantize dequantize, of one int8 grid.
  if (fused + 2 != op.post_ops.size()) return false;
  const PostOp &q = op.post_ops[fused], &d = op.post_ops[fused + 1];
  if (q.is_sum || d.is_sum || q.alg != EltwiseAlg::Quantize || d.alg != EltwiseAlg::Dequantize ||
      q.beta != d.beta) {
    return false;
  }
  for (size_t i = 0; i < fused; ++i) {
    Clamp c;
    if (!is_clamp(op.post_ops[i], &c)) return false;  // a sum's summand is float
  }
  return true;
}

Result<bool> int8_chain_out(Build& b, const OpDesc& op, size_t fused) {
  if (!requantized_at_end(op, fused)) return false;
  const PostOp& d = op.post_ops[fused + 1];
  return readers_take_u8(b, op.output, d.alpha, d.beta);
}

Result<Clamp> clamps_in(const OpDesc& op, size_t begin, size_t end) {
  Clamp act;
  for (size_t i = begin; i < end; ++i) {
    Clamp c;
    if (!is_clamp(op.post_ops[i], &c))
      return refused("a post-op beside a requantize is not a clamp");
    act.lo = std::max(act.lo, c.lo);
    act.hi = std::min(act.hi, c.hi);
  }
  return act;
}

Result<size_t> try_fake_quant_pair(Build& b, size_t i) try {
  if (!quantize_pair(b, i)) return size_t{0};
  const OpDesc &q = b.graph().ops[i], &d = b.graph().ops[i + 1];
  EMBER_TRY(b.check_same_dims(q.inputs[0], d.output));
  const PostOp quantize{false, -1, EltwiseAlg::Quantize, q.eltwise().alpha, q.eltwise().beta};
  const PostOp dequantize{false, -1, EltwiseAlg::Dequantize, d.eltwise().alpha, d.eltwise().beta};
  EMBER_ASSIGN_OR_RETURN(const memory src, b.src_memory(q.inputs[0]));
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(d, src.get_desc()));
  EMBER_TRY(add_quantize_step(b, src, dst, quantize, &dequantize));
  return size_t{2};
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Result<size_t> try_u8_lookup(Build& b, size_t i) try {
  if (!lookup_pattern(b, i)) return size_t{0};
  const OpDesc &f = b.graph().ops[i], &q = b.graph().ops[i + 1], &d = b.graph().ops[i + 2];
  const auto in = b.quant_chain().u8_tensors.find(f.inputs[0]);
  if (in == b.quant_chain().u8_tensors.end()) return size_t{0};  // its producer wrote floats
  const auto [in_scale, in_zero_point] = in->second;
  // Each byte's value as the dequantize before the op computes it, (x - (zp + 128)) * scale, then
  // the op by what its step would run, then PyTorch's quantize of the result.
  alignas(64) std::array<float, 256> y;
  for (int j = 0; j < 256; ++j) {
    y[static_cast<size_t>(j)] = (static_cast<float>(j) - (in_zero_point + 128.f)) * in_scale;
  }
  PostOp op;
  op.alg = f.eltwise().alg;
  op.alpha = f.eltwise().alpha;
  op.beta = f.eltwise().beta;
  EMBER_TRY(eltwise_now(b, op, y.data(), 256));
  const float inv = q.eltwise().alpha, zp = q.eltwise().beta;
  const float scale = d.eltwise().alpha;
  EMBER_ASSIGN_OR_RETURN(const bool u8_out, readers_take_u8(b, d.output, scale, zp));
  // Each byte's result: requantized, and dequantized as PyTorch does for float readers.
  std::shared_ptr<std::array<uint8_t, 256>> table;
  std::shared_ptr<std::array<float, 256>> floats;
  if (u8_out) {
    table = std::make_shared<std::array<uint8_t, 256>>();
  } else {
    floats = std::make_shared<std::array<float, 256>>();
  }
  for (size_t j = 0; j < 256; ++j) {
    const float qv = quantize_int8(y[j], inv, zp);
    if (table) (*table)[j] = static_cast<uint8_t>(static_cast<int32_t>(qv) + 128);
    if (floats) (*floats)[j] = (qv - zp) * scale;
  }
  const std::vector<int64_t>& dims = b.tensor(d.output).dims;
  const memory::dims md_dims = to_dims(dims);
  EMBER_ASSIGN_OR_RETURN(const memory src, b.src_memory(f.inputs[0]));
  EMBER_ASSIGN_OR_RETURN(
      const memory dst,
      b.make_output(d, u8_out ? memory::desc(md_dims, dt::u8, tag::nhwc) : nhwc_md(dims)));
  const int64_t n = checked_numel(dims);
  const int threads = b.threads();
  OwnStep s{OwnKind::Lookup,
            u8_out ? "eltwise,ember:lookup_u8,forward_inference,,"
                   : "eltwise,ember:lookup_u8_f32,forward_inference,,",
            "alg:eltwise" + std::to_string(static_cast<int>(op.alg)) + "_requantized " +
                dims_text(md_dims),
            {}};
  if (u8_out) {
    s.run = [src, dst, n, threads, table](void*) {
      const auto* x = data_as<uint8_t>(src);
      auto* out = data_as<uint8_t>(dst);
      split_elements(n, threads, [&](int64_t begin, int64_t count) {
        for (int64_t e = begin; e < begin + count; ++e) out[e] = (*table)[x[e]];
      });
    };
    b.quant_chain().u8_tensors[d.output] = {scale, zp};
  } else {
    s.run = [src, dst, n, threads, floats](void*) {
      const auto* x = data_as<uint8_t>(src);
      auto* out = data_as<float>(dst);
      split_elements(n, threads, [&](int64_t begin, int64_t count) {
        for (int64_t e = begin; e < begin + count; ++e) out[e] = (*floats)[x[e]];
      });
    };
  }
  b.add_own_step(std::move(s));
  return size_t{3};
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Result<size_t> try_quantize_u8(Build& b, size_t i) try {
  EMBER_ASSIGN_OR_RETURN(const bool pair, quantize_pair_u8(b, i));
  if (!pair) return size_t{0};
  const OpDesc &q = b.graph().ops[i], &d = b.graph().ops[i + 1];
  if (b.quant_chain().u8_tensors.count(q.inputs[0]) != 0) {  // a uint8 max pooling's result
    EMBER_TRY(add_requantize_u8_step(b, q, d));
    return size_t{2};
  }
  const std::vector<int64_t>& dims = b.tensor(d.output).dims;
  const memory::dims md_dims = to_dims(dims);
  EMBER_ASSIGN_OR_RETURN(memory src, b.src_memory(q.inputs[0]));
  const bool nchw = src.get_desc() == memory::desc(md_dims, dt::f32, tag::nchw);
  if (!nchw) {
    EMBER_ASSIGN_OR_RETURN(src, b.as(q.inputs[0], nhwc_md(dims)));
  }
  EMBER_ASSIGN_OR_RETURN(const memory dst,
                         b.make_output(d, memory::desc(md_dims, dt::u8, tag::nhwc)));
  const int64_t batch = dims[0], c = dims[1], h = dims[2], w = dims[3];
  const int threads = b.threads();
  const float inv = q.eltwise().alpha, zp = q.eltwise().beta;
  OwnStep s{OwnKind::Int8Elementwise,
            "eltwise,ember:quantize_u8,forward_inference,,",
            "alg:quantize_per_tensor " + dims_text(md_dims),
            {}};
  s.run = [src, dst, nchw, batch, c, h, w, threads, inv, zp](void*) {
    const simd::Kernels& k = *simd::kernels();
    const float* x = data_as<float>(src);
    auto* out = data_as<uint8_t>(dst);
    if (!nchw) {
      split_elements(batch * h * w * c, threads, [&](int64_t begin, int64_t count) {
        k.quantize_u8(x + begin, out + begin, count, inv, zp);
      });
      return;
    }
    // NCHW in, NHWC out: a block of a row of each channel at a time, then interleaved (an
    // image's three channels by a loop the compiler unrolls).
    split(batch * h, threads, [&](int64_t begin, int64_t count) {
      constexpr int64_t kBlock = 256;
      alignas(64) uint8_t rows[3][kBlock];
      for (int64_t r = begin; r < begin + count; ++r) {
        const int64_t image = r / h, y = r % h;
        for (int64_t x0 = 0; x0 < w; x0 += kBlock) {
          const int64_t len = std::min(kBlock, w - x0);
          uint8_t* o = out + (r * w + x0) * c;
          const float* plane = x + (image * c * h + y) * w + x0;
          if (c == 3) {
            for (int64_t ch = 0; ch < 3; ++ch) {
              k.quantize_u8(plane + ch * h * w, rows[ch], len, inv, zp);
            }
            for (int64_t j = 0; j < len; ++j) {
              o[3 * j] = rows[0][j];
              o[3 * j + 1] = rows[1][j];
              o[3 * j + 2] = rows[2][j];
            }
            continue;
          }
          for (int64_t ch = 0; ch < c; ++ch) {
            k.quantize_u8(plane + ch * h * w, rows[0], len, inv, zp);
            for (int64_t j = 0; j < len; ++j) o[j * c + ch] = rows[0][j];
          }
        }
      }
    });
  };
  b.add_own_step(std::move(s));
  b.quant_chain().u8_tensors[d.output] = {d.eltwise().alpha, d.eltwise().beta};
  return size_t{2};
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

Result<bool> max_pool_takes_u8(Build& b, const OpDesc& pool) {
  if (pool.kind != OpKind::Pool || pool.pool().alg != PoolAlg::Max || pool.pool().rank() != 2 ||
      !pool.post_ops.empty() || b.readers(pool.output) != 1 || b.is_graph_output(pool.output)) {
    return false;
  }
  const std::vector<int64_t>&in = b.tensor(pool.inputs[0]).dims, &out = b.tensor(pool.output).dims;
  if (in.size() != 4 || out.size() != 4 || in[0] != out[0] || in[1] != out[1]) return false;
  // Every window holds an input element (PyTorch's padding of at most half the kernel sees to
  // it without dilation; a window of padding alone would be -inf in float).
  for (int64_t k = 0; k < 2; ++k) {
    const PoolParams& p = pool.pool();
    const int64_t kernel = p.kernel[k], stride = p.stride[k], pad = p.pad_l[k];
    const int64_t dilation = p.dilation[k];
    for (int64_t o = 0; o < out[2 + k]; ++o) {
      bool any = false;
      for (int64_t t = 0; t < kernel && !any; ++t) {
        const int64_t at = o * stride - pad + t * dilation;
        any = at >= 0 && at < in[2 + k];
      }
      if (!any) return false;
    }
  }
  // Its one reader: a quantize and its dequantize that try_quantize_u8 takes from uint8.
  for (size_t j = 0; j + 1 < b.graph().ops.size(); ++j) {
    const OpDesc& q = b.graph().ops[j];
    if (q.kind == OpKind::Eltwise && !q.inputs.empty() && q.inputs[0] == pool.output) {
      return quantize_pair_u8(b, j);
    }
  }
  return false;
}

Error build_max_pool_u8(Build& b, const OpDesc& op, std::pair<float, float> params) try {
  const PoolParams& p = op.pool();
  if (p.alg != PoolAlg::Max) return refused("uint8 pooling: not a max");
  const memory::dims sd = b.dims_of(op.inputs[0]), od = b.dims_of(op.output);
  EMBER_ASSIGN_OR_RETURN(const memory src, b.src_memory(op.inputs[0]));
  if (src.get_desc() != memory::desc(sd, dt::u8, tag::nhwc)) {
    return refused("uint8 pooling: layout");
  }
  EMBER_ASSIGN_OR_RETURN(const memory dst, b.make_output(op, memory::desc(od, dt::u8, tag::nhwc)));
  struct Window {
    int64_t in[2], out[2], kernel[2], stride[2], pad[2], dilation[2];
  } w{};
  for (int64_t k = 0; k < 2; ++k) {
    w.in[k] = sd[2 + k];
    w.out[k] = od[2 + k];
    w.kernel[k] = p.kernel[k];
    w.stride[k] = p.stride[k];
    w.pad[k] = p.pad_l[k];
    w.dilation[k] = p.dilation[k];
  }
  const int64_t batch = sd[0], c = sd[1];
  const int threads = b.threads();
  OwnStep s{OwnKind::Int8Elementwise,
            "pooling,ember:max_u8,forward_inference,,",
            "alg:pooling_max " + dims_text(sd) + ":" + dims_text(od),
            {}};
  // The largest byte of each window's channels: uint8 is q + 128 of one grid, and dequantizing
  // is increasing, so it is the byte of the float maximum; padding is never a candidate.
  s.run = [src, dst, w, batch, c, threads](void*) {
    const auto* x = data_as<uint8_t>(src);
    auto* y = data_as<uint8_t>(dst);
    split(batch * w.out[0], threads, [&](int64_t begin, int64_t count) {
      for (int64_t row = begin; row < begin + count; ++row) {
        const int64_t image = row / w.out[0], oh = row % w.out[0];
        for (int64_t ow = 0; ow < w.out[1]; ++ow) {
          uint8_t* o = y + ((image * w.out[0] + oh) * w.out[1] + ow) * c;
          bool first = true;
          for (int64_t kh = 0; kh < w.kernel[0]; ++kh) {
            const int64_t ih = oh * w.stride[0] - w.pad[0] + kh * w.dilation[0];
            if (ih < 0 || ih >= w.in[0]) continue;
            for (int64_t kw = 0; kw < w.kernel[1]; ++kw) {
              const int64_t iw = ow * w.stride[1] - w.pad[1] + kw * w.dilation[1];
              if (iw < 0 || iw >= w.in[1]) continue;
              const uint8_t* in = x + ((image * w.in[0] + ih) * w.in[1] + iw) * c;
              if (first) {
                std::copy(in, in + c, o);
                first = false;
              } else {
                max_u8(o, in, c);
              }
            }
          }
        }
      }
    });
  };
  b.add_own_step(std::move(s));
  b.quant_chain().u8_tensors[op.output] = params;
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
