// The matmul family, all through one routine (runtime/kernels/gemm/gemm.h, float32 and float64):
//   aten::mm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
//   aten::bmm.out(Tensor self, Tensor mat2, *, Tensor(a!) out)
//   aten::addmm.out(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1,
//   Tensor(a!) out) aten::baddbmm.out(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1,
//   Scalar alpha=1, Tensor(a!) out)
//   aten::linear.out(Tensor input, Tensor weight, Tensor? bias=None, *, Tensor(a!) out)
//   (ExecuTorch's LLM export writes it): addmm(bias, input as [rows, in], weight transposed)
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/gemm/gemm.h"
#include "runtime/kernels/portable/util/copy.h"
#include "runtime/kernels/portable/util/dispatch.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/platform/thread_pool.h"

namespace ember {
namespace {

struct MatmulArgs {
  const char* op;
  const Tensor* self;  // addmm / baddbmm: the added tensor (broadcast to out)
  const Tensor& a;
  const Tensor& b;
  const EValue* beta;
  const EValue* alpha;
  Tensor& out;
  bool batched;
};

// 16-bit floats accumulate in float; integers wrap (computed in uint64, truncated).
template <typename T>
using AccType =
    std::conditional_t<std::is_floating_point_v<compute_type_t<T>>, compute_type_t<T>, uint64_t>;

template <typename T>
AccType<T> to_acc(T v) {
  if constexpr (std::is_same_v<AccType<T>, uint64_t>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v));
  } else {
    return static_cast<AccType<T>>(v);
  }
}

template <typename T>
AccType<T> scalar_acc(const EValue* s) {
  if (s == nullptr) return AccType<T>(1);
  if constexpr (std::is_same_v<AccType<T>, uint64_t>) {
    return static_cast<uint64_t>(s->is_int() ? s->to_int()
                                             : static_cast<int64_t>(s->scalar_as_double()));
  } else {
    return static_cast<AccType<T>>(s->scalar_as_double());
  }
}

template <typename T>
void matmul_typed(const MatmulArgs& m, int64_t batch, int64_t rows, int64_t cols, int64_t depth,
                  ThreadPool* threads) {
  const int r = m.batched ? 1 : 0;
  const Tensor &a = m.a, &b = m.b, &out = m.out;
  const AccType<T> alpha = scalar_acc<T>(m.alpha);
  const AccType<T> beta = m.self == nullptr ? AccType<T>(0) : scalar_acc<T>(m.beta);
  constexpr bool kGemm = std::is_same_v<T, float> || std::is_same_v<T, double>;
  View self_view;  // self broadcast to out's shape (matmul_out checked that it broadcasts)
  const bool add_self = m.self != nullptr && beta != AccType<T>(0) &&
                        broadcast_view(m.op, *m.self, out.sizes(), &self_view) == Error::Ok;
  // The GEMM adds beta * self after the product (it redoes an overflowed sum only where it does
  // not read C, gemm.h); the loop below reads it from out.
  if (add_self && !kGemm) copy_view(*m.self, self_view, m.out);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = out.data<T>();
  const int64_t a_rs = a.stride(r), a_cs = a.stride(r + 1), b_rs = b.stride(r),
                b_cs = b.stride(r + 1), c_rs = out.stride(r), c_cs = out.stride(r + 1);
  auto one = [&](int64_t i, ThreadPool* pool) {
    const T* ai = pa + (m.batched ? i * a.stride(0) : 0);
    const T* bi = pb + (m.batched ? i * b.stride(0) : 0);
    T* ci = pc + (m.batched ? i * out.stride(0) : 0);
    if constexpr (kGemm) {
      if (depth == 1 && !m.batched) {
        // ATen's mm over one element is the product itself (0 * -x is -0.0); its sums over more
        // elements, and bmm's, start from +0.0, as the GEMM's do.
        for (int64_t y = 0; y < rows; ++y) {
          for (int64_t x = 0; x < cols; ++x)
            ci[y * c_rs + x * c_cs] = alpha * ai[y * a_rs] * bi[x * b_cs];
        }
        return;
      }
      gemm(GemmProblem<T>{rows, cols, depth, alpha, ai, a_rs, a_cs, bi, b_rs, b_cs, T(0), ci, c_rs,
                          c_cs},
           pool);
    } else {
      for (int64_t y = 0; y < rows; ++y) {
        for (int64_t x = 0; x < cols; ++x) {
          AccType<T> sum = 0;
          for (int64_t k = 0; k < depth; ++k) {
            sum += to_acc(ai[y * a_rs + k * a_cs]) * to_acc(bi[k * b_rs + x * b_cs]);
          }
          T& dst = ci[y * c_rs + x * c_cs];
          const AccType<T> prior = beta == AccType<T>(0) ? AccType<T>(0) : beta * to_acc(dst);
          dst = static_cast<T>(prior + alpha * sum);
        }
      }
    }
  };
  // Many small products: one per thread; few large ones: the GEMM splits each.
  if (batch > 1 && rows * cols * depth < 64 * 64 * 64 && batch * rows * cols * depth > 1 << 20) {
    threads->parallel_for(batch, 1, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) one(i, nullptr);
    });
  } else {
    for (int64_t i = 0; i < batch; ++i) one(i, threads);
  }
  if constexpr (kGemm) {
    if (!add_self) return;
    const T* ps = m.self->data<T>() + self_view.offset;
    const int64_t s_bs = m.batched ? self_view.strides[0] : 0, s_rs = self_view.strides[r],
                  s_cs = self_view.strides[r + 1], o_bs = m.batched ? out.stride(0) : 0;
    for (int64_t i = 0; i < batch; ++i) {
      for (int64_t y = 0; y < rows; ++y) {
        for (int64_t x = 0; x < cols; ++x) {
          pc[i * o_bs + y * c_rs + x * c_cs] += beta * ps[i * s_bs + y * s_rs + x * s_cs];
        }
      }
    }
  }
}

Error matmul_out(KernelContext& ctx, const MatmulArgs& m) {
  const int rank = m.batched ? 3 : 2;
  EMBER_CHECK(m.a.dim() == rank && m.b.dim() == rank, Error::InvalidArgument,
              "%s: expected %dD tensors, got %dD and %dD", m.op, rank, m.a.dim(), m.b.dim());
  const int r = m.batched ? 1 : 0;
  EMBER_CHECK(!m.batched || m.a.size(0) == m.b.size(0), Error::InvalidArgument,
              "%s: batch sizes %d and %d differ", m.op, m.a.size(0), m.b.size(0));
  EMBER_CHECK(m.a.size(r + 1) == m.b.size(r), Error::InvalidArgument,
              "%s: shapes cannot be multiplied (%dx%d and %dx%d)", m.op, m.a.size(r),
              m.a.size(r + 1), m.b.size(r), m.b.size(r + 1));
  EMBER_CHECK(m.a.dtype() == m.b.dtype() && m.out.dtype() == m.a.dtype() &&
                  (m.self == nullptr || m.self->dtype() == m.a.dtype()),
              Error::InvalidArgument, "%s: expected operands and out of one dtype, got %s, %s, %s",
              m.op, to_string(m.a.dtype()), to_string(m.b.dtype()), to_string(m.out.dtype()));
  EMBER_CHECK(m.a.dtype() != ScalarType::Bool, Error::InvalidArgument, "%s: bool is not supported",
              m.op);
  EMBER_CHECK(m.out.dim() == rank, Error::InvalidArgument, "%s: out has rank %d, expected %d", m.op,
              m.out.dim(), rank);
  int32_t sizes[3];
  if (m.batched) sizes[0] = m.a.size(0);
  sizes[r] = m.a.size(r);
  sizes[r + 1] = m.b.size(r + 1);
  if (m.self != nullptr) {
    EMBER_CHECK(m.self->dim() <= rank, Error::InvalidArgument, "%s: self has rank %d", m.op,
                m.self->dim());
    for (int d = 0; d < m.self->dim(); ++d) {
      const int32_t s = m.self->size(d), want = sizes[rank - m.self->dim() + d];
      EMBER_CHECK(s == want || s == 1, Error::InvalidArgument,
                  "%s: self of size %d at dim %d does not broadcast to %d", m.op, s, d, want);
    }
  }
  EMBER_TRY(m.out.resize({sizes, static_cast<size_t>(rank)}));
  const int64_t batch = m.batched ? sizes[0] : 1;
  EMBER_SWITCH_REAL_TYPES(m.a.dtype(), T, (void)0, {
    matmul_typed<T>(m, batch, sizes[r], sizes[r + 1], m.a.size(r + 1), ctx.threads);
  });
  return Error::Ok;
}

}  // namespace

Error mm_out(KernelContext& ctx, std::span<EValue*> args) {
  return matmul_out(ctx, {"mm", nullptr, args[0]->to_tensor(), args[1]->to_tensor(), nullptr,
                          nullptr, args[2]->to_tensor(), false});
}

Error bmm_out(KernelContext& ctx, std::span<EValue*> args) {
  return matmul_out(ctx, {"bmm", nullptr, args[0]->to_tensor(), args[1]->to_tensor(), nullptr,
                          nullptr, args[2]->to_tensor(), true});
}

Error addmm_out(KernelContext& ctx, std::span<EValue*> args) {
  return matmul_out(ctx, {"addmm", &args[0]->to_tensor(), args[1]->to_tensor(),
                          args[2]->to_tensor(), args[3], args[4], args[5]->to_tensor(), false});
}

Error baddbmm_out(KernelContext& ctx, std::span<EValue*> args) {
  return matmul_out(ctx, {"baddbmm", &args[0]->to_tensor(), args[1]->to_tensor(),
                          args[2]->to_tensor(), args[3], args[4], args[5]->to_tensor(), true});
}

// input [..., in] (a contiguous input of any rank is the matrix [rows, in]; a 2-D one may have
// any dim order), weight [out_features, in], bias [out_features], [1] or None; out [..., out].
Error linear_out(KernelContext& ctx, std::span<EValue*> args) {
  constexpr const char* op = "linear";
  const Tensor& input = args[0]->to_tensor();
  const Tensor& weight = args[1]->to_tensor();
  Tensor& out = args[3]->to_tensor();
  EMBER_CHECK(input.dim() >= 1 && weight.dim() == 2, Error::InvalidArgument,
              "%s: expected an input of rank 1 or more and a 2-D weight, got ranks %d and %d", op,
              input.dim(), weight.dim());
  const int rank = input.dim();
  const int32_t in_features = input.size(rank - 1), out_features = weight.size(0);
  EMBER_CHECK(weight.size(1) == in_features, Error::InvalidArgument,
              "%s: input's last dimension %d is not the weight's %d", op, in_features,
              weight.size(1));
  EMBER_CHECK(rank <= 2 || input.is_contiguous(), Error::NotSupported,
              "%s: a rank-%d input must be contiguous", op, rank);
  EMBER_CHECK(out.dim() == rank && (rank <= 2 || out.is_contiguous()), Error::InvalidArgument,
              "%s: out must be a contiguous rank-%d tensor", op, rank);
  int32_t out_sizes[kMaxRank];
  for (int d = 0; d + 1 < rank; ++d) out_sizes[d] = input.size(d);
  out_sizes[rank - 1] = out_features;
  EMBER_TRY(out.resize({out_sizes, static_cast<size_t>(rank)}));
  int64_t rows = 1;
  for (int d = 0; d + 1 < rank; ++d) rows *= input.size(d);
  EMBER_CHECK(rows <= INT32_MAX, Error::InvalidArgument, "%s: %lld rows", op,
              static_cast<long long>(rows));
  // Matrix views: the input [rows, in] (itself when 2-D, keeping its dim order), the weight
  // transposed [in, out] (its dim order swapped), out [rows, out].
  const int32_t a_sizes[2] = {static_cast<int32_t>(rows), in_features};
  const int32_t b_sizes[2] = {in_features, out_features};
  const uint8_t rows_first[2] = {0, 1}, cols_first[2] = {1, 0};
  const bool weight_rows_first = weight.dim_order()[0] == 0;
  Tensor a, b, c;
  EMBER_TRY(Tensor::make_at(&a, input.dtype(), a_sizes,
                            rank == 2 ? input.dim_order() : std::span<const uint8_t>(rows_first),
                            input.mutable_data()));
  EMBER_TRY(Tensor::make_at(&b, weight.dtype(), b_sizes,
                            weight_rows_first ? cols_first : rows_first, weight.mutable_data()));
  const int32_t c_sizes[2] = {static_cast<int32_t>(rows), out_features};
  EMBER_TRY(Tensor::make_at(&c, out.dtype(), c_sizes,
                            rank == 2 ? out.dim_order() : std::span<const uint8_t>(rows_first),
                            out.mutable_data()));
  const Tensor* bias = args[2]->is_tensor() ? &args[2]->to_tensor() : nullptr;
  EMBER_CHECK(bias == nullptr || bias->dim() <= 1, Error::InvalidArgument,
              "%s: bias must be 1-D, got rank %d", op, bias == nullptr ? 0 : bias->dim());
  return matmul_out(ctx, {op, bias, a, b, nullptr, nullptr, c, false});
}

}  // namespace ember
