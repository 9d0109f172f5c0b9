// aten::convolution.out(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride,
//     SymInt[] padding, SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups,
//     *, Tensor(a!) out)
// 1-D (N, C, L) and 2-D (N, C, H, W), any dim order. float32/float64 convolutions run as an
// implicit GEMM (runtime/kernels/gemm/gemm.h packs the im2col matrix on the fly, so no column
// buffer); transposed, depthwise and 16-bit float convolutions run a direct output-stationary loop
// (contract C29 for transposed).
#include <cstdint>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/gemm/gemm.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace {

// The problem as 2-D: a 1-D convolution is a 2-D one of height 1 (kernel height 1).
struct Conv {
  int64_t n, c_in, c_out, h, w, kh, kw, oh, ow, groups;
  int64_t stride[2], pad[2], dil[2], out_pad[2];
  int64_t in_s[4], w_s[4], out_s[4];  // strides (N, C, H, W) of input, weight, out
  bool transposed;
};

constexpr int64_t kMaxParam = int64_t{1} << 30;

Error read_pair(const char* op, const char* what, std::span<const int64_t> v, int spatial,
                int64_t fallback, int64_t min, int64_t out[2]) {
  EMBER_CHECK(v.size() <= 1 || v.size() == static_cast<size_t>(spatial), Error::InvalidArgument,
              "%s: %s has %zu entries for %d spatial dims", op, what, v.size(), spatial);
  for (int i = 0; i < spatial; ++i) {
    out[2 - spatial + i] = v.empty() ? fallback : v[v.size() == 1 ? 0 : i];
    EMBER_CHECK(out[2 - spatial + i] >= min, Error::InvalidArgument, "%s: %s must be >= %lld", op,
                what, static_cast<long long>(min));
    // Bounded so the output-size arithmetic below cannot overflow int64.
    EMBER_CHECK(out[2 - spatial + i] <= kMaxParam, Error::InvalidArgument,
                "%s: %s %lld is too large (at most %lld)", op, what,
                static_cast<long long>(out[2 - spatial + i]), static_cast<long long>(kMaxParam));
  }
  if (spatial == 1) out[0] = fallback;
  return Error::Ok;
}

void strides4(const Tensor& t, int64_t s[4]) {
  const bool one_d = t.dim() == 3;
  s[0] = t.stride(0);
  s[1] = t.stride(1);
  // A 1-D tensor gets a virtual H dim of size 1 laid out just above L.
  s[2] = one_d ? t.size(2) * t.stride(2) : t.stride(2);
  s[3] = t.stride(t.dim() - 1);
}

// Integer convolutions accumulate modulo 2^64 and keep the low bits, which is ATen's wrap-around
// result for every integer width, without signed overflow. Floating ones accumulate in double
// (a scalar loop: no slower than float), so that no order of summation overflows a partial sum
// near float32's maximum (the GEMM path redoes such sums instead, gemm.h).
template <typename T>
using ConvAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, double>;

// The accumulator rounded to T (16-bit floats through float: no double-to-half conversion).
template <typename T, typename Acc>
T narrow(Acc acc) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(acc);
  } else {
    return static_cast<T>(static_cast<compute_type_t<T>>(acc));
  }
}

template <typename T>
void conv_direct(const Conv& c, const T* in, const T* wt, const T* bias, T* out,
                 ThreadPool* threads) {
  using Acc = ConvAcc<T>;
  const int64_t cin_g = c.transposed ? c.c_in / c.groups : c.c_in / c.groups;
  const int64_t cout_g = c.c_out / c.groups;
  threads->parallel_for(c.n * c.c_out, 1, [&](int64_t begin, int64_t end) {
    for (int64_t job = begin; job < end; ++job) {
      const int64_t b = job / c.c_out, co = job % c.c_out, g = co / cout_g;
      const T* image = in + b * c.in_s[0] + g * cin_g * c.in_s[1];
      for (int64_t y = 0; y < c.oh; ++y) {
        for (int64_t x = 0; x < c.ow; ++x) {
          Acc acc = bias == nullptr ? Acc(0) : static_cast<Acc>(bias[co]);
          for (int64_t ci = 0; ci < cin_g; ++ci) {
            const T* plane = image + ci * c.in_s[1];
            const T* kernel = c.transposed
                                  ? wt + (g * cin_g + ci) * c.w_s[0] + (co % cout_g) * c.w_s[1]
                                  : wt + co * c.w_s[0] + ci * c.w_s[1];
            for (int64_t i = 0; i < c.kh; ++i) {
              int64_t iy = y * c.stride[0] - c.pad[0] + i * c.dil[0];
              if (c.transposed) {
                iy = y + c.pad[0] - i * c.dil[0];
                if (iy < 0 || iy % c.stride[0] != 0) continue;
                iy /= c.stride[0];
              }
              if (iy < 0 || iy >= c.h) continue;
              for (int64_t j = 0; j < c.kw; ++j) {
                int64_t ix = x * c.stride[1] - c.pad[1] + j * c.dil[1];
                if (c.transposed) {
                  ix = x + c.pad[1] - j * c.dil[1];
                  if (ix < 0 || ix % c.stride[1] != 0) continue;
                  ix /= c.stride[1];
                }
                if (ix < 0 || ix >= c.w) continue;
                acc += static_cast<Acc>(plane[iy * c.in_s[2] + ix * c.in_s[3]]) *
                       static_cast<Acc>(kernel[i * c.w_s[2] + j * c.w_s[3]]);
              }
            }
          }
          out[b * c.out_s[0] + co * c.out_s[1] + y * c.out_s[2] + x * c.out_s[3]] = narrow<T>(acc);
        }
      }
    }
  });
}

// Implicit GEMM per (image, group): out_g[Cout_g x OH*OW] = W_g[Cout_g x Cin_g*KH*KW] · im2col.
template <typename T>
void conv_gemm(const Conv& c, const T* in, const T* wt, const T* bias, T* out,
               ThreadPool* threads) {
  const int64_t cin_g = c.c_in / c.groups, cout_g = c.c_out / c.groups;
  const Im2col im{c.in_s[1],   c.in_s[2],   c.in_s[3], c.h,      c.w,      c.kh,     c.kw,
                  c.stride[0], c.stride[1], c.pad[0],  c.pad[1], c.dil[0], c.dil[1], c.ow};
  for (int64_t b = 0; b < c.n; ++b) {
    T* image_out = out + b * c.out_s[0];
    for (int64_t g = 0; g < c.groups; ++g) {
      GemmProblem<T> p{cout_g,
                       c.oh * c.ow,
                       cin_g * c.kh * c.kw,
                       T(1),
                       wt + g * cout_g * c.w_s[0],
                       c.w_s[0],
                       1,
                       in + b * c.in_s[0] + g * cin_g * c.in_s[1],
                       0,
                       0,
                       T(0),
                       image_out + g * cout_g * c.out_s[1],
                       c.out_s[1],
                       c.out_s[3],
                       &im};
      gemm(p, threads);
    }
    // The bias after the sum (as oneDNN adds it): the GEMM redoes an overflowed sum only where it
    // does not read C (gemm.h).
    if (bias != nullptr) {
      for (int64_t co = 0; co < c.c_out; ++co) {
        for (int64_t j = 0; j < c.oh * c.ow; ++j)
          image_out[co * c.out_s[1] + j * c.out_s[3]] += bias[co];
      }
    }
  }
}

}  // namespace

Error convolution_out(KernelContext& ctx, std::span<EValue*> args) {
  const Tensor& input = args[0]->to_tensor();
  const Tensor& weight = args[1]->to_tensor();
  const Tensor* bias = args[2]->tensor_ptr();
  const bool transposed = args[6]->to_bool();
  const int64_t groups = args[8]->to_int();
  Tensor& out = args[9]->to_tensor();
  const char* op = transposed ? "convolution (transposed)" : "convolution";
  const int rank = input.dim();
  EMBER_CHECK(rank == 3 || rank == 4, Error::InvalidArgument,
              "%s: expected a 3-D (N, C, L) or 4-D (N, C, H, W) input, got %d-D", op, rank);
  EMBER_CHECK(weight.dim() == rank, Error::InvalidArgument, "%s: weight has rank %d, input rank %d",
              op, weight.dim(), rank);
  EMBER_CHECK(groups > 0 && groups <= kMaxParam, Error::InvalidArgument,
              "%s: groups must be in [1, %lld]", op, static_cast<long long>(kMaxParam));
  const ScalarType dt = input.dtype();
  EMBER_CHECK(weight.dtype() == dt && out.dtype() == dt && (bias == nullptr || bias->dtype() == dt),
              Error::InvalidArgument, "%s: input, weight, bias and out must share one dtype", op);
  const int spatial = rank - 2;
  Conv c{};
  c.transposed = transposed;
  c.groups = groups;
  EMBER_TRY(read_pair(op, "stride", args[3]->to_int_list(), spatial, 1, 1, c.stride));
  EMBER_TRY(read_pair(op, "padding", args[4]->to_int_list(), spatial, 0, 0, c.pad));
  EMBER_TRY(read_pair(op, "dilation", args[5]->to_int_list(), spatial, 1, 1, c.dil));
  EMBER_TRY(read_pair(op, "output_padding", args[7]->to_int_list(), spatial, 0, 0, c.out_pad));
  // ATen's CPU convolution (libtorch 1.13) takes int64, and the other integer dtypes but bool only
  // on its plain path (neither transposed nor dilated).
  const bool plain = !transposed && c.dil[0] == 1 && c.dil[1] == 1;
  EMBER_CHECK(is_floating(dt) || dt == ScalarType::Long || (dt != ScalarType::Bool && plain),
              Error::InvalidArgument, "%s: dtype %s is not supported%s", op, to_string(dt),
              dt == ScalarType::Bool ? "" : " (integers but int64 only without dilation)");
  c.n = input.size(0);
  c.c_in = input.size(1);
  c.h = spatial == 2 ? input.size(2) : 1;
  c.w = input.size(rank - 1);
  c.kh = spatial == 2 ? weight.size(2) : 1;
  c.kw = weight.size(rank - 1);
  if (transposed) {
    EMBER_CHECK(weight.size(0) == c.c_in, Error::InvalidArgument,
                "%s: weight of shape [%d, %d, ...] expects %d input channels, got %lld", op,
                weight.size(0), weight.size(1), weight.size(0), static_cast<long long>(c.c_in));
    EMBER_CHECK(c.c_in % groups == 0, Error::InvalidArgument,
                "%s: %lld input channels are not divisible by %lld groups", op,
                static_cast<long long>(c.c_in), static_cast<long long>(groups));
    c.c_out = weight.size(1) * groups;
    for (int i = 0; i < 2; ++i) {
      EMBER_CHECK(c.out_pad[i] < c.stride[i] || c.out_pad[i] < c.dil[i], Error::InvalidArgument,
                  "%s: output padding must be smaller than either stride or dilation", op);
    }
    c.oh = (c.h - 1) * c.stride[0] - 2 * c.pad[0] + c.dil[0] * (c.kh - 1) + c.out_pad[0] + 1;
    c.ow = (c.w - 1) * c.stride[1] - 2 * c.pad[1] + c.dil[1] * (c.kw - 1) + c.out_pad[1] + 1;
  } else {
    EMBER_CHECK(weight.size(1) * groups == c.c_in, Error::InvalidArgument,
                "%s: weight of shape [%d, %d, ...] with %lld groups expects %lld input channels, "
                "got %lld",
                op, weight.size(0), weight.size(1), static_cast<long long>(groups),
                static_cast<long long>(weight.size(1) * groups), static_cast<long long>(c.c_in));
    c.c_out = weight.size(0);
    EMBER_CHECK(c.c_out % groups == 0, Error::InvalidArgument,
                "%s: %lld output channels are not divisible by %lld groups", op,
                static_cast<long long>(c.c_out), static_cast<long long>(groups));
    c.oh = (c.h + 2 * c.pad[0] - c.dil[0] * (c.kh - 1) - 1) / c.stride[0] + 1;
    c.ow = (c.w + 2 * c.pad[1] - c.dil[1] * (c.kw - 1) - 1) / c.stride[1] + 1;
    EMBER_CHECK(c.h + 2 * c.pad[0] >= c.dil[0] * (c.kh - 1) + 1 &&
                    c.w + 2 * c.pad[1] >= c.dil[1] * (c.kw - 1) + 1,
                Error::InvalidArgument, "%s: kernel size can't be greater than the padded input",
                op);
  }
  EMBER_CHECK(c.oh > 0 && c.ow > 0, Error::InvalidArgument, "%s: output size is too small", op);
  // Sizes are int32: an output size that does not fit must not wrap into one that does.
  EMBER_CHECK(c.oh <= INT32_MAX && c.ow <= INT32_MAX && c.c_out <= INT32_MAX,
              Error::InvalidArgument, "%s: output size %lld x %lld is too large", op,
              static_cast<long long>(c.oh), static_cast<long long>(c.ow));
  EMBER_CHECK(bias == nullptr || (bias->dim() == 1 && bias->size(0) == c.c_out),
              Error::InvalidArgument, "%s: bias must have shape [%lld]", op,
              static_cast<long long>(c.c_out));
  EMBER_CHECK(out.dim() == rank, Error::InvalidArgument, "%s: out has rank %d, expected %d", op,
              out.dim(), rank);
  const int32_t sizes[4] = {static_cast<int32_t>(c.n), static_cast<int32_t>(c.c_out),
                            static_cast<int32_t>(spatial == 2 ? c.oh : c.ow),
                            static_cast<int32_t>(c.ow)};
  EMBER_TRY(out.resize({sizes, static_cast<size_t>(rank)}));
  if (out.numel() == 0) return Error::Ok;
  strides4(input, c.in_s);
  strides4(weight, c.w_s);
  strides4(out, c.out_s);
  const int64_t cout_g = c.c_out / groups;
  // The GEMM needs the weight's (Cin, KH, KW) flattened and out's (OH, OW) flattened.
  const bool weight_flat =
      weight.stride(rank - 1) == 1 && c.w_s[2] == c.kw && c.w_s[1] == c.kh * c.kw;
  const bool out_flat = c.out_s[2] == c.ow * c.out_s[3];
  const bool gemm_path = !transposed && weight_flat && out_flat && cout_g >= 4 &&
                         (dt == ScalarType::Float || dt == ScalarType::Double);
  EMBER_SWITCH_REAL_TYPES(dt, T, (void)0, {
    const T* b = bias == nullptr ? nullptr : bias->data<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      if (gemm_path) {
        conv_gemm<T>(c, input.data<T>(), weight.data<T>(), b, out.data<T>(), ctx.threads);
        return Error::Ok;
      }
    }
    conv_direct<T>(c, input.data<T>(), weight.data<T>(), b, out.data<T>(), ctx.threads);
  });
  return Error::Ok;
}

}  // namespace ember
