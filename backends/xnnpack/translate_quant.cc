// The Translator's quantized parts (translate_internal.h): int8 filters' scales, int32 biases as
// real values, dynamically quantized linear layers (qdint8 inputs, int8 and int4 filters), and
// Convert between float, static int8 and dynamically quantized values.
#include "backends/xnnpack/translate_internal.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <utility>
#include <vector>

namespace ember::xnn::detail {

Result<int32_t> Translator::quant_bias(uint32_t id, int64_t count, const Value& x,
                                       const std::vector<float>& weight_scales) {
  if (id == kNoValue) return -1;
  const Value& b = value(id);
  if (is_float(b)) return float_bias(id, count);
  if ((b.dtype != Datatype::QInt32 && b.dtype != Datatype::QCInt32) || b.constant == 0 ||
      numel(b.dims) != count) {
    return refuse("the bias (value %u) is %s, not an int32 constant of %lld elements", id,
                  datatype_name(b.dtype), static_cast<long long>(count));
  }
  std::vector<float> scales;
  if (b.quant.kind == Quant::Kind::PerTensor) {
    if (b.quant.zero_point != 0) return refuse("the bias has a zero point");
    scales.assign(static_cast<size_t>(count), b.quant.scale);
  } else {
    EMBER_ASSIGN_OR_RETURN(scales, weight_scales_of(b, count, 0));
  }
  for (int64_t c = 0; c < count; ++c) {
    // The exporter's bias grid; anything else would be a different sum than XNNPACK's.
    const float want = x.quant.scale * weight_scales[c];
    if (std::fabs(scales[c] - want) > 1e-6f * std::fabs(want)) {
      return refuse("the bias's scale %g of channel %lld is not input scale x weight scale %g",
                    static_cast<double>(scales[c]), static_cast<long long>(c),
                    static_cast<double>(want));
    }
  }
  EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, constant_bytes(b, 4));
  std::vector<float> real(static_cast<size_t>(count));
  for (int64_t c = 0; c < count; ++c) {
    int32_t v;
    std::memcpy(&v, bytes.data() + 4 * c, 4);
    real[c] = static_cast<float>(v) * scales[c];
  }
  return owned_floats("bias", real, {count});
}

Result<std::vector<float>> Translator::weight_scales(const Value& f, int64_t count,
                                                     int channel_dim) {
  if (f.dtype == Datatype::QInt8 && f.quant.kind == Quant::Kind::PerTensor) {
    if (f.quant.zero_point != 0) return refuse("an int8 filter with a zero point");
    if (!std::isfinite(f.quant.scale) || !(f.quant.scale > 0)) return refuse("filter scale");
    return std::vector<float>(static_cast<size_t>(count), f.quant.scale);
  }
  if (f.dtype != Datatype::QCInt8 || f.quant.kind != Quant::Kind::PerChannel) {
    return refuse("the filter (value %u) is %s; int8 nodes take qcint8 or qint8 filters", f.id,
                  datatype_name(f.dtype));
  }
  return weight_scales_of(f, count, channel_dim);
}

Result<std::vector<float>> Translator::weight_scales_of(const Value& v, int64_t count,
                                                        int channel_dim) {
  const Quant& q = v.quant;
  if (q.kind != Quant::Kind::PerChannel && q.kind != Quant::Kind::PerChannelGroup) {
    return refuse("value %u is not quantized per channel", v.id);
  }
  if (q.channel_dim != channel_dim) {
    return refuse("value %u is quantized along dim %d, expected %d", v.id, q.channel_dim,
                  channel_dim);
  }
  std::vector<float> s = q.scales;
  if (q.scale_constant != 0) {
    const bool bf16 = q.kind == Quant::Kind::PerChannelGroup;
    const Constant& c = p_.constants[q.scale_constant];
    if (c.size != static_cast<uint64_t>(q.num_scales) * (bf16 ? 2 : 4)) {
      return refuse("value %u's %u scales are %llu bytes", v.id, q.num_scales,
                    static_cast<unsigned long long>(c.size));
    }
    EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, bytes_of(q.scale_constant));
    s.resize(q.num_scales);
    for (size_t i = 0; i < s.size(); ++i) {
      if (bf16) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        const uint32_t bits = uint32_t{h} << 16;
        std::memcpy(&s[i], &bits, 4);
      } else {
        std::memcpy(&s[i], bytes.data() + 4 * i, 4);
      }
    }
  }
  if (static_cast<int64_t>(s.size()) != count) {
    return refuse("value %u has %zu scales, expected %lld", v.id, s.size(),
                  static_cast<long long>(count));
  }
  for (const float x : s) {
    if (!std::isfinite(x) || !(x > 0)) return refuse("value %u has a scale %g", v.id, double{x});
  }
  return s;
}

Result<int32_t> Translator::dynamic_linear(const Node& n, int32_t a, const Value& f, int64_t m,
                                           int64_t k, int64_t nn, bool transposed) {
  if (transposed) return refuse("a transposed quantized filter");
  const Value& x = value(n.inputs[0]);
  if (x.quant.kind != Quant::Kind::PerToken || x.quant.num_nonbatch_dims != 1) {
    return refuse(
        "a dynamically quantized input with %d non-batch dims; Ember quantizes rows "
        "(1)",
        x.quant.num_nonbatch_dims);
  }
  int64_t group = k;
  std::vector<float> scales;
  std::vector<uint8_t> q;
  cpu::WeightStorage storage = cpu::WeightStorage::Int8;
  if (f.dtype == Datatype::QCInt8 && f.quant.kind == Quant::Kind::PerChannel) {
    EMBER_ASSIGN_OR_RETURN(scales, weight_scales_of(f, nn, 0));
    EMBER_ASSIGN_OR_RETURN(q, constant_bytes(f, 1));
  } else if ((f.dtype == Datatype::QCInt4 && f.quant.kind == Quant::Kind::PerChannel) ||
             (f.dtype == Datatype::QBInt4 && f.quant.kind == Quant::Kind::PerChannelGroup)) {
    if (k % 2 != 0)
      return refuse("an int4 filter of an odd row length %lld", static_cast<long long>(k));
    if (f.dtype == Datatype::QBInt4) {
      group = f.quant.group_size;
      if (group < 2 || k % group != 0) {
        return refuse("group size %lld does not divide %lld", static_cast<long long>(group),
                      static_cast<long long>(k));
      }
    }
    EMBER_ASSIGN_OR_RETURN(scales, weight_scales_of(f, nn * (k / group), 0));
    EMBER_ASSIGN_OR_RETURN(q, constant_bytes(f, 0));
    // XNNPACK's int4 are stored + 8 (0..15), two a byte, the lower first; the engine's are
    // two's complement nibbles in the same places.
    for (uint8_t& byte : q) byte ^= 0x88;
    storage = cpu::WeightStorage::Int4;
  } else {
    return refuse(
        "the filter (value %u) is %s; dynamically quantized linear layers take "
        "qcint8, qcint4 or qbint4 filters",
        f.id, datatype_name(f.dtype));
  }
  if (group < 2) return refuse("a row length of %lld", static_cast<long long>(k));
  const int32_t weight = owned_weight("filter", std::move(q), {nn, k}, storage);
  EMBER_ASSIGN_OR_RETURN(const int32_t bias, float_bias(n.inputs[2], nn));
  const int32_t scale_t = owned_floats("scales", scales, {nn, k / group});
  cpu::GroupQuantMatMulParams p;
  p.group = group;
  p.input_quant = cpu::InputQuant::PerToken;
  // XNNPACK sets no floor on a row's scale (torchao's float32 epsilon would flatten rows of
  // values near 1e-9 to zero); the smallest normal float only keeps 1 / scale finite.
  p.eps = std::numeric_limits<float>::min();
  return emit(OpKind::GroupQuantMatMul, {a, weight, bias, scale_t, -1}, p, {m, nn},
              clamp_post_ops(n));
}

Error Translator::convert(const Node& n) {
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  if (y.dtype == Datatype::QDInt8 && x.dtype == Datatype::Fp32 && !x.quantized()) {
    // Quantized where it is read: the linear layer quantizes its float input itself.
    if (!is_dynamic_reader_only(y.id)) {
      return refuse(
          "value %u, quantized at run time, is read by a node other than a linear layer's "
          "input (Ember runs dynamically quantized linear layers, not dynamically quantized "
          "convolutions: quantize convolutions statically, or leave them in float)",
          y.id);
    }
  }
  if (x.dims != y.dims) return refuse("a conversion that changes dims");
  if (n.has_output_min_max) return refuse("a fused output clamp");
  if (y.dtype == Datatype::QDInt8 && x.dtype == Datatype::Fp32 && !x.quantized()) {
    EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
    mapped_[y.id] = m;
    return Error::Ok;
  }
  EMBER_TRY(real_values(n));
  EMBER_ASSIGN_OR_RETURN(const Mapped m, any(x.id));
  // To int8: rounded to the grid (define); to float32: the real values already held.
  define(y.id, m.tensor, m.perm, same_grid(x, y));
  return Error::Ok;
}

bool Translator::is_dynamic_reader_only(uint32_t id) const {
  for (const Node& r : p_.nodes) {
    for (size_t k = 0; k < r.inputs.size(); ++k) {
      if (r.inputs[k] == id && (r.type != NodeType::FullyConnected || k != 0)) return false;
    }
  }
  for (const uint32_t o : p_.outputs) {
    if (o == id) return false;
  }
  return true;
}

}  // namespace ember::xnn::detail
