// The reduction and scan families: the dims a reduction removes, the out shape it gives, and loops
// that visit every output position with the input elements that reduce into it.
//
//   ReducePlan plan;
//   EMBER_TRY(plan_reduction(in, *args[1], keepdim, "sum", {&out}, plan));  // resizes out
//   for_each_reduction(plan, ctx.threads, [&](const int64_t* out_offsets, const ReduceLine& line) {
//     double acc = 0;
//     line.for_each([&](int64_t in_offset, int64_t) { acc += load(in, in_offset); });
//     store(out, out_offsets[0], acc);
//   });
//
// Scans (cumsum, cummin, softmax) are reductions over one dim whose outs keep the input's shape:
// plan_scan gives them the same loop, with the line's out offsets along the dim.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/portable/util/elementwise.h"
#include "runtime/kernels/portable/util/promotion.h"

namespace ember {

inline constexpr int kMaxReduceOuts = 2;

// The input elements that reduce into one output position: `count` elements visited in row-major
// order of the reduced dims (k = 0..count-1, the flattened index over those dims).
struct ReduceLine {
  int64_t base = 0;
  int num_dims = 0;
  const int32_t* sizes = nullptr;
  const int64_t* strides = nullptr;
  int64_t count = 1;

  // g(in_offset, k) for each element.
  template <typename G>
  void for_each(G&& g) const {
    if (count == 0) return;
    if (num_dims == 1) {
      for (int64_t k = 0; k < count; ++k) g(base + k * strides[0], k);
      return;
    }
    int64_t idx[kMaxRank] = {};
    int64_t off = base;
    for (int64_t k = 0; k < count; ++k) {
      g(off, k);
      for (int d = num_dims - 1; d >= 0; --d) {
        if (++idx[d] < sizes[d]) {
          off += strides[d];
          break;
        }
        off -= strides[d] * (idx[d] - 1);
        idx[d] = 0;
      }
    }
  }
};

struct ReducePlan {
  int num_kept = 0;
  int32_t kept_sizes[kMaxRank] = {};
  int64_t kept_in_strides[kMaxRank] = {};
  int64_t kept_out_strides[kMaxReduceOuts][kMaxRank] = {};
  int num_outs = 1;
  int num_reduced = 0;
  int32_t reduced_sizes[kMaxRank] = {};
  int64_t reduced_in_strides[kMaxRank] = {};
  int64_t out_numel = 1;
  int64_t reduce_numel = 1;
  // Scans only: the stride of the scanned dim in each out.
  int64_t scan_out_strides[kMaxReduceOuts] = {};
};

// A bit per input dim to reduce, from `dims` (an int list, an Int, or None; None and an empty list
// mean every dim). Negative dims wrap; a dim out of range or repeated is InvalidArgument.
Error reduction_mask(const Tensor& in, const EValue& dims, const char* op_name, uint32_t& mask);

// Resizes `outs` to the reduced shape (reduced dims removed, or kept as size 1 with keepdim) and
// fills `plan`. Errors: an out of the wrong rank (InvalidArgument), the resize error of an out.
Error plan_reduction(const Tensor& in, uint32_t mask, bool keepdim, const char* op_name,
                     std::span<Tensor* const> outs, ReducePlan& plan);

// Resizes `outs` to the input's shape and plans a scan along `dim` (already wrapped).
Error plan_scan(const Tensor& in, int dim, const char* op_name, std::span<Tensor* const> outs,
                ReducePlan& plan);

// Calls f(out_offsets, line) once per output position; out_offsets[i] is the element offset in out
// i. Splits the positions over `pool` when the work is large.
template <typename F>
void for_each_reduction(const ReducePlan& plan, ThreadPool* pool, F&& f) {
  if (plan.out_numel == 0) return;
  auto range = [&](int64_t begin, int64_t end) {
    ReduceLine line;
    line.num_dims = plan.num_reduced;
    line.sizes = plan.reduced_sizes;
    line.strides = plan.reduced_in_strides;
    line.count = plan.reduce_numel;
    int64_t idx[kMaxRank] = {};
    int64_t rest = begin, in_off = 0;
    int64_t out_off[kMaxReduceOuts] = {};
    for (int d = plan.num_kept - 1; d >= 0; --d) {
      idx[d] = rest % plan.kept_sizes[d];
      rest /= plan.kept_sizes[d];
      in_off += idx[d] * plan.kept_in_strides[d];
      for (int o = 0; o < plan.num_outs; ++o) out_off[o] += idx[d] * plan.kept_out_strides[o][d];
    }
    for (int64_t i = begin; i < end; ++i) {
      line.base = in_off;
      f(static_cast<const int64_t*>(out_off), static_cast<const ReduceLine&>(line));
      for (int d = plan.num_kept - 1; d >= 0; --d) {
        if (++idx[d] < plan.kept_sizes[d]) {
          in_off += plan.kept_in_strides[d];
          for (int o = 0; o < plan.num_outs; ++o) out_off[o] += plan.kept_out_strides[o][d];
          break;
        }
        in_off -= plan.kept_in_strides[d] * (idx[d] - 1);
        for (int o = 0; o < plan.num_outs; ++o) {
          out_off[o] -= plan.kept_out_strides[o][d] * (idx[d] - 1);
        }
        idx[d] = 0;
      }
    }
  };
  const int64_t work = plan.out_numel * (plan.reduce_numel > 0 ? plan.reduce_numel : 1);
  if (pool == nullptr || work < 2 * kParallelGrain || plan.out_numel < 2) {
    range(0, plan.out_numel);
  } else {
    const int64_t grain = kParallelGrain / (plan.reduce_numel > 0 ? plan.reduce_numel : 1);
    // A one-pointer closure fits std::function's local storage: no heap allocation per call.
    const auto* body = &range;
    pool->parallel_for(plan.out_numel, grain > 0 ? grain : 1,
                       [body](int64_t b, int64_t e) { (*body)(b, e); });
  }
}

// The dtype a sum-like reduction (sum, prod, cumsum, cumprod) computes and writes: `dtype` when
// given (it must then equal the out's dtype), else the out's dtype (ATen infers it from the out).
Error reduction_out_dtype(const EValue& dtype, const Tensor& out, const char* op_name,
                          ScalarType& result);

// The accumulator type of sum-like reductions over result dtype T: double for floating types,
// the same width wrapping integer for integers, bool for bool.
template <typename T>
using accumulate_type_t = std::conditional_t<std::is_same_v<T, bool>, bool,
                                             std::conditional_t<std::is_integral_v<T>, T, double>>;

// --- fold: sum-like reductions

// Folds every line into `out`, whose dtype R is the result dtype: acc = init(), then
// acc = step(acc, v) for each input value v (converted to Acc = accumulate_type_t<R>), and
// out = finish(acc, count). `kCompute` lists the result-dtype categories the functors compile for.
template <unsigned kCompute = kAcceptAll, typename Init, typename Step, typename Finish>
Error fold_reduction(KernelContext& ctx, const Tensor& in, const ReducePlan& plan, Tensor& out,
                     const char* op_name, Init init, Step step, Finish finish) {
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      out.dtype(), R,
      status = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(out.dtype())), {
        if constexpr ((category_of<R>() & kCompute) == 0) {
          status = fail(Error::InvalidArgument, "%s: not implemented for dtype %s", op_name,
                        to_string(out.dtype()));
        } else {
          using Acc = accumulate_type_t<R>;
          R* po = out.data<R>();
          auto fold = [&](auto read) {
            for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
              Acc acc = init(Acc{});
              line.for_each([&](int64_t i, int64_t) { acc = step(acc, read(i)); });
              po[o[0]] = convert<R>(finish(acc, line.count));
            });
          };
          if (in.dtype() == out.dtype()) {
            // The common case (a float mean or sum): typed reads, no conversion call per element.
            const R* pi = in.data<R>();
            fold([pi](int64_t i) { return convert<Acc>(pi[i]); });
          } else {
            const LoadFn<Acc> load = load_fn<Acc>(in.dtype());
            const void* pi = in.data();
            fold([load, pi](int64_t i) { return load(pi, i); });
          }
        }
      });
  return status;
}

// --- extremes: amax/amin (values), max.dim/min.dim (values and indices), argmax/argmin

// True when v should replace the current extreme `cur` (NaN wins and stays; ties keep the first).
template <bool kMax, typename T>
bool beats(T v, T cur) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(cur)) return false;
    if (std::isnan(v)) return true;
  }
  return kMax ? v > cur : v < cur;
}

// Writes the extreme of each line to `values` (may be null; same dtype as `in`) and its index
// along the reduced dims to `indices` (may be null; int64). Errors on an empty reduction.
template <bool kMax>
Error extreme_reduction(KernelContext& ctx, const Tensor& in, const ReducePlan& plan,
                        Tensor* values, Tensor* indices, const char* op_name) {
  EMBER_CHECK(plan.reduce_numel > 0, Error::InvalidArgument,
              "%s: cannot reduce over a zero-size dim (the operation has no identity)", op_name);
  EMBER_CHECK(values == nullptr || values->dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected the values out to have dtype %s, got %s", op_name,
              to_string(in.dtype()), to_string(values->dtype()));
  EMBER_CHECK(indices == nullptr || indices->dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: expected the indices out to have dtype int64, got %s", op_name,
              to_string(indices->dtype()));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      in.dtype(), CTYPE,
      status = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(in.dtype())), {
        using T = compute_type_t<CTYPE>;
        const CTYPE* pi = in.data<CTYPE>();
        CTYPE* pv = values == nullptr ? nullptr : values->data<CTYPE>();
        int64_t* px = indices == nullptr ? nullptr : indices->data<int64_t>();
        for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
          T best{};
          int64_t best_k = -1;
          line.for_each([&](int64_t i, int64_t k) {
            const T v = static_cast<T>(pi[i]);
            if (best_k < 0 || beats<kMax>(v, best)) {
              best = v;
              best_k = k;
            }
          });
          if (pv != nullptr) pv[o[0]] = static_cast<CTYPE>(best);
          if (px != nullptr) px[o[pv != nullptr ? 1 : 0]] = best_k;
        });
      });
  return status;
}

// --- variance and standard deviation

// Two-pass variance (in double) with `correction`, optionally its square root. Floating dtypes
// only; the out has the input's dtype.
Error variance_reduction(KernelContext& ctx, const Tensor& in, const ReducePlan& plan, Tensor& out,
                         double correction, bool take_sqrt, const char* op_name);

// --- scans

// cummax / cummin (contract C26): running extreme and its index; ties take the later index, a
// NaN propagates and each later NaN takes over the index.
template <bool kMax>
Error cumulative_extreme(KernelContext& ctx, const Tensor& in, int64_t dim, Tensor& values,
                         Tensor& indices, const char* op_name) {
  int d = 0;
  EMBER_TRY(wrap_dim(dim, in.dim(), op_name, d));
  EMBER_CHECK(values.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected values to have dtype %s, got %s", op_name, to_string(in.dtype()),
              to_string(values.dtype()));
  EMBER_CHECK(indices.dtype() == ScalarType::Long, Error::InvalidArgument,
              "%s: expected indices to have dtype int64, got %s", op_name,
              to_string(indices.dtype()));
  ReducePlan plan;
  Tensor* outs[] = {&values, &indices};
  EMBER_TRY(plan_scan(in, d, op_name, outs, plan));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      in.dtype(), CTYPE,
      status = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(in.dtype())), {
        using T = compute_type_t<CTYPE>;
        const CTYPE* pi = in.data<CTYPE>();
        CTYPE* pv = values.data<CTYPE>();
        int64_t* px = indices.data<int64_t>();
        const int64_t sv = plan.scan_out_strides[0], sx = plan.scan_out_strides[1];
        for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
          T cur{};
          int64_t cur_k = 0;
          line.for_each([&](int64_t i, int64_t k) {
            const T v = static_cast<T>(pi[i]);
            bool take = k == 0;
            if constexpr (std::is_floating_point_v<T>) {
              take = take || std::isnan(v) || (!std::isnan(cur) && (kMax ? v >= cur : v <= cur));
            } else {
              take = take || (kMax ? v >= cur : v <= cur);
            }
            if (take) {
              cur = v;
              cur_k = k;
            }
            pv[o[0] + k * sv] = static_cast<CTYPE>(cur);
            px[o[1] + k * sx] = cur_k;
          });
        });
      });
  return status;
}

// cumsum / cumprod: running sum or product in the out's dtype (or `dtype`, which must equal it),
// accumulated in double for floating types.
Error cumulative_fold(KernelContext& ctx, const Tensor& in, int64_t dim, const EValue& dtype,
                      Tensor& out, bool product, const char* op_name);

// _softmax / _log_softmax along `dim`; floating dtypes, out of the input's dtype.
Error softmax_along(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                    Tensor& out, bool log, const char* op_name);

}  // namespace ember
