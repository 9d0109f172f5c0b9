// quantized_decomposed::embedding_byte.out(Tensor weight, Tensor weight_scales,
//     Tensor? weight_zero_points, int weight_quant_min, int weight_quant_max, Tensor indices, *,
//     Tensor(a!) out)
// quantized_decomposed::embedding_byte.dtype_out(..., Tensor indices, *, ScalarType? dtype=None,
//     Tensor(a!) out)
// and the same two for embedding_4bit and embedding_2bit.
//
// Weight-only quantized embeddings of LLMs: the rows `indices` picks of `weight`, dequantized
// group-wise (each row split into scales.size(1) groups, or one group). The reference is
// ExecuTorch's Python definition (exir/passes/_quant_patterns_and_replacements.py): unpack,
// dequantize_per_channel_group in the scales' dtype, then .to(dtype) and aten.embedding.
// Packing: 4-bit holds two values a byte, the first in the high nibble; 2-bit four, the first in
// the low bits; both offset by -8 / -2. An int8 packed weight unpacks as the reference's int8
// ops do (truncating division, floored remainder, arithmetic shift).
#include "runtime/kernels/portable/quant_family.h"

namespace ember {
namespace {

// Value k of a row of packed bytes, for `bits` 8, 4 or 2.
inline int64_t unpack_weight(const void* row, bool is_signed, int bits, int64_t k) {
  if (bits == 8) {
    return is_signed ? static_cast<const int8_t*>(row)[k] : static_cast<const uint8_t*>(row)[k];
  }
  if (bits == 4) {
    const int64_t byte = is_signed ? static_cast<const int8_t*>(row)[k / 2]
                                   : static_cast<const uint8_t*>(row)[k / 2];
    // weight.div(16, rounding_mode="trunc") and weight.remainder(16) (floored).
    const int64_t v = k % 2 == 0 ? byte / 16 : ((byte % 16) + 16) % 16;
    return v - 8;
  }
  const int shift = static_cast<int>(2 * (k % 4));
  int64_t v = 0;
  if (is_signed) {
    // (weight & mask) >> shift on int8: the top pair keeps its sign.
    const int8_t byte = static_cast<const int8_t*>(row)[k / 4];
    v = static_cast<int8_t>(byte & static_cast<int8_t>(3 << shift)) >> shift;
  } else {
    v = (static_cast<const uint8_t*>(row)[k / 4] >> shift) & 3;
  }
  return v - 2;
}

struct EmbeddingArgs {
  const Tensor* weight;
  const Tensor* scales;
  const Tensor* zero_points;  // null: none
  const Tensor* indices;
  int bits;
  int64_t dim;         // unpacked values per row
  int64_t groups;      // scale groups per row
  int64_t group_size;  // dim / groups
};

// w.sub(zp).mul(scales).to(D) of the reference: with zero points (of the scales' dtype S) the
// subtraction is in S; without, the int8 values are read as S.
template <typename S, typename D>
void gather_embedding(const EmbeddingArgs& a, Tensor& out) {
  using M = compute_type_t<S>;
  const bool is_signed = a.weight->dtype() == ScalarType::Char;
  const S* scales = a.scales->data<S>();
  const S* zero_points = a.zero_points ? a.zero_points->data<S>() : nullptr;
  const auto* weight = static_cast<const uint8_t*>(a.weight->data());
  D* dst = out.data<D>();
  for (int64_t i = 0, n = a.indices->numel(); i < n; ++i) {
    const int64_t r = index_value(*a.indices, i);
    const uint8_t* row = weight + r * a.weight->stride(0);
    for (int64_t k = 0; k < a.dim; ++k) {
      const int64_t g = r * a.groups + k / a.group_size;
      S shifted = convert<S>(unpack_weight(row, is_signed, a.bits, k));
      if (zero_points) shifted = S(static_cast<M>(shifted) - static_cast<M>(zero_points[g]));
      const S v = S(static_cast<M>(shifted) * static_cast<M>(scales[g]));
      dst[offset_of(out, i * a.dim + k)] = convert<D>(v);
    }
  }
}

template <typename S>
Error gather_embedding_as(const EmbeddingArgs& a, Tensor& out) {
  switch (out.dtype()) {
    case ScalarType::Half:
      gather_embedding<S, Half>(a, out);
      break;
    case ScalarType::BFloat16:
      gather_embedding<S, BFloat16>(a, out);
      break;
    case ScalarType::Float:
      gather_embedding<S, float>(a, out);
      break;
    case ScalarType::Double:
      gather_embedding<S, double>(a, out);
      break;
    default:
      return fail(Error::InvalidArgument, "the output dtype must be floating, got %s",
                  to_string(out.dtype()));
  }
  return Error::Ok;
}

// embedding_weight_checks of the reference, the quant range each bit width expects, the group
// layout, the indices and the out; then the gather.
Error quantized_embedding(const char* op, int bits, std::span<EValue*> args,
                          const EValue* dtype_arg, Tensor& out) {
  EmbeddingArgs a{
      &args[0]->to_tensor(), &args[1]->to_tensor(), nullptr, &args[5]->to_tensor(), bits, 0, 1, 1};
  const Tensor& w = *a.weight;
  const Tensor& scales = *a.scales;
  EMBER_CHECK(w.dtype() == ScalarType::Char || w.dtype() == ScalarType::Byte,
              Error::InvalidArgument,
              "%s: Expecting weights to be of dtype in [torch.int8, torch.uint8], but got %s", op,
              to_string(w.dtype()));
  EMBER_CHECK(w.dim() == 2 && w.stride(1) == 1, Error::InvalidArgument,
              "%s: Expecting a 2-D weight tensor with contiguous rows, but found dim() %d", op,
              w.dim());
  const ScalarType s = scales.dtype();
  EMBER_CHECK(s == ScalarType::Half || s == ScalarType::Float || s == ScalarType::BFloat16,
              Error::InvalidArgument,
              "%s: Expecting weight_scales to be of dtype in [torch.float16, torch.float32, "
              "torch.bfloat16], but got %s",
              op, to_string(s));
  EMBER_CHECK((scales.dim() == 1 || scales.dim() == 2) && scales.size(0) == w.size(0) &&
                  scales.is_contiguous(),
              Error::InvalidArgument,
              "%s: Expecting contiguous weight_scales of rank 1 or 2 with weight's %d rows", op,
              w.size(0));
  if (!args[2]->is_none()) {
    a.zero_points = &args[2]->to_tensor();
    const Tensor& zp = *a.zero_points;
    EMBER_CHECK(zp.dtype() == s && zp.numel() == scales.numel() && zp.is_contiguous(),
                Error::InvalidArgument,
                "%s: Expecting weight_zero_points to be None or contiguous with weight_scales' "
                "dtype and size",
                op);
  }
  const int64_t quant_min = args[3]->to_int(), quant_max = args[4]->to_int();
  const int64_t range = bits == 4 ? 8 : 2;
  EMBER_CHECK(bits == 8 || (quant_min == -range && quant_max == range - 1), Error::InvalidArgument,
              "%s: expects weight_quant_min == %lld and weight_quant_max "
              "== %lld, got %lld and %lld",
              op, static_cast<long long>(-range), static_cast<long long>(range - 1),
              static_cast<long long>(quant_min), static_cast<long long>(quant_max));
  a.dim = w.size(1) * (8 / bits);
  a.groups = scales.dim() == 2 ? scales.size(1) : 1;
  EMBER_CHECK(a.groups > 0 && a.dim % a.groups == 0, Error::InvalidArgument,
              "%s: the embedding dim %lld is not a multiple of the %lld scale groups", op,
              static_cast<long long>(a.dim), static_cast<long long>(a.groups));
  a.group_size = a.dim / a.groups;
  const Tensor& indices = *a.indices;
  EMBER_CHECK(is_index_dtype(indices.dtype()) && indices.dim() < kMaxRank, Error::InvalidArgument,
              "%s: indices must be int32 or int64 of rank < %d", op, kMaxRank);
  for (int64_t i = 0, n = indices.numel(); i < n; ++i) {
    const int64_t r = index_value(indices, i);
    EMBER_CHECK(r >= 0 && r < w.size(0), Error::InvalidArgument,
                "%s: index %lld is out of range for %d rows", op, static_cast<long long>(r),
                w.size(0));
  }
  ScalarType out_dtype = s;
  if (dtype_arg != nullptr && !dtype_arg->is_none()) {
    EMBER_TRY(scalar_type_arg(op, *dtype_arg, &out_dtype));
  }
  EMBER_CHECK(out.dtype() == out_dtype, Error::InvalidArgument, "%s: out has dtype %s, expected %s",
              op, to_string(out.dtype()), to_string(out_dtype));
  int32_t sizes[kMaxRank];
  for (int d = 0; d < indices.dim(); ++d) sizes[d] = indices.size(d);
  sizes[indices.dim()] = static_cast<int32_t>(a.dim);
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(indices.dim() + 1)}));
  switch (s) {
    case ScalarType::Half:
      return gather_embedding_as<Half>(a, out);
    case ScalarType::BFloat16:
      return gather_embedding_as<BFloat16>(a, out);
    default:
      return gather_embedding_as<float>(a, out);
  }
}

}  // namespace

Error embedding_byte_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantized_embedding("embedding_byte", 8, args, nullptr, args[6]->to_tensor());
}
Error embedding_byte_dtype_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantized_embedding("embedding_byte.dtype", 8, args, args[6], args[7]->to_tensor());
}
Error embedding_4bit_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantized_embedding("embedding_4bit", 4, args, nullptr, args[6]->to_tensor());
}
Error embedding_4bit_dtype_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantized_embedding("embedding_4bit.dtype", 4, args, args[6], args[7]->to_tensor());
}
Error embedding_2bit_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantized_embedding("embedding_2bit", 2, args, nullptr, args[6]->to_tensor());
}
Error embedding_2bit_dtype_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  return quantized_embedding("embedding_2bit.dtype", 2, args, args[6], args[7]->to_tensor());
}

}  // namespace ember
