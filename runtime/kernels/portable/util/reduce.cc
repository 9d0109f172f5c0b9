#include "runtime/kernels/portable/reduce_family.h"

#include <limits>

#include "runtime/kernels/portable/util/row_kernels.h"

namespace ember {

Error reduction_mask(const Tensor& in, const EValue& dims, const char* op_name, uint32_t& mask) {
  const uint32_t all = in.dim() == 0 ? 0u : ((1u << in.dim()) - 1u);
  if (dims.is_none()) {
    mask = all;
    return Error::Ok;
  }
  mask = 0;
  auto add = [&](int64_t d) -> Error {
    int w = 0;
    EMBER_TRY(wrap_dim(d, in.dim(), op_name, w));
    if (in.dim() == 0) return Error::Ok;
    EMBER_CHECK((mask & (1u << w)) == 0, Error::InvalidArgument,
                "%s: dim %d appears multiple times in the list of dims", op_name, w);
    mask |= 1u << w;
    return Error::Ok;
  };
  if (dims.is_int()) return add(dims.to_int());
  const std::span<const int64_t> list = dims.to_int_list();
  if (list.empty()) {
    mask = all;
    return Error::Ok;
  }
  for (int64_t d : list) EMBER_TRY(add(d));
  return Error::Ok;
}

Error plan_reduction(const Tensor& in, uint32_t mask, bool keepdim, const char* op_name,
                     std::span<Tensor* const> outs, ReducePlan& plan) {
  plan = ReducePlan();
  plan.num_outs = static_cast<int>(outs.size());
  int32_t out_sizes[kMaxRank];
  int out_rank = 0;
  for (int d = 0; d < in.dim(); ++d) {
    if ((mask & (1u << d)) != 0) {
      plan.reduced_sizes[plan.num_reduced] = in.size(d);
      plan.reduced_in_strides[plan.num_reduced++] = in.stride(d);
      plan.reduce_numel *= in.size(d);
      if (keepdim) out_sizes[out_rank++] = 1;
    } else {
      plan.kept_sizes[plan.num_kept] = in.size(d);
      plan.kept_in_strides[plan.num_kept++] = in.stride(d);
      plan.out_numel *= in.size(d);
      out_sizes[out_rank++] = in.size(d);
    }
  }
  for (size_t o = 0; o < outs.size(); ++o) {
    Tensor& out = *outs[o];
    EMBER_CHECK(out.dim() == out_rank, Error::InvalidArgument,
                "%s: out has rank %d; the reduced result has rank %d", op_name, out.dim(),
                out_rank);
    EMBER_TRY(out.resize({out_sizes, static_cast<size_t>(out_rank)}));
    int k = 0;
    for (int d = 0, od = 0; d < in.dim(); ++d) {
      const bool reduced = (mask & (1u << d)) != 0;
      if (!reduced) plan.kept_out_strides[o][k++] = out.stride(od);
      if (!reduced || keepdim) ++od;
    }
  }
  return Error::Ok;
}

Error plan_scan(const Tensor& in, int dim, const char* op_name, std::span<Tensor* const> outs,
                ReducePlan& plan) {
  plan = ReducePlan();
  plan.num_outs = static_cast<int>(outs.size());
  for (Tensor* out : outs) {
    EMBER_CHECK(out->dim() == in.dim(), Error::InvalidArgument, "%s: out has rank %d, the input %d",
                op_name, out->dim(), in.dim());
    EMBER_TRY(out->resize(in.sizes()));
  }
  for (int d = 0; d < in.dim(); ++d) {
    if (d == dim) {
      plan.reduced_sizes[0] = in.size(d);
      plan.reduced_in_strides[0] = in.stride(d);
      plan.num_reduced = 1;
      plan.reduce_numel = in.size(d);
      for (size_t o = 0; o < outs.size(); ++o) plan.scan_out_strides[o] = outs[o]->stride(d);
    } else {
      plan.kept_sizes[plan.num_kept] = in.size(d);
      plan.kept_in_strides[plan.num_kept] = in.stride(d);
      for (size_t o = 0; o < outs.size(); ++o) {
        plan.kept_out_strides[o][plan.num_kept] = outs[o]->stride(d);
      }
      ++plan.num_kept;
      plan.out_numel *= in.size(d);
    }
  }
  if (in.dim() == 0) {  // a 0-dim tensor scans as length 1
    plan.num_reduced = 1;
    plan.reduced_sizes[0] = 1;
    plan.reduce_numel = 1;
  }
  return Error::Ok;
}

Error reduction_out_dtype(const EValue& dtype, const Tensor& out, const char* op_name,
                          ScalarType& result) {
  result = out.dtype();
  if (dtype.is_none()) return Error::Ok;
  const auto requested = static_cast<ScalarType>(dtype.to_int());
  EMBER_CHECK(is_valid(requested) && is_supported(requested), Error::NotSupported,
              "%s: dtype code %lld is not supported", op_name,
              static_cast<long long>(dtype.to_int()));
  EMBER_CHECK(requested == out.dtype(), Error::InvalidArgument,
              "%s: expected out tensor to have dtype %s, but got %s", op_name, to_string(requested),
              to_string(out.dtype()));
  return Error::Ok;
}

Error variance_reduction(KernelContext& ctx, const Tensor& in, const ReducePlan& plan, Tensor& out,
                         double correction, bool take_sqrt, const char* op_name) {
  EMBER_CHECK(is_floating(in.dtype()), Error::InvalidArgument,
              "%s: only floating point dtypes are supported, got %s", op_name,
              to_string(in.dtype()));
  EMBER_CHECK(out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected out to have dtype %s, got %s", op_name, to_string(in.dtype()),
              to_string(out.dtype()));
  const LoadFn<double> load = load_fn<double>(in.dtype());
  const StoreFn<double> store = store_fn<double>(out.dtype());
  const void* pi = in.data();
  void* po = out.mutable_data();
  for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
    double sum = 0;
    line.for_each([&](int64_t i, int64_t) { sum += load(pi, i); });
    const double n = static_cast<double>(line.count);
    const double mean = sum / n;
    double m2 = 0;
    line.for_each([&](int64_t i, int64_t) {
      const double d = load(pi, i) - mean;
      m2 += d * d;
    });
    const double divisor = n - correction > 0 ? n - correction : 0.0;
    const double var = m2 / divisor;
    store(po, o[0], take_sqrt ? std::sqrt(var) : var);
  });
  return Error::Ok;
}

namespace {

// acc + v or acc * v; integers wrap (through unsigned), bool is or / and.
template <typename Acc>
Acc fold_step(Acc acc, Acc v, bool product) {
  if constexpr (std::is_same_v<Acc, bool>) {
    return product ? (acc && v) : (acc || v);
  } else if constexpr (std::is_integral_v<Acc>) {
    using U = std::make_unsigned_t<Acc>;
    return static_cast<Acc>(product ? static_cast<U>(acc) * static_cast<U>(v)
                                    : static_cast<U>(acc) + static_cast<U>(v));
  } else {
    return product ? acc * v : acc + v;
  }
}

template <typename CTYPE>
void softmax_lines(KernelContext& ctx, const Tensor& in, const ReducePlan& plan, Tensor& out,
                   bool log) {
  if constexpr (std::is_floating_point_v<compute_type_t<CTYPE>>) {
    using T = compute_type_t<CTYPE>;
    const CTYPE* pi = in.data<CTYPE>();
    CTYPE* po = out.data<CTYPE>();
    const int64_t so = plan.scan_out_strides[0];
    // Rows contiguous in both tensors (softmax over the last dim of dense tensors): float32 takes
    // the vectorized row kernel, with the same semantics.
    const bool rows_dense = plan.reduced_in_strides[0] == 1 && so == 1;
    for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
      if constexpr (std::is_same_v<CTYPE, float>) {
        if (rows_dense) {
          softmax_row_f32(pi + line.base, po + o[0], line.count, log);
          return;
        }
      }
      T max = -std::numeric_limits<T>::infinity();
      line.for_each([&](int64_t i, int64_t) {
        const T v = static_cast<T>(pi[i]);
        if (!std::isnan(max) && (std::isnan(v) || v > max)) max = v;
      });
      double sum = 0;
      line.for_each([&](int64_t i, int64_t) {
        sum += static_cast<double>(std::exp(static_cast<T>(pi[i]) - max));
      });
      const T log_sum = static_cast<T>(std::log(sum));
      line.for_each([&](int64_t i, int64_t k) {
        const T shifted = static_cast<T>(pi[i]) - max;
        po[o[0] + k * so] =
            static_cast<CTYPE>(log ? shifted - log_sum : std::exp(shifted) / static_cast<T>(sum));
      });
    });
  }
}

}  // namespace

Error cumulative_fold(KernelContext& ctx, const Tensor& in, int64_t dim, const EValue& dtype,
                      Tensor& out, bool product, const char* op_name) {
  int d = 0;
  EMBER_TRY(wrap_dim(dim, in.dim(), op_name, d));
  ScalarType result = out.dtype();
  EMBER_TRY(reduction_out_dtype(dtype, out, op_name, result));
  // libtorch 1.13, the reference, has no float16 CPU kernel for cumsum and cumprod.
  EMBER_CHECK(result != ScalarType::Half, Error::InvalidArgument,
              "%s: not implemented for dtype float16", op_name);
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_scan(in, d, op_name, outs, plan));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      result, R, status = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(result)), {
        using Acc = accumulate_type_t<R>;
        const LoadFn<Acc> load = load_fn<Acc>(in.dtype());
        const void* pi = in.data();
        R* po = out.data<R>();
        const int64_t so = plan.scan_out_strides[0];
        for_each_reduction(plan, ctx.threads, [&](const int64_t* o, const ReduceLine& line) {
          Acc acc = product ? Acc(1) : Acc(0);
          line.for_each([&](int64_t i, int64_t k) {
            acc = fold_step(acc, load(pi, i), product);
            po[o[0] + k * so] = convert<R>(acc);
          });
        });
      });
  return status;
}

Error softmax_along(KernelContext& ctx, const Tensor& in, int64_t dim, bool half_to_float,
                    Tensor& out, bool log, const char* op_name) {
  EMBER_CHECK(!half_to_float, Error::InvalidArgument,
              "%s: conversion from half to float is not supported on CPU", op_name);
  // float16 and bfloat16 compute in float32, as PyTorch 2's CPU kernels do (libtorch 1.13 had
  // no float16 softmax: a float16 program compiled, then was refused here; fuzzer seed 424044).
  EMBER_CHECK(is_floating(in.dtype()), Error::InvalidArgument,
              "%s: only floating dtypes are supported, got %s", op_name, to_string(in.dtype()));
  EMBER_CHECK(out.dtype() == in.dtype(), Error::InvalidArgument,
              "%s: expected out to have dtype %s, got %s", op_name, to_string(in.dtype()),
              to_string(out.dtype()));
  int d = 0;
  EMBER_TRY(wrap_dim(dim, in.dim(), op_name, d));
  ReducePlan plan;
  Tensor* outs[] = {&out};
  EMBER_TRY(plan_scan(in, d, op_name, outs, plan));
  Error status = Error::Ok;
  EMBER_SWITCH_ALL_TYPES(
      in.dtype(), CTYPE,
      status = fail(Error::NotSupported, "%s: dtype %s", op_name, to_string(in.dtype())),
      softmax_lines<CTYPE>(ctx, in, plan, out, log));
  return status;
}

}  // namespace ember
