#include "backends/cpu/onednn/delegate.h"

#include <omp.h>

#include <cstdlib>

#include "runtime/platform/clock.h"

namespace ember::cpu::delegate {

CpuDelegate::CpuDelegate(BuiltDelegate built)
    : built_(std::move(built)),
      scratch_data_(nullptr),
      verbose_(std::getenv("EMBER_CPU_VERBOSE") != nullptr) {
  dnnl_memory_get_data_handle(built_.scratchpad.get(), &scratch_data_);
  for (const auto& s : built_.steps) {
    const std::optional<OwnKind> own = s->own_kind();
    if (!own) {
      ++built_.summary.onednn_steps;
      continue;
    }
    switch (*own) {
      case OwnKind::InvertedResidual:
        ++built_.summary.inverted_residual_blocks;
        break;
      case OwnKind::Depthwise:
        ++built_.summary.depthwise_steps;
        break;
      case OwnKind::Pointwise:
        ++built_.summary.pointwise_steps;
        break;
      case OwnKind::GatheredConv:
        ++built_.summary.gathered_conv_steps;
        break;
      case OwnKind::MatVec:
        ++built_.summary.matvec_steps;
        break;
      case OwnKind::SmallMatMul:
        ++built_.summary.small_matmul_steps;
        break;
      case OwnKind::GroupQuantMatMul:
        ++built_.summary.grouped_matmuls;
        break;
      case OwnKind::DotMatMul:
        ++built_.summary.grouped_matmuls;
        ++built_.summary.dot_matmuls;
        break;
      case OwnKind::Int8Elementwise:
        ++built_.summary.int8_elementwise;
        break;
      case OwnKind::Lookup:
        ++built_.summary.int8_lookups;
        break;
      case OwnKind::Exact:
        ++built_.summary.exact_steps;
        break;
      case OwnKind::Pad:
        ++built_.summary.pad_steps;
        break;
    }
  }
}

Error CpuDelegate::execute(std::span<EValue*> args, ExecutionObserver* observer) {
  if (args.size() != built_.num_args) {
    return fail(Error::InvalidArgument, "cpu delegate: %zu arguments, expected %zu", args.size(),
                built_.num_args);
  }
  for (size_t a = 0; a < args.size(); ++a) {
    // A position without a tensor is a symbolic size a view read; the build has its value.
    if (a >= built_.arg_md.size() || !built_.arg_is_tensor[a]) continue;
    if (args[a] == nullptr || !args[a]->is_tensor()) {
      return fail(Error::InvalidArgument, "cpu delegate: argument %zu is not a tensor", a);
    }
    const Tensor& t = args[a]->to_tensor();
    const memory::desc& want = built_.arg_md[a];
    const bool is_bool = want.data_type() == dt::u8;
    if (t.dtype() != (is_bool ? ScalarType::Bool : ScalarType::Float) || !same_layout(t, want) ||
        t.data() == nullptr) {
      return fail(Error::InvalidArgument,
                  "cpu delegate: argument %zu is not the %s tensor the delegate was built for "
                  "(sizes, dim order or storage differ)",
                  a, is_bool ? "bool" : "float32");
    }
  }
  // oneDNN's C API: a status where the C++ API would throw.
  for (auto& [m, a] : built_.bound) {
    if (dnnl_memory_set_data_handle(m.get(), args[a]->to_tensor().mutable_data()) != dnnl_success) {
      return fail(Error::Internal, "cpu delegate: oneDNN refused argument %d's storage", a);
    }
  }
  // oneDNN's OpenMP primitives run on omp_get_max_threads() threads: the delegate's count for the
  // call, and the caller's own again after it (an ICV of the calling thread, left as found).
  struct OmpThreads {
    int previous;
    explicit OmpThreads(int threads) : previous(omp_get_max_threads()) {
      if (previous != threads) omp_set_num_threads(threads);
    }
    ~OmpThreads() {
      if (omp_get_max_threads() != previous) omp_set_num_threads(previous);
    }
  } omp_threads(built_.threads);
  const RunContext ctx{built_.stream.get(), scratch_data_, built_.threads, verbose_};
  for (const auto& s : built_.steps) {
    const uint64_t start = observer != nullptr ? now_ns() : 0;
    if (Error e = s->run(ctx); e != Error::Ok) return e;
    if (observer != nullptr) observer->on_delegate_step("cpu", s->name().c_str(), start, now_ns());
  }
  if (dnnl_stream_wait(built_.stream.get()) != dnnl_success) {
    return fail(Error::Internal, "cpu delegate: oneDNN stream wait failed");
  }
  return Error::Ok;
}

bool CpuDelegate::same_layout(const Tensor& t, const memory::desc& md) {
  // The C descriptor's arrays: md.dims() would build a vector at every call.
  const dnnl_dims_t& dims = md.data.dims;
  const int rank = t.dim() == 0 ? 1 : t.dim();
  if (md.data.ndims != rank) return false;
  if (t.dim() == 0) return dims[0] == 1;
  const auto& blk = md.data.format_desc.blocking;
  for (int i = 0; i < rank; ++i) {
    if (t.size(i) != dims[i]) return false;
    if (t.size(i) > 1 && t.stride(i) != blk.strides[i]) return false;
  }
  return true;
}

}  // namespace ember::cpu::delegate
