// parse (graph_format.h): the blob into a CpuGraph, refusing whatever is not one this runtime
// reads as written. The flatbuffer first (size, identifier, the verifier, the alignment the
// verifier misses), then the version, then everything the verifier cannot know: counts against
// their limits, ids, sizes, enum values, that each op's parameters are its kind's table; the
// parameter values are graph_verify.cc's. Every refusal is an InvalidProgram naming what is wrong.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_format_internal.h"
#include "ember/backends/cpu/cpu_graph_generated.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace ember::cpu {
namespace {

using internal::invalid_blob;
using internal::kMaxNumel;
using internal::kVersion;

constexpr char kOldMagic[8] = {'E', 'M', 'B', 'R', 'C', 'P', 'U', '1'};
// The enums of graph/graph_format.h without a kNum* bound: one past their last value (a value
// appended there is refused until it is named here, with the checks it needs below).
constexpr uint8_t kNumTensorKinds = static_cast<uint8_t>(TensorKind::Intermediate) + 1;
constexpr uint8_t kNumWeightStorages = static_cast<uint8_t>(WeightStorage::Bool) + 1;
constexpr uint8_t kNumPrecisions = static_cast<uint8_t>(Precision::Bf16) + 1;
// Limits on counts; within them, everything must still lie inside the blob (the verifier).
constexpr uint32_t kMaxInputs = 65536;  // delegate inputs; delegate outputs
constexpr size_t kMaxKeyBytes = 4096;
constexpr size_t kMaxOpInputs = 1024, kMaxPostOps = 16;
// Elements of a vector of parameters (a permutation, reduced dims, a convolution's strides...).
constexpr size_t kMaxParamElements = kMaxCpuRank;
// The smallest size-prefixed flatbuffer: size prefix, root offset, identifier.
constexpr size_t kMinBlob = 12;

// Whether `v`'s elements lie at their alignment. The verifier of flatbuffers 2.0.8 checks that of
// a vector's length only, so a [long] at 4 mod 8 passes it, and reading it would be a misaligned
// load (found by cpu_graph_fuzz).
template <typename T>
bool aligned(const flatbuffers::Vector<T>* v) {
  return v == nullptr || reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) == 0;
}

bool conv_aligned(const fb::ConvParams* c) {
  return c == nullptr || (aligned(c->stride()) && aligned(c->pad_l()) && aligned(c->pad_r()) &&
                          aligned(c->dilation()) && aligned(c->output_padding()));
}

// Whether every [long] that parse reads lies at its alignment: tensors' dims and the vectors of
// ops' parameters (a version-5 blob, whose ints are never read, is refused by its version).
bool longs_aligned(const fb::Graph& root) {
  if (const auto* tensors = root.tensors()) {
    for (const fb::Tensor* t : *tensors) {
      if (!aligned(t->dims())) return false;
    }
  }
  if (const auto* ops = root.ops()) {
    for (const fb::Op* op : *ops) {
      if (!conv_aligned(op->params_as_ConvParams())) return false;
      if (const auto* q = op->params_as_QuantConvParams();
          q != nullptr && !conv_aligned(q->conv())) {
        return false;
      }
      if (const auto* p = op->params_as_PoolParams();
          p != nullptr && !(aligned(p->kernel()) && aligned(p->stride()) && aligned(p->pad_l()) &&
                            aligned(p->pad_r()) && aligned(p->dilation()))) {
        return false;
      }
      if (const auto* p = op->params_as_PermuteParams(); p != nullptr && !aligned(p->perm())) {
        return false;
      }
      if (const auto* r = op->params_as_ReduceParams(); r != nullptr && !aligned(r->dims())) {
        return false;
      }
      if (const auto* p = op->params_as_PadParams();
          p != nullptr && !(aligned(p->before()) && aligned(p->after()))) {
        return false;
      }
    }
  }
  return true;
}

// `*out` = the elements of `v` (none where absent); false when there are more than `max` (or
// they are misaligned, which longs_aligned refused before).
template <typename T>
bool copy_vector(const flatbuffers::Vector<T>* v, size_t max, std::vector<T>* out) {
  out->clear();
  if (v == nullptr) return true;
  if (v->size() > max || !aligned(v)) return false;
  out->assign(v->begin(), v->end());
  return true;
}

// `n` bytes as text: printable ASCII as is, any other byte as \xNN.
std::string printable(const uint8_t* p, size_t n) {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (p[i] >= 0x20 && p[i] < 0x7f) {
      s += static_cast<char>(p[i]);
    } else {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", p[i]);
      s += hex;
    }
  }
  return s;
}

bool valid_dim_order(const TensorDesc& t) {
  if (t.dim_order.empty()) return true;
  if (t.dim_order.size() != t.dims.size()) return false;
  bool seen[kMaxCpuRank] = {};
  for (uint8_t d : t.dim_order) {
    if (d >= t.dims.size() || seen[d]) return false;
    seen[d] = true;
  }
  return true;
}

// The parameters' table each op kind takes (NONE: none).
fb::OpParams params_type_of(OpKind kind) {
  switch (kind) {
    case OpKind::Conv:
      return fb::OpParams::ConvParams;
    case OpKind::QuantConv:
      return fb::OpParams::QuantConvParams;
    case OpKind::MatMul:
      return fb::OpParams::MatMulParams;
    case OpKind::QuantMatMul:
      return fb::OpParams::QuantMatMulParams;
    case OpKind::GroupQuantMatMul:
      return fb::OpParams::GroupQuantMatMulParams;
    case OpKind::Pool:
      return fb::OpParams::PoolParams;
    case OpKind::Eltwise:
      return fb::OpParams::EltwiseParams;
    case OpKind::Binary:
      return fb::OpParams::BinaryParams;
    case OpKind::Softmax:
      return fb::OpParams::SoftmaxParams;
    case OpKind::LayerNorm:
    case OpKind::BatchNorm:
      return fb::OpParams::NormParams;
    case OpKind::Concat:
      return fb::OpParams::ConcatParams;
    case OpKind::Permute:
      return fb::OpParams::PermuteParams;
    case OpKind::Reduce:
      return fb::OpParams::ReduceParams;
    case OpKind::Slice:
      return fb::OpParams::SliceParams;
    case OpKind::Pad:
      return fb::OpParams::PadParams;
    case OpKind::Resize:
      return fb::OpParams::ResizeParams;
    case OpKind::Reshape:
    case OpKind::Where:
      break;
  }
  return fb::OpParams::NONE;
}

std::string params_name(fb::OpParams type) {
  if (type == fb::OpParams::NONE) return "none";
  const char* name = fb::EnumNameOpParams(type);
  return name != nullptr && *name != '\0' ? std::string(name)
                                          : std::to_string(static_cast<unsigned>(type));
}

QuantParams quant_params(const fb::QuantParams& q) { return {q.scale(), q.zero_point()}; }

// `*out` = `f`'s fields; false where a vector is oversized or misaligned (longs_aligned refused
// that before).
bool read_conv(const fb::ConvParams& f, ConvParams* out) {
  out->groups = f.groups();
  out->transposed = f.transposed() != 0;
  return copy_vector(f.stride(), kMaxParamElements, &out->stride) &&
         copy_vector(f.pad_l(), kMaxParamElements, &out->pad_l) &&
         copy_vector(f.pad_r(), kMaxParamElements, &out->pad_r) &&
         copy_vector(f.dilation(), kMaxParamElements, &out->dilation) &&
         copy_vector(f.output_padding(), kMaxParamElements, &out->output_padding);
}

// `*out` = `fop`'s parameters, which must be of the table `kind` takes; InvalidProgram with the
// reason where they are not, are incomplete, hold a flag other than 0 or 1 or an oversized vector.
// Their values are check_params's (graph_verify.cc).
Error read_params(const fb::Op& fop, OpKind kind, const std::string& where, OpParams* out) {
  const fb::OpParams want = params_type_of(kind), got = fop.params_type();
  const void* table = fop.params();
  if (want == fb::OpParams::NONE && got == fb::OpParams::NONE) {
    *out = NoParams{};
    return Error::Ok;
  }
  if (got != want || table == nullptr) {
    return invalid_blob(
        where + "parameters " +
        (got == fb::OpParams::NONE || table == nullptr ? std::string("missing")
                                                       : "of type " + params_name(got)) +
        ", op kind " + std::to_string(static_cast<unsigned>(kind)) + " takes " + params_name(want));
  }
  const std::string oversized = where + "oversized parameters";
  switch (want) {
    case fb::OpParams::ConvParams:
    case fb::OpParams::QuantConvParams: {
      const fb::ConvParams* fc = fop.params_as_ConvParams();
      const fb::QuantParams* src = nullptr;
      if (const auto* fq = fop.params_as_QuantConvParams()) {
        fc = fq->conv();
        src = fq->src();
        if (fc == nullptr || src == nullptr) {
          return invalid_blob(where +
                              "quantized convolution needs its geometry and its source's scale "
                              "and zero point");
        }
      }
      if (fc->transposed() > 1) {
        return invalid_blob(where + "convolution groups or transposed flag out of range");
      }
      ConvParams c;
      if (!read_conv(*fc, &c)) return invalid_blob(oversized);
      if (src != nullptr) {
        *out = QuantConvParams{std::move(c), quant_params(*src)};
      } else {
        *out = std::move(c);
      }
      return Error::Ok;
    }
    case fb::OpParams::MatMulParams: {
      const fb::MatMulParams& f = *fop.params_as_MatMulParams();
      if ((f.a() == nullptr) != (f.b() == nullptr)) {
        return invalid_blob(where + "matmul of int8 values needs two scales and zero points");
      }
      MatMulParams p;
      p.quantized = f.a() != nullptr;
      if (p.quantized) {
        p.a = quant_params(*f.a());
        p.b = quant_params(*f.b());
      }
      *out = p;
      return Error::Ok;
    }
    case fb::OpParams::QuantMatMulParams: {
      const fb::QuantParams* src = fop.params_as_QuantMatMulParams()->src();
      if (src == nullptr) {
        return invalid_blob(where + "quantized matmul needs a, weight, bias, scales, parameters");
      }
      *out = QuantMatMulParams{quant_params(*src)};
      return Error::Ok;
    }
    case fb::OpParams::GroupQuantMatMulParams: {
      const fb::GroupQuantMatMulParams& f = *fop.params_as_GroupQuantMatMulParams();
      *out = GroupQuantMatMulParams{f.group(), static_cast<InputQuant>(f.input_quant()), f.eps()};
      return Error::Ok;
    }
    case fb::OpParams::PoolParams: {
      const fb::PoolParams& f = *fop.params_as_PoolParams();
      PoolParams p;
      p.alg = static_cast<PoolAlg>(f.alg());
      if (!copy_vector(f.kernel(), kMaxParamElements, &p.kernel) ||
          !copy_vector(f.stride(), kMaxParamElements, &p.stride) ||
          !copy_vector(f.pad_l(), kMaxParamElements, &p.pad_l) ||
          !copy_vector(f.pad_r(), kMaxParamElements, &p.pad_r) ||
          !copy_vector(f.dilation(), kMaxParamElements, &p.dilation)) {
        return invalid_blob(oversized);
      }
      *out = std::move(p);
      return Error::Ok;
    }
    case fb::OpParams::EltwiseParams: {
      const fb::EltwiseParams& f = *fop.params_as_EltwiseParams();
      *out = EltwiseParams{static_cast<EltwiseAlg>(f.alg()), f.alpha(), f.beta()};
      return Error::Ok;
    }
    case fb::OpParams::BinaryParams:
      *out = BinaryParams{static_cast<BinaryAlg>(fop.params_as_BinaryParams()->alg())};
      return Error::Ok;
    case fb::OpParams::SoftmaxParams:
      *out = SoftmaxParams{fop.params_as_SoftmaxParams()->axis()};
      return Error::Ok;
    case fb::OpParams::NormParams:
      *out = NormParams{fop.params_as_NormParams()->eps()};
      return Error::Ok;
    case fb::OpParams::ConcatParams:
      *out = ConcatParams{fop.params_as_ConcatParams()->axis()};
      return Error::Ok;
    case fb::OpParams::PermuteParams: {
      PermuteParams p;
      if (!copy_vector(fop.params_as_PermuteParams()->perm(), kMaxParamElements, &p.perm)) {
        return invalid_blob(oversized);
      }
      *out = std::move(p);
      return Error::Ok;
    }
    case fb::OpParams::ReduceParams: {
      const fb::ReduceParams& f = *fop.params_as_ReduceParams();
      ReduceParams p;
      p.alg = static_cast<ReduceAlg>(f.alg());
      if (!copy_vector(f.dims(), kMaxParamElements, &p.dims)) return invalid_blob(oversized);
      *out = std::move(p);
      return Error::Ok;
    }
    case fb::OpParams::SliceParams: {
      const fb::SliceParams& f = *fop.params_as_SliceParams();
      *out = SliceParams{f.dim(), f.start()};
      return Error::Ok;
    }
    case fb::OpParams::PadParams: {
      const fb::PadParams& f = *fop.params_as_PadParams();
      PadParams p;
      if (!copy_vector(f.before(), kMaxParamElements, &p.before) ||
          !copy_vector(f.after(), kMaxParamElements, &p.after)) {
        return invalid_blob(oversized);
      }
      p.value = f.value();
      *out = std::move(p);
      return Error::Ok;
    }
    case fb::OpParams::ResizeParams: {
      const fb::ResizeParams& f = *fop.params_as_ResizeParams();
      if (f.align_corners() > 1) return invalid_blob(where + "resize align_corners is not 0 or 1");
      ResizeParams p;
      p.alg = static_cast<ResizeAlg>(f.alg());
      p.align_corners = f.align_corners() != 0;
      p.height = f.height();
      p.width = f.width();
      *out = p;
      return Error::Ok;
    }
    case fb::OpParams::NONE:
      break;
  }
  return invalid_blob(where + "parameters of " + params_name(want) + " have no reader");
}

}  // namespace

Result<CpuGraph> parse(std::span<const uint8_t> blob) {
  if (blob.size() >= sizeof kOldMagic &&
      std::memcmp(blob.data(), kOldMagic, sizeof kOldMagic) == 0) {
    return invalid_blob("a cpu backend blob of a format before version " +
                        std::to_string(kVersion) + " (EMBRCPU1): compile the program again");
  }
  if (blob.size() < kMinBlob || blob.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return invalid_blob("not a cpu backend blob (" + std::to_string(blob.size()) + " bytes)");
  }
  // The generated readers load scalars in place, so the blob must be as aligned as its widest
  // scalar (8 bytes) is relative to its start; it is copied where it is not.
  std::vector<uint64_t> aligned_copy;
  const uint8_t* data = blob.data();
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) {
    aligned_copy.resize((blob.size() + sizeof(uint64_t) - 1) / sizeof(uint64_t));
    std::memcpy(aligned_copy.data(), blob.data(), blob.size());
    data = reinterpret_cast<const uint8_t*>(aligned_copy.data());
  }
  if (!fb::SizePrefixedGraphBufferHasIdentifier(data)) {
    return invalid_blob(
        "not a cpu backend blob (identifier \"" +
        printable(data + 2 * sizeof(flatbuffers::uoffset_t), flatbuffers::kFileIdentifierLength) +
        "\", not \"" + fb::GraphIdentifier() + "\")");
  }
  const size_t size_prefix = flatbuffers::ReadScalar<flatbuffers::uoffset_t>(data);
  if (size_prefix != blob.size() - sizeof(flatbuffers::uoffset_t)) {
    return invalid_blob("truncated or padded blob: its size prefix says " +
                        std::to_string(size_prefix) + " bytes follow it, " +
                        std::to_string(blob.size() - sizeof(flatbuffers::uoffset_t)) + " do");
  }
  flatbuffers::Verifier verifier(data, blob.size());
  if (!fb::VerifySizePrefixedGraphBuffer(verifier)) {
    return invalid_blob(
        "not a valid flatbuffer (graph/cpu_graph.fbs): an offset, table, vector or string lies "
        "outside the blob or is misaligned");
  }
  const fb::Graph* root = fb::GetSizePrefixedGraph(data);
  if (!longs_aligned(*root)) {
    return invalid_blob(
        "not a valid flatbuffer (graph/cpu_graph.fbs): a vector of 64-bit integers is misaligned");
  }

  CpuGraph g;
  if (root->version() != kVersion) {
    return invalid_blob("blob version " + std::to_string(root->version()) +
                        ", this runtime reads " + std::to_string(kVersion) +
                        ": compile the program again");
  }
  if (root->precision() >= kNumPrecisions) return invalid_blob("precision out of range");
  g.precision = static_cast<Precision>(root->precision());
  g.num_inputs = root->num_inputs();
  g.num_symbols = root->num_symbols();
  if (g.num_inputs > kMaxInputs || g.num_symbols > g.num_inputs) {
    return invalid_blob("bad header (input or symbol count)");
  }

  if (const auto* weights = root->weights()) {
    g.weights.resize(weights->size());
    for (uint32_t i = 0; i < weights->size(); ++i) {
      const fb::Weight* fw = weights->Get(i);
      WeightRef& w = g.weights[i];
      const std::string where = "weight " + std::to_string(i) + ": ";
      if (const flatbuffers::String* key = fw->key()) {
        if (key->size() > kMaxKeyBytes) return invalid_blob(where + "oversized key");
        w.key.assign(key->c_str(), key->size());
      }
      w.nbytes = fw->nbytes();
      if (w.nbytes > static_cast<uint64_t>(kMaxNumel) * 4) return invalid_blob(where + "oversized");
    }
  }

  const auto* tensors = root->tensors();
  const uint32_t num_tensors = tensors != nullptr ? tensors->size() : 0;
  g.tensors.resize(num_tensors);
  for (uint32_t i = 0; i < num_tensors; ++i) {
    const fb::Tensor* ft = tensors->Get(i);
    TensorDesc& t = g.tensors[i];
    const std::string where = "tensor " + std::to_string(i) + ": ";
    if (!copy_vector(ft->dims(), kMaxCpuRank, &t.dims) ||
        !copy_vector(ft->dim_order(), kMaxCpuRank, &t.dim_order)) {
      return invalid_blob(where + "rank above " + std::to_string(kMaxCpuRank));
    }
    t.index = ft->index();
    t.batch_symbol = ft->batch_symbol();
    const uint8_t kind = ft->kind(), storage = ft->storage();
    if (kind >= kNumTensorKinds) return invalid_blob(where + "kind out of range");
    t.kind = static_cast<TensorKind>(kind);
    if (storage >= kNumWeightStorages) return invalid_blob(where + "weight storage out of range");
    t.storage = static_cast<WeightStorage>(storage);
    if (t.integer() && t.kind != TensorKind::Weight &&
        !(t.storage == WeightStorage::Bool && t.kind == TensorKind::Input)) {
      return invalid_blob(where + "an integer tensor that is not a weight");
    }
    const int64_t numel = checked_numel(t.dims);
    if (numel < 0 || !valid_dim_order(t)) return invalid_blob(where + "a bad size or dim order");
    if (t.kind == TensorKind::Input && t.index >= g.num_inputs) {
      return invalid_blob(where + "names a missing input");
    }
    if (t.batch_symbol < -1 || t.batch_symbol >= static_cast<int64_t>(g.num_symbols) ||
        (t.batch_symbol >= 0 &&
         (t.kind == TensorKind::Weight || t.dims.empty() || t.dims[0] < 1))) {
      return invalid_blob(where + "a bad batch symbol");
    }
    if (t.storage == WeightStorage::Int4 &&
        (t.dims.empty() || t.dims.back() % 2 != 0 || !t.dim_order.empty())) {
      return invalid_blob(where + "an int4 weight whose last dim is odd or not innermost");
    }
    const uint64_t nbytes = t.storage == WeightStorage::Int4 ? static_cast<uint64_t>(numel) / 2
                            : t.storage == WeightStorage::Int8 || t.storage == WeightStorage::Bool
                                ? static_cast<uint64_t>(numel)
                                : static_cast<uint64_t>(numel) * 4;
    if (t.kind == TensorKind::Weight &&
        (t.index >= g.weights.size() || g.weights[t.index].nbytes != nbytes)) {
      return invalid_blob(where + "names a missing weight or its size disagrees");
    }
  }

  const auto* ops = root->ops();
  const uint32_t num_ops = ops != nullptr ? ops->size() : 0;
  g.ops.resize(num_ops);
  // defined[t]: tensor t has a value when the op being read runs.
  std::vector<uint8_t> defined(num_tensors, 0);
  for (size_t i = 0; i < num_tensors; ++i) {
    defined[i] = g.tensors[i].kind != TensorKind::Intermediate;
  }
  auto valid_use = [&](int32_t id) {
    return id >= 0 && static_cast<uint32_t>(id) < num_tensors && defined[id];
  };
  for (uint32_t i = 0; i < num_ops; ++i) {
    const fb::Op* fop = ops->Get(i);
    OpDesc& op = g.ops[i];
    const std::string where = "op " + std::to_string(i) + ": ";
    if (!copy_vector(fop->inputs(), kMaxOpInputs, &op.inputs)) {
      return invalid_blob(where + "more than " + std::to_string(kMaxOpInputs) + " inputs");
    }
    op.output = fop->output();
    const auto* post_ops = fop->post_ops();
    const uint32_t num_post = post_ops != nullptr ? post_ops->size() : 0;
    if (num_post > kMaxPostOps) {
      return invalid_blob(where + "more than " + std::to_string(kMaxPostOps) + " post-ops");
    }
    op.post_ops.resize(num_post);
    for (uint32_t k = 0; k < num_post; ++k) {
      const fb::PostOp* fp = post_ops->Get(k);
      PostOp& p = op.post_ops[k];
      if (fp->is_sum() > 1 || fp->alg() >= kNumEltwiseAlgs) {
        return invalid_blob(where + "post-op out of range");
      }
      p.is_sum = fp->is_sum() == 1;
      p.tensor = fp->tensor();
      p.alg = static_cast<EltwiseAlg>(fp->alg());
      p.alpha = fp->alpha();
      p.beta = fp->beta();
      if (p.is_sum && !valid_use(p.tensor)) {
        return invalid_blob(where + "sum post-op reads an undefined tensor");
      }
    }
    if (fop->kind() >= kNumOpKinds) return invalid_blob(where + "kind out of range");
    op.kind = static_cast<OpKind>(fop->kind());
    EMBER_TRY(read_params(*fop, op.kind, where, &op.params));
    for (int32_t in : op.inputs) {
      if (in != -1 && !valid_use(in)) return invalid_blob(where + "reads an undefined tensor");
    }
    if (op.output < 0 || static_cast<uint32_t>(op.output) >= num_tensors || defined[op.output]) {
      return invalid_blob(where + "output is not a fresh intermediate tensor");
    }
    EMBER_TRY(internal::check_params(op, i));
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const WeightStorage s =
          op.inputs[k] >= 0 ? g.tensors[op.inputs[k]].storage : WeightStorage::Float32;
      const bool int8_weight =
          k == 1 && (op.kind == OpKind::QuantConv || op.kind == OpKind::QuantMatMul ||
                     op.kind == OpKind::GroupQuantMatMul);
      const bool int4_weight = k == 1 && op.kind == OpKind::GroupQuantMatMul;
      const bool condition = k == 0 && op.kind == OpKind::Where;
      if ((s == WeightStorage::Int8 && !int8_weight) ||
          (s == WeightStorage::Int4 && !int4_weight) || ((s == WeightStorage::Bool) != condition) ||
          (k == 1 && op.kind == OpKind::GroupQuantMatMul && s == WeightStorage::Float32)) {
        return invalid_blob(where + "reads integer weights as floats, or floats as integers");
      }
    }
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum && g.tensors[p.tensor].integer()) {
        return invalid_blob(where + "sums integer weights");
      }
    }
    defined[op.output] = 1;
  }

  const auto* outputs = root->outputs();
  const uint32_t num_outputs = outputs != nullptr ? outputs->size() : 0;
  if (num_outputs > kMaxInputs)
    return invalid_blob("more than " + std::to_string(kMaxInputs) + " outputs");
  g.outputs.resize(num_outputs);
  g.output_dim_orders.resize(num_outputs);
  for (uint32_t i = 0; i < num_outputs; ++i) {
    const fb::Output* fo = outputs->Get(i);
    const std::string where = "output " + std::to_string(i) + ": ";
    g.outputs[i] = fo->tensor();
    if (!copy_vector(fo->dim_order(), kMaxCpuRank, &g.output_dim_orders[i])) {
      return invalid_blob(where + "a bad dim order");
    }
    if (!valid_use(g.outputs[i]) || g.tensors[g.outputs[i]].integer()) {
      return invalid_blob(where + "names an undefined tensor or integer weights");
    }
    TensorDesc view{TensorKind::Intermediate, 0, g.tensors[g.outputs[i]].dims,
                    g.output_dim_orders[i]};
    if (!valid_dim_order(view)) return invalid_blob(where + "a bad dim order");
  }

  std::vector<uint8_t> bound(g.num_symbols, 0);
  for (const TensorDesc& t : g.tensors) {
    if (t.kind == TensorKind::Input && t.batch_symbol >= 0) bound[t.batch_symbol] = 1;
  }
  if (std::find(bound.begin(), bound.end(), 0) != bound.end()) {
    return invalid_blob("a batch symbol is the batch of no input");
  }
  return g;
}

}  // namespace ember::cpu
