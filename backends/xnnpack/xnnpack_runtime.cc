#include "backends/xnnpack/xnnpack_runtime.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/cpu_runtime.h"
#include "backends/cpu/kernels/quant_gemm.h"
#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/translate.h"
#include "runtime/core/half.h"

namespace ember::xnn {
namespace {

// One delegate argument as ExecuTorch's XNNPACK delegate reads or writes it, and the engine's
// float32 tensor that stands for it.
//
// ExecuTorch hands XNNPACK each tensor's storage as it lies in memory: a contiguous tensor with
// its sizes as XNNPACK's dims, a 4-D channels-last one (dim order 0, 2, 3, 1) with its sizes in
// memory order (N, H, W, C), which is how the exporter writes such a value's dims into the
// payload. The engine's tensor is the value's dims, contiguous, so it is a view of the same bytes:
// the caller's own tensor where that already is one, else `view` over its storage. A value of
// another datatype than fp32 (int8, fp16, bf16) is converted into `scratch` (inputs, before the
// engine runs) or out of it (outputs, after).
struct Arg {
  uint32_t value = 0;  // the payload's value id (refusals name it)
  bool is_input = true;
  Datatype dtype = Datatype::Fp32;
  ScalarType scalar_type = ScalarType::Float;      // what ExecuTorch passes for dtype
  float scale = 1, inv_scale = 1, zero_point = 0;  // qint8: the value's grid
  std::vector<int32_t> dims;                       // the payload's dims: memory order
  int64_t numel = 0;         // at the payload's dims; in rows mode (XnnHandle::rows), this call's
  float* scratch = nullptr;  // dtype != Fp32: the engine's float32 values
  Tensor view;               // the engine's tensor: dims, contiguous, over scratch or the caller's
  EValue boxed;              // holds &view
};

// The engine's handle, what its builds read (the weight table, which views the blob), and the
// boundary: each argument's conversion, with its buffers allocated at init.
struct XnnHandle {
  std::unique_ptr<WeightTable> weights;
  DelegateHandle* engine = nullptr;
  // Rows mode (Translation::lead): the engine holds every argument as [rows, last dim], the rows
  // its dynamic batch, at most `rows`; a call brings any leading dims with at most that many,
  // the same for every argument (`call_lead`: this call's, the first input's).
  int64_t rows = 0;  // 0: the payload's sizes only
  std::vector<int32_t> call_lead;
  std::vector<Arg> args;
  std::vector<EValue*> engine_args;              // what the engine is given at a call
  std::vector<std::vector<float>> heap_scratch;  // scratch when the context has no allocator
};

ScalarType scalar_type_of(Datatype d) {
  switch (d) {
    case Datatype::QInt8:
      return ScalarType::Char;  // ExecuTorch's static int8 activations are torch.int8
    case Datatype::Fp16:
      return ScalarType::Half;
    case Datatype::Bf16:
      return ScalarType::BFloat16;
    default:
      return ScalarType::Float;
  }
}

std::string dims_text(std::span<const int32_t> dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

// Whether `t` is laid out as ExecuTorch's XNNPACK delegate reads it: contiguous, or 4-D
// channels-last. ExecuTorch gives XNNPACK any other dim order's sizes as if contiguous, which
// would read the storage in the wrong order; Ember refuses those.
bool is_channels_last(const Tensor& t) {
  const std::span<const uint8_t> o = t.dim_order();
  return o.size() == 4 && o[0] == 0 && o[1] == 2 && o[2] == 3 && o[3] == 1;
}

Error refuse_arg(size_t index, const Arg& a, const Tensor& t, const char* why) {
  int32_t order[kMaxRank];
  for (int d = 0; d < t.dim(); ++d) order[d] = t.dim_order()[d];
  const std::string want = std::string(to_string(a.scalar_type)) + " " +
                           dims_text(std::span<const int32_t>(a.dims.data(), a.dims.size()));
  return fail(Error::InvalidArgument,
              "XNNPACK delegate: argument %zu (%s value %u) is a %s tensor of sizes %s, dim order "
              "%s: %s; it takes %s in memory order (contiguous, or 4-D channels-last whose "
              "sizes in dim order are these)",
              index, a.is_input ? "input" : "output", a.value, to_string(t.dtype()),
              dims_text(t.sizes()).c_str(),
              dims_text(std::span<const int32_t>(order, static_cast<size_t>(t.dim()))).c_str(), why,
              want.c_str());
}

// An input of another datatype than fp32 into the engine's float32 scratch.
Result<EValue*> convert_input(Arg& a, size_t index, const Tensor& t) {
  const int64_t n = a.numel;
  float* out = a.scratch;
  switch (a.dtype) {
    case Datatype::QInt8: {
      // The engine's dequantize: (q - zero point) * scale, each exactly the real value the
      // engine's int8 nodes read.
      const int8_t* q = t.data<const int8_t>();
      for (int64_t i = 0; i < n; ++i) {
        out[i] = (static_cast<float>(q[i]) - a.zero_point) * a.scale;
      }
      break;
    }
    case Datatype::Fp16: {
      const Half* h = t.data<const Half>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(h[i]);
      break;
    }
    case Datatype::Bf16: {
      const BFloat16* h = t.data<const BFloat16>();
      for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(h[i]);
      break;
    }
    default:
      return fail(Error::Internal, "XNNPACK delegate: argument %zu: no conversion", index);
  }
  return &a.boxed;
}

// Rows mode: `t`'s leading dims, the call's (the first input's, which every other argument
// shares; an output is resized to them), and the engine's view of it as [rows, last dim]. Sizes
// are in memory order, as XNNPACK reads them: a 4-D channels-last tensor's are N, H, W, C (then
// an output must already have the call's, as resizing keeps its logical sizes).
Error bind_rows(XnnHandle& h, Arg& a, size_t index, Tensor& t) {
  const size_t rank = a.dims.size();
  const bool channels_last = is_channels_last(t);
  if (!t.is_contiguous() && !channels_last) {
    return refuse_arg(index, a, t, "a dim order XNNPACK does not read");
  }
  if (t.dtype() != a.scalar_type) return refuse_arg(index, a, t, "another dtype");
  if (t.dim() != static_cast<int>(rank)) return refuse_arg(index, a, t, "another rank");
  int32_t mem[kMaxRank];
  for (size_t d = 0; d < rank; ++d) {
    mem[d] = t.size(channels_last ? t.dim_order()[d] : static_cast<int>(d));
  }
  if (mem[rank - 1] != a.dims.back()) return refuse_arg(index, a, t, "another last dim");
  if (index == 0) {
    h.call_lead.assign(mem, mem + rank - 1);
  } else if (a.is_input || channels_last) {
    if (!std::equal(h.call_lead.begin(), h.call_lead.end(), mem)) {
      return refuse_arg(index, a, t, "leading dims other than argument 0's");
    }
  } else {
    int32_t want[kMaxRank];
    std::copy(h.call_lead.begin(), h.call_lead.end(), want);
    want[rank - 1] = a.dims.back();
    if (t.resize(std::span<const int32_t>(want, rank)) != Error::Ok) {
      return refuse_arg(index, a, t, "an output that cannot take the call's leading dims");
    }
  }
  int64_t m = 1;
  for (const int32_t d : h.call_lead) m *= d;
  if (m > h.rows) return refuse_arg(index, a, t, "more rows than the program's upper bound");
  const int32_t engine_dims[2] = {static_cast<int32_t>(m), a.dims.back()};
  EMBER_TRY(a.view.resize(engine_dims));
  a.numel = m * a.dims.back();
  if (t.mutable_data() == nullptr && a.numel > 0) return refuse_arg(index, a, t, "no storage");
  if (a.scratch == nullptr) a.view.set_data(t.mutable_data());
  return Error::Ok;
}

// The engine's argument for args[i] (its storage checked against a), converting an input.
Result<EValue*> bind(XnnHandle& h, size_t index, EValue* arg) {
  Arg& a = h.args[index];
  if (arg == nullptr || !arg->is_tensor()) {
    return fail(Error::InvalidArgument, "XNNPACK delegate: argument %zu (value %u) is not a tensor",
                index, a.value);
  }
  if (h.rows > 0) {
    EMBER_TRY(bind_rows(h, a, index, arg->to_tensor()));
    if (a.scratch == nullptr || !a.is_input) return &a.boxed;
    return convert_input(a, index, arg->to_tensor());
  }
  const Tensor& t = arg->to_tensor();
  const bool channels_last = is_channels_last(t);
  if (!t.is_contiguous() && !channels_last) {
    return refuse_arg(index, a, t, "a dim order XNNPACK does not read");
  }
  if (t.dtype() != a.scalar_type) return refuse_arg(index, a, t, "another dtype");
  // A 0-dim tensor is XNNPACK's scalar, which the payload writes as a value of one element (the
  // exporter's lifted scalar constants of an fp16 graph): the same single element.
  const bool scalar = t.dim() == 0 && a.numel == 1;
  if (!scalar && t.dim() != static_cast<int>(a.dims.size())) {
    return refuse_arg(index, a, t, "another rank");
  }
  for (int d = 0; d < t.dim(); ++d) {
    const int32_t size = t.size(channels_last ? t.dim_order()[d] : d);
    if (size != a.dims[d]) return refuse_arg(index, a, t, "other sizes");
  }
  if (t.mutable_data() == nullptr) return refuse_arg(index, a, t, "no storage");
  if (a.scratch == nullptr) {
    if (!channels_last && !scalar) return arg;  // already the engine's tensor
    a.view.set_data(t.mutable_data());
    return &a.boxed;
  }
  if (a.is_input) return convert_input(a, index, t);
  return &a.boxed;
}

// The engine's float32 result of output `a` into the caller's tensor of a's datatype.
void write_back(const Arg& a, const Tensor& t) {
  const int64_t n = a.numel;
  const float* in = a.scratch;
  switch (a.dtype) {
    case Datatype::QInt8: {
      // The engine holds int8 values as their real values on the grid, (q - zp) * scale rounded
      // to float; times the float reciprocal of the scale this is q - zp within a few float
      // rounding errors of |q - zp| <= 255, far from a half step, so rounding recovers the
      // integer exactly. The engine's own quantize (clamped, halves to even) does it.
      int8_t* q = t.data<int8_t>();
      for (int64_t i = 0; i < n; ++i) {
        q[i] = static_cast<int8_t>(cpu::quantize_int8(in[i], a.inv_scale, a.zero_point));
      }
      break;
    }
    case Datatype::Fp16: {
      Half* h = t.data<Half>();
      for (int64_t i = 0; i < n; ++i) h[i] = Half(in[i]);  // to nearest, ties to even
      break;
    }
    case Datatype::Bf16: {
      BFloat16* h = t.data<BFloat16>();
      for (int64_t i = 0; i < n; ++i) h[i] = BFloat16(in[i]);  // to nearest, ties to even
      break;
    }
    default:
      break;
  }
}

// The boundary of payload `p`: an Arg for each external value, inputs then outputs, scratch from
// the method allocator (else the heap) for those the engine holds in another datatype.
Error make_args(XnnHandle& h, const Payload& p, MemoryAllocator* allocator) {
  const size_t n = p.inputs.size() + p.outputs.size();
  h.args.resize(n);
  h.engine_args.assign(n, nullptr);
  for (size_t i = 0; i < n; ++i) {
    Arg& a = h.args[i];
    const bool is_input = i < p.inputs.size();
    const Value& v = p.values[is_input ? p.inputs[i] : p.outputs[i - p.inputs.size()]];
    a.value = v.id;
    a.is_input = is_input;
    a.dtype = v.dtype;
    a.scalar_type = scalar_type_of(v.dtype);
    if (v.dtype == Datatype::QInt8) {
      a.scale = v.quant.scale;
      a.inv_scale = 1.0f / v.quant.scale;  // as the engine's quantize steps (translate_fold.cc)
      a.zero_point = static_cast<float>(v.quant.zero_point);
    }
    a.numel = 1;
    for (const int64_t d : v.dims) {
      if (d > INT32_MAX) {
        return fail(Error::NotSupported, "XNNPACK delegate: value %u has a dim of %lld", v.id,
                    static_cast<long long>(d));
      }
      a.dims.push_back(static_cast<int32_t>(d));
      a.numel *= d;
    }
    if (v.dtype != Datatype::Fp32) {
      const size_t bytes = static_cast<size_t>(a.numel) * sizeof(float);
      if (allocator != nullptr) {
        a.scratch = static_cast<float*>(allocator->allocate(bytes, 64));
        if (a.scratch == nullptr) {
          return fail(Error::MemoryAllocationFailed,
                      "XNNPACK delegate: %zu bytes for value %u's float32 copy", bytes, v.id);
        }
      } else {
        a.scratch = h.heap_scratch.emplace_back(static_cast<size_t>(a.numel)).data();
      }
    }
    if (h.rows > 0) {  // [rows, last dim], resized to each call's rows
      const int32_t dims[2] = {static_cast<int32_t>(h.rows), a.dims.back()};
      EMBER_TRY(Tensor::make_at(&a.view, ScalarType::Float, dims, {}, a.scratch,
                                ShapeDynamism::DynamicBound));
    } else {
      EMBER_TRY(Tensor::make_at(&a.view, ScalarType::Float, a.dims, {}, a.scratch));
    }
    a.boxed = EValue::from_tensor(&a.view);
  }
  return Error::Ok;
}

class XnnpackBackend final : public Backend {
 public:
  bool is_available() const override { return true; }

  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) const override {
    if (processed == nullptr || processed->data() == nullptr) {
      return fail(Error::InvalidArgument, "XNNPACK delegate: no processed blob");
    }
    const std::span<const uint8_t> blob(processed->bytes(), processed->size());
    Result<Payload> p = read_payload(blob);
    if (!p.ok()) return p.error();
    Result<Translation> t = translate(*p, context.named_data);
    if (!t.ok()) return t.error();
    // The engine trusts graphs its parser verified: the translation goes through the same checks
    // as a blob of Ember's compiler (a round trip of the small graph; weights are keys only).
    Result<cpu::CpuGraph> g = cpu::parse(cpu::serialize(t->graph));
    if (!g.ok()) {
      return add_error_context(g.error(), "XNNPACK delegate: the translated graph is invalid");
    }
    auto h = std::make_unique<XnnHandle>();
    h->weights = std::move(t->weights);
    if (!t->lead.empty()) {
      h->rows = 1;
      for (const int64_t d : t->lead) h->rows *= d;
      h->call_lead.reserve(t->lead.size());  // a call allocates nothing (runtime rule 3)
    }
    EMBER_TRY(make_args(*h, *p, context.allocator));
    Result<DelegateHandle*> engine =
        cpu::init_graph(std::move(*g), context, specs, h->weights.get());
    if (!engine.ok()) return add_error_context(engine.error(), "XNNPACK delegate");
    h->engine = *engine;
    return reinterpret_cast<DelegateHandle*>(h.release());
  }

  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    if (handle == nullptr) return fail(Error::DelegateInvalidHandle, "XNNPACK delegate: no handle");
    XnnHandle& h = *reinterpret_cast<XnnHandle*>(handle);
    if (args.size() != h.args.size()) {
      return fail(Error::InvalidArgument, "XNNPACK delegate: %zu arguments, expected %zu",
                  args.size(), h.args.size());
    }
    for (size_t i = 0; i < args.size(); ++i) {
      EMBER_ASSIGN_OR_RETURN(h.engine_args[i], bind(h, i, args[i]));
    }
    EMBER_TRY(cpu::runtime_backend()->execute(context, h.engine, h.engine_args));
    for (size_t i = 0; i < args.size(); ++i) {
      const Arg& a = h.args[i];
      if (!a.is_input && a.scratch != nullptr) write_back(a, args[i]->to_tensor());
    }
    return Error::Ok;
  }

  void destroy(DelegateHandle* handle) const override {
    auto* h = reinterpret_cast<XnnHandle*>(handle);
    if (h == nullptr) return;
    cpu::runtime_backend()->destroy(h->engine);
    delete h;
  }
};

}  // namespace

const Backend* runtime_backend() {
  static const XnnpackBackend backend;
  return &backend;
}

Error register_runtime_backend() { return register_backend(kBackendName, runtime_backend()); }

}  // namespace ember::xnn
