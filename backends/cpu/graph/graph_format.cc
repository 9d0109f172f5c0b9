#include "backends/cpu/graph/graph_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <variant>

#include "ember/backends/cpu/cpu_graph_generated.h"

namespace ember::cpu {
namespace {

// 2: dynamic batch symbols; 3: quantized convolutions; 4: grouped int8/int4 linears; 5: a
// flatbuffer (graph/cpu_graph.fbs) instead of the hand-written layout that began with "EMBRCPU1";
// 6: each op's parameters in a table of its kind's (Op.params), named fields instead of Op's
// positional lists of ints and floats, which a version-5 blob holds and this parse never reads.
constexpr uint32_t kVersion = 6;
constexpr char kOldMagic[8] = {'E', 'M', 'B', 'R', 'C', 'P', 'U', '1'};
constexpr int64_t kMaxNumel = int64_t{1} << 40;
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

// A zero point of int8's grid: an integer in [-128, 127].
bool int8_zero_point(float z) { return z >= -128.f && z <= 127.f && z == std::floor(z); }

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

// `v` as a vector in `fbb`; absent where empty.
template <typename T>
flatbuffers::Offset<flatbuffers::Vector<T>> write_vector(flatbuffers::FlatBufferBuilder& fbb,
                                                         const std::vector<T>& v) {
  return v.empty() ? flatbuffers::Offset<flatbuffers::Vector<T>>() : fbb.CreateVector(v);
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

bool fail(std::string* error, std::string why) {
  *error = std::move(why);
  return false;
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

// `*out` = `fop`'s parameters, which must be of the table `kind` takes; false with `*error` set
// where they are not, are incomplete, hold a flag other than 0 or 1 or an oversized vector. Their
// values are check_params's.
bool read_params(const fb::Op& fop, OpKind kind, const std::string& where, OpParams* out,
                 std::string* error) {
  const fb::OpParams want = params_type_of(kind), got = fop.params_type();
  const void* table = fop.params();
  if (want == fb::OpParams::NONE && got == fb::OpParams::NONE) {
    *out = NoParams{};
    return true;
  }
  if (got != want || table == nullptr) {
    return fail(
        error, where + "parameters " +
                   (got == fb::OpParams::NONE || table == nullptr ? std::string("missing")
                                                                  : "of type " + params_name(got)) +
                   ", op kind " + std::to_string(static_cast<unsigned>(kind)) + " takes " +
                   params_name(want));
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
          return fail(error, where +
                                 "quantized convolution needs its geometry and its source's scale "
                                 "and zero point");
        }
      }
      if (fc->transposed() > 1) {
        return fail(error, where + "convolution groups or transposed flag out of range");
      }
      ConvParams c;
      if (!read_conv(*fc, &c)) return fail(error, oversized);
      if (src != nullptr) {
        *out = QuantConvParams{std::move(c), quant_params(*src)};
      } else {
        *out = std::move(c);
      }
      return true;
    }
    case fb::OpParams::MatMulParams: {
      const fb::MatMulParams& f = *fop.params_as_MatMulParams();
      if ((f.a() == nullptr) != (f.b() == nullptr)) {
        return fail(error, where + "matmul of int8 values needs two scales and zero points");
      }
      MatMulParams p;
      p.quantized = f.a() != nullptr;
      if (p.quantized) {
        p.a = quant_params(*f.a());
        p.b = quant_params(*f.b());
      }
      *out = p;
      return true;
    }
    case fb::OpParams::QuantMatMulParams: {
      const fb::QuantParams* src = fop.params_as_QuantMatMulParams()->src();
      if (src == nullptr) {
        return fail(error, where + "quantized matmul needs a, weight, bias, scales, parameters");
      }
      *out = QuantMatMulParams{quant_params(*src)};
      return true;
    }
    case fb::OpParams::GroupQuantMatMulParams: {
      const fb::GroupQuantMatMulParams& f = *fop.params_as_GroupQuantMatMulParams();
      *out = GroupQuantMatMulParams{f.group(), static_cast<InputQuant>(f.input_quant()), f.eps()};
      return true;
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
        return fail(error, oversized);
      }
      *out = std::move(p);
      return true;
    }
    case fb::OpParams::EltwiseParams: {
      const fb::EltwiseParams& f = *fop.params_as_EltwiseParams();
      *out = EltwiseParams{static_cast<EltwiseAlg>(f.alg()), f.alpha(), f.beta()};
      return true;
    }
    case fb::OpParams::BinaryParams:
      *out = BinaryParams{static_cast<BinaryAlg>(fop.params_as_BinaryParams()->alg())};
      return true;
    case fb::OpParams::SoftmaxParams:
      *out = SoftmaxParams{fop.params_as_SoftmaxParams()->axis()};
      return true;
    case fb::OpParams::NormParams:
      *out = NormParams{fop.params_as_NormParams()->eps()};
      return true;
    case fb::OpParams::ConcatParams:
      *out = ConcatParams{fop.params_as_ConcatParams()->axis()};
      return true;
    case fb::OpParams::PermuteParams: {
      PermuteParams p;
      if (!copy_vector(fop.params_as_PermuteParams()->perm(), kMaxParamElements, &p.perm)) {
        return fail(error, oversized);
      }
      *out = std::move(p);
      return true;
    }
    case fb::OpParams::ReduceParams: {
      const fb::ReduceParams& f = *fop.params_as_ReduceParams();
      ReduceParams p;
      p.alg = static_cast<ReduceAlg>(f.alg());
      if (!copy_vector(f.dims(), kMaxParamElements, &p.dims)) return fail(error, oversized);
      *out = std::move(p);
      return true;
    }
    case fb::OpParams::SliceParams: {
      const fb::SliceParams& f = *fop.params_as_SliceParams();
      *out = SliceParams{f.dim(), f.start()};
      return true;
    }
    case fb::OpParams::NONE:
      break;
  }
  return fail(error, where + "parameters of " + params_name(want) + " have no reader");
}

fb::QuantParams quant_params(const QuantParams& q) {
  return fb::QuantParams(q.scale, q.zero_point);
}

flatbuffers::Offset<fb::ConvParams> write_conv(flatbuffers::FlatBufferBuilder& fbb,
                                               const ConvParams& c) {
  return fb::CreateConvParams(fbb, c.groups, c.transposed ? 1 : 0, write_vector(fbb, c.stride),
                              write_vector(fbb, c.pad_l), write_vector(fbb, c.pad_r),
                              write_vector(fbb, c.dilation), write_vector(fbb, c.output_padding));
}

// An op's parameters as the union's type and table in `fbb`.
struct ParamsWriter {
  using Written = std::pair<fb::OpParams, flatbuffers::Offset<void>>;
  flatbuffers::FlatBufferBuilder& fbb;

  Written operator()(const NoParams&) const { return {fb::OpParams::NONE, 0}; }
  Written operator()(const ConvParams& p) const {
    return {fb::OpParams::ConvParams, write_conv(fbb, p).Union()};
  }
  Written operator()(const QuantConvParams& p) const {
    const auto conv = write_conv(fbb, p.conv);
    const fb::QuantParams src = quant_params(p.src);
    return {fb::OpParams::QuantConvParams, fb::CreateQuantConvParams(fbb, conv, &src).Union()};
  }
  Written operator()(const MatMulParams& p) const {
    const fb::QuantParams a = quant_params(p.a), b = quant_params(p.b);
    return {fb::OpParams::MatMulParams,
            fb::CreateMatMulParams(fbb, p.quantized ? &a : nullptr, p.quantized ? &b : nullptr)
                .Union()};
  }
  Written operator()(const QuantMatMulParams& p) const {
    const fb::QuantParams src = quant_params(p.src);
    return {fb::OpParams::QuantMatMulParams, fb::CreateQuantMatMulParams(fbb, &src).Union()};
  }
  Written operator()(const GroupQuantMatMulParams& p) const {
    return {
        fb::OpParams::GroupQuantMatMulParams,
        fb::CreateGroupQuantMatMulParams(fbb, p.group, static_cast<uint8_t>(p.input_quant), p.eps)
            .Union()};
  }
  Written operator()(const PoolParams& p) const {
    return {fb::OpParams::PoolParams,
            fb::CreatePoolParams(fbb, static_cast<uint8_t>(p.alg), write_vector(fbb, p.kernel),
                                 write_vector(fbb, p.stride), write_vector(fbb, p.pad_l),
                                 write_vector(fbb, p.pad_r), write_vector(fbb, p.dilation))
                .Union()};
  }
  Written operator()(const EltwiseParams& p) const {
    return {fb::OpParams::EltwiseParams,
            fb::CreateEltwiseParams(fbb, static_cast<uint8_t>(p.alg), p.alpha, p.beta).Union()};
  }
  Written operator()(const BinaryParams& p) const {
    return {fb::OpParams::BinaryParams,
            fb::CreateBinaryParams(fbb, static_cast<uint8_t>(p.alg)).Union()};
  }
  Written operator()(const SoftmaxParams& p) const {
    return {fb::OpParams::SoftmaxParams, fb::CreateSoftmaxParams(fbb, p.axis).Union()};
  }
  Written operator()(const NormParams& p) const {
    return {fb::OpParams::NormParams, fb::CreateNormParams(fbb, p.eps).Union()};
  }
  Written operator()(const ConcatParams& p) const {
    return {fb::OpParams::ConcatParams, fb::CreateConcatParams(fbb, p.axis).Union()};
  }
  Written operator()(const PermuteParams& p) const {
    return {fb::OpParams::PermuteParams,
            fb::CreatePermuteParams(fbb, write_vector(fbb, p.perm)).Union()};
  }
  Written operator()(const ReduceParams& p) const {
    return {fb::OpParams::ReduceParams,
            fb::CreateReduceParams(fbb, static_cast<uint8_t>(p.alg), write_vector(fbb, p.dims))
                .Union()};
  }
  Written operator()(const SliceParams& p) const {
    return {fb::OpParams::SliceParams, fb::CreateSliceParams(fbb, p.dim, p.start).Union()};
  }
};

// Whether each of a convolution's or a pooling's per-dim vectors holds one value per spatial dim.
template <typename... V>
bool same_rank(size_t r, const V&... v) {
  return ((v.size() == r) && ...);
}

// Checks one op's inputs and parameter values; tensor ids were checked by the caller, and that
// the parameters are of the kind's type by read_params.
bool check_params(const OpDesc& op, size_t op_index, std::string* error) {
  const std::string where = "op " + std::to_string(op_index) + ": ";
  auto need_inputs = [&](size_t min, size_t max) {
    return op.inputs.size() >= min && op.inputs.size() <= max;
  };
  auto required = [&](size_t i) { return i < op.inputs.size() && op.inputs[i] >= 0; };
  switch (op.kind) {
    case OpKind::Conv:
    case OpKind::QuantConv: {
      const bool quant = op.kind == OpKind::QuantConv;
      const ConvParams& c = op.conv();
      if (!need_inputs(quant ? 4 : 3, quant ? 4 : 3) || !required(0) || !required(1) ||
          (quant && !required(3))) {
        return fail(error, where + "convolution needs src, weight, bias and parameters");
      }
      if (quant && (!(op.quant_conv().src.scale > 0) || c.rank() != 2 || c.transposed)) {
        return fail(error, where + "quantized convolution: a 2-D one, with a positive scale");
      }
      const size_t r = c.rank();
      if (r < 1 || r > 3) {
        return fail(error,
                    where + "convolution of " + std::to_string(r) + " spatial dims (1 to 3)");
      }
      if (!same_rank(r, c.pad_l, c.pad_r, c.dilation, c.output_padding)) {
        return fail(error, where +
                               "convolution stride, paddings, dilation and output padding differ "
                               "in length");
      }
      if (c.groups < 1) {
        return fail(error, where + "convolution groups or transposed flag out of range");
      }
      for (size_t i = 0; i < r; ++i) {
        const int64_t stride = c.stride[i], pl = c.pad_l[i], pr = c.pad_r[i];
        const int64_t dil = c.dilation[i], opad = c.output_padding[i];
        // A transposed convolution's right padding is negative where output_padding exceeds it.
        if (stride < 1 || stride > 4096 || pl < 0 || pl > 4096 || pr < -4096 || pr > 4096 ||
            dil < 1 || dil > 4096 || opad < 0 || opad > 4096) {
          return fail(error, where + "convolution stride/padding/dilation out of range");
        }
      }
      break;
    }
    case OpKind::MatMul: {
      const MatMulParams& p = op.matmul();
      if (!need_inputs(3, 3) || !required(0) || !required(1)) {
        return fail(error, where + "matmul needs a, b and bias");
      }
      if (p.quantized && (!(p.a.scale > 0) || !(p.b.scale > 0) ||
                          !int8_zero_point(p.a.zero_point) || !int8_zero_point(p.b.zero_point))) {
        return fail(error, where + "matmul of int8 values needs two scales and zero points");
      }
      break;
    }
    case OpKind::QuantMatMul:
      if (!need_inputs(4, 4) || !required(0) || !required(1) || !required(3) ||
          !(op.quant_matmul().src.scale > 0)) {
        return fail(error, where + "quantized matmul needs a, weight, bias, scales, parameters");
      }
      break;
    case OpKind::GroupQuantMatMul: {
      const GroupQuantMatMulParams& p = op.group_quant_matmul();
      const bool quantize = p.input_quant != InputQuant::None;
      if ((!need_inputs(5, 5) && !need_inputs(7, 7)) || !required(0) || !required(1) ||
          !required(3) || (op.inputs.size() == 7 && (!required(5) || !required(6))) ||
          p.group < 2 || static_cast<uint8_t>(p.input_quant) >= kNumInputQuants ||
          (quantize && (op.inputs.size() != 5 || !(p.eps >= 0))) || (!quantize && p.eps != 0)) {
        return fail(error, where +
                               "grouped quantized matmul needs a, weight, bias, scales, zero "
                               "points and a group size of at least 2");
      }
      break;
    }
    case OpKind::Pool: {
      const PoolParams& p = op.pool();
      const size_t r = p.rank();
      if (!need_inputs(1, 1) || !required(0)) {
        return fail(error, where + "pooling needs src and parameters");
      }
      if (static_cast<uint8_t>(p.alg) >= kNumPoolAlgs || r < 1 || r > 3) {
        return fail(error, where + "pooling parameters out of range");
      }
      if (!same_rank(r, p.stride, p.pad_l, p.pad_r, p.dilation)) {
        return fail(error,
                    where + "pooling kernel, stride, paddings and dilation differ in length");
      }
      for (size_t i = 0; i < r; ++i) {
        for (int64_t v : {p.kernel[i], p.stride[i], p.dilation[i]}) {
          if (v < 1 || v > 4096) {
            return fail(error, where + "pooling kernel/stride/padding out of range");
          }
        }
        for (int64_t v : {p.pad_l[i], p.pad_r[i]}) {
          if (v < 0 || v > 4096) {
            return fail(error, where + "pooling kernel/stride/padding out of range");
          }
        }
      }
      break;
    }
    case OpKind::Eltwise:
      if (!need_inputs(1, 1) || !required(0) ||
          static_cast<uint8_t>(op.eltwise().alg) >= kNumEltwiseAlgs) {
        return fail(error, where + "eltwise parameters out of range");
      }
      break;
    case OpKind::Binary:
      if (!need_inputs(2, 2) || !required(0) || !required(1) ||
          static_cast<uint8_t>(op.binary().alg) >= kNumBinaryAlgs) {
        return fail(error, where + "binary parameters out of range");
      }
      break;
    case OpKind::Softmax:
      if (!need_inputs(1, 1) || !required(0) || op.softmax().axis < 0 ||
          op.softmax().axis >= kMaxCpuRank) {
        return fail(error, where + "softmax parameters out of range");
      }
      break;
    case OpKind::LayerNorm:
      if (!need_inputs(3, 3) || !required(0) || !(op.norm().eps >= 0)) {
        return fail(error, where + "layer norm parameters out of range");
      }
      break;
    case OpKind::BatchNorm:
      if (!need_inputs(5, 5) || !required(0) || !required(3) || !required(4) ||
          !(op.norm().eps >= 0)) {
        return fail(error, where + "batch norm parameters out of range");
      }
      break;
    case OpKind::Concat:
      if (op.inputs.empty() || op.inputs.size() > 1024 || op.concat().axis < 0 ||
          op.concat().axis >= kMaxCpuRank) {
        return fail(error, where + "concat parameters out of range");
      }
      for (int32_t t : op.inputs) {
        if (t < 0) return fail(error, where + "concat input missing");
      }
      break;
    case OpKind::Reshape:
      if (!need_inputs(1, 1) || !required(0)) {
        return fail(error, where + "reshape parameters out of range");
      }
      break;
    case OpKind::Reduce: {
      const ReduceParams& p = op.reduce();
      if (!need_inputs(1, 1) || !required(0) || p.dims.empty() || p.dims.size() > kMaxCpuRank ||
          static_cast<uint8_t>(p.alg) >= kNumReduceAlgs) {
        return fail(error, where + "reduction parameters out of range");
      }
      for (size_t i = 0; i < p.dims.size(); ++i) {
        if (p.dims[i] < 0 || p.dims[i] >= kMaxCpuRank || (i > 0 && p.dims[i] <= p.dims[i - 1])) {
          return fail(error, where + "reduction dims are not distinct ascending dims");
        }
      }
      break;
    }
    case OpKind::Where:
      if (!need_inputs(3, 3) || !required(0) || !required(1) || !required(2)) {
        return fail(error, where + "where needs a condition and two values");
      }
      break;
    case OpKind::Slice:
      if (!need_inputs(1, 1) || !required(0) || op.slice().dim < 0 ||
          op.slice().dim >= kMaxCpuRank || op.slice().start < 0) {
        return fail(error, where + "slice parameters out of range");
      }
      break;
    case OpKind::Permute: {
      const std::vector<int64_t>& perm = op.permute().perm;
      if (!need_inputs(1, 1) || !required(0) || perm.size() > kMaxCpuRank) {
        return fail(error, where + "permute parameters out of range");
      }
      bool seen[kMaxCpuRank] = {};
      for (int64_t p : perm) {
        if (p < 0 || p >= static_cast<int64_t>(perm.size()) || seen[p]) {
          return fail(error, where + "permute is not a permutation");
        }
        seen[p] = true;
      }
      break;
    }
    default:  // a kind appended to OpKind without its parameter check here: refused
      return fail(error, where + "op kind " + std::to_string(static_cast<unsigned>(op.kind)) +
                             " has no parameter check");
  }
  if (!op.post_ops.empty() && op.kind != OpKind::Conv && op.kind != OpKind::MatMul &&
      op.kind != OpKind::Binary && op.kind != OpKind::QuantConv && op.kind != OpKind::QuantMatMul) {
    return fail(error, where + "post-ops on an op that takes none");
  }
  for (const PostOp& p : op.post_ops) {
    if (!p.is_sum && static_cast<uint8_t>(p.alg) >= kNumEltwiseAlgs) {
      return fail(error, where + "post-op algorithm out of range");
    }
  }
  return true;
}

}  // namespace

void params_mismatch(OpKind kind, const char* want) {
  std::fprintf(stderr, "ember cpu backend: an op of kind %u has no %s\n",
               static_cast<unsigned>(kind), want);
  std::abort();
}

int64_t checked_numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0 || d > kMaxNumel) return -1;
    if (d != 0 && n > kMaxNumel / d) return -1;
    n *= d;
  }
  return n;
}

std::vector<uint8_t> serialize(const CpuGraph& g) {
  flatbuffers::FlatBufferBuilder fbb(1024);
  std::vector<flatbuffers::Offset<fb::Weight>> weights;
  for (const WeightRef& w : g.weights) {
    weights.push_back(fb::CreateWeight(fbb, fbb.CreateString(w.key), w.nbytes));
  }
  std::vector<flatbuffers::Offset<fb::Tensor>> tensors;
  for (const TensorDesc& t : g.tensors) {
    tensors.push_back(fb::CreateTensor(fbb, static_cast<uint8_t>(t.kind), t.index,
                                       write_vector(fbb, t.dims), write_vector(fbb, t.dim_order),
                                       t.batch_symbol, static_cast<uint8_t>(t.storage)));
  }
  std::vector<flatbuffers::Offset<fb::Op>> ops;
  for (const OpDesc& op : g.ops) {
    std::vector<flatbuffers::Offset<fb::PostOp>> post_ops;
    for (const PostOp& p : op.post_ops) {
      post_ops.push_back(fb::CreatePostOp(fbb, p.is_sum ? 1 : 0, p.tensor,
                                          static_cast<uint8_t>(p.alg), p.alpha, p.beta));
    }
    // Every field of the parameters is written, defaults too: a float keeps its every bit (a
    // field equal to its default is otherwise left out, and -0 equals the default 0).
    fbb.ForceDefaults(true);
    const auto [params_type, params] = std::visit(ParamsWriter{fbb}, op.params);
    fbb.ForceDefaults(false);
    ops.push_back(fb::CreateOp(fbb, static_cast<uint8_t>(op.kind), write_vector(fbb, op.inputs),
                               op.output, write_vector(fbb, post_ops), params_type, params));
  }
  std::vector<flatbuffers::Offset<fb::Output>> outputs;
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    const std::vector<uint8_t> contiguous;
    const std::vector<uint8_t>& order =
        i < g.output_dim_orders.size() ? g.output_dim_orders[i] : contiguous;
    outputs.push_back(fb::CreateOutput(fbb, g.outputs[i], write_vector(fbb, order)));
  }
  const auto root =
      fb::CreateGraph(fbb, kVersion, static_cast<uint8_t>(g.precision), g.num_inputs, g.num_symbols,
                      write_vector(fbb, weights), write_vector(fbb, tensors),
                      write_vector(fbb, ops), write_vector(fbb, outputs));
  fb::FinishSizePrefixedGraphBuffer(fbb, root);
  const uint8_t* p = fbb.GetBufferPointer();
  return std::vector<uint8_t>(p, p + fbb.GetSize());
}

std::optional<CpuGraph> parse(std::span<const uint8_t> blob, std::string* error) {
  auto refuse = [&](std::string why) -> std::optional<CpuGraph> {
    *error = std::move(why);
    return std::nullopt;
  };
  if (blob.size() >= sizeof kOldMagic &&
      std::memcmp(blob.data(), kOldMagic, sizeof kOldMagic) == 0) {
    return refuse("a cpu backend blob of a format before version " + std::to_string(kVersion) +
                  " (EMBRCPU1): compile the program again");
  }
  if (blob.size() < kMinBlob || blob.size() >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return refuse("not a cpu backend blob (" + std::to_string(blob.size()) + " bytes)");
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
    return refuse(
        "not a cpu backend blob (identifier \"" +
        printable(data + 2 * sizeof(flatbuffers::uoffset_t), flatbuffers::kFileIdentifierLength) +
        "\", not \"" + fb::GraphIdentifier() + "\")");
  }
  const size_t size_prefix = flatbuffers::ReadScalar<flatbuffers::uoffset_t>(data);
  if (size_prefix != blob.size() - sizeof(flatbuffers::uoffset_t)) {
    return refuse("truncated or padded blob: its size prefix says " + std::to_string(size_prefix) +
                  " bytes follow it, " +
                  std::to_string(blob.size() - sizeof(flatbuffers::uoffset_t)) + " do");
  }
  flatbuffers::Verifier verifier(data, blob.size());
  if (!fb::VerifySizePrefixedGraphBuffer(verifier)) {
    return refuse(
        "not a valid flatbuffer (graph/cpu_graph.fbs): an offset, table, vector or string lies "
        "outside "
        "the blob or is misaligned");
  }
  const fb::Graph* root = fb::GetSizePrefixedGraph(data);
  if (!longs_aligned(*root)) {
    return refuse(
        "not a valid flatbuffer (graph/cpu_graph.fbs): a vector of 64-bit integers is misaligned");
  }

  CpuGraph g;
  if (root->version() != kVersion) {
    return refuse("blob version " + std::to_string(root->version()) + ", this runtime reads " +
                  std::to_string(kVersion) + ": compile the program again");
  }
  if (root->precision() >= kNumPrecisions) return refuse("precision out of range");
  g.precision = static_cast<Precision>(root->precision());
  g.num_inputs = root->num_inputs();
  g.num_symbols = root->num_symbols();
  if (g.num_inputs > kMaxInputs || g.num_symbols > g.num_inputs) {
    return refuse("bad header (input or symbol count)");
  }

  if (const auto* weights = root->weights()) {
    g.weights.resize(weights->size());
    for (uint32_t i = 0; i < weights->size(); ++i) {
      const fb::Weight* fw = weights->Get(i);
      WeightRef& w = g.weights[i];
      const std::string where = "weight " + std::to_string(i) + ": ";
      if (const flatbuffers::String* key = fw->key()) {
        if (key->size() > kMaxKeyBytes) return refuse(where + "oversized key");
        w.key.assign(key->c_str(), key->size());
      }
      w.nbytes = fw->nbytes();
      if (w.nbytes > static_cast<uint64_t>(kMaxNumel) * 4) return refuse(where + "oversized");
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
      return refuse(where + "rank above " + std::to_string(kMaxCpuRank));
    }
    t.index = ft->index();
    t.batch_symbol = ft->batch_symbol();
    const uint8_t kind = ft->kind(), storage = ft->storage();
    if (kind >= kNumTensorKinds) return refuse(where + "kind out of range");
    t.kind = static_cast<TensorKind>(kind);
    if (storage >= kNumWeightStorages) return refuse(where + "weight storage out of range");
    t.storage = static_cast<WeightStorage>(storage);
    if (t.integer() && t.kind != TensorKind::Weight &&
        !(t.storage == WeightStorage::Bool && t.kind == TensorKind::Input)) {
      return refuse(where + "an integer tensor that is not a weight");
    }
    const int64_t numel = checked_numel(t.dims);
    if (numel < 0 || !valid_dim_order(t)) return refuse(where + "a bad size or dim order");
    if (t.kind == TensorKind::Input && t.index >= g.num_inputs) {
      return refuse(where + "names a missing input");
    }
    if (t.batch_symbol < -1 || t.batch_symbol >= static_cast<int64_t>(g.num_symbols) ||
        (t.batch_symbol >= 0 &&
         (t.kind == TensorKind::Weight || t.dims.empty() || t.dims[0] < 1))) {
      return refuse(where + "a bad batch symbol");
    }
    if (t.storage == WeightStorage::Int4 &&
        (t.dims.empty() || t.dims.back() % 2 != 0 || !t.dim_order.empty())) {
      return refuse(where + "an int4 weight whose last dim is odd or not innermost");
    }
    const uint64_t nbytes = t.storage == WeightStorage::Int4 ? static_cast<uint64_t>(numel) / 2
                            : t.storage == WeightStorage::Int8 || t.storage == WeightStorage::Bool
                                ? static_cast<uint64_t>(numel)
                                : static_cast<uint64_t>(numel) * 4;
    if (t.kind == TensorKind::Weight &&
        (t.index >= g.weights.size() || g.weights[t.index].nbytes != nbytes)) {
      return refuse(where + "names a missing weight or its size disagrees");
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
      return refuse(where + "more than " + std::to_string(kMaxOpInputs) + " inputs");
    }
    op.output = fop->output();
    const auto* post_ops = fop->post_ops();
    const uint32_t num_post = post_ops != nullptr ? post_ops->size() : 0;
    if (num_post > kMaxPostOps) {
      return refuse(where + "more than " + std::to_string(kMaxPostOps) + " post-ops");
    }
    op.post_ops.resize(num_post);
    for (uint32_t k = 0; k < num_post; ++k) {
      const fb::PostOp* fp = post_ops->Get(k);
      PostOp& p = op.post_ops[k];
      if (fp->is_sum() > 1 || fp->alg() >= kNumEltwiseAlgs) {
        return refuse(where + "post-op out of range");
      }
      p.is_sum = fp->is_sum() == 1;
      p.tensor = fp->tensor();
      p.alg = static_cast<EltwiseAlg>(fp->alg());
      p.alpha = fp->alpha();
      p.beta = fp->beta();
      if (p.is_sum && !valid_use(p.tensor)) {
        return refuse(where + "sum post-op reads an undefined tensor");
      }
    }
    if (fop->kind() >= kNumOpKinds) return refuse(where + "kind out of range");
    op.kind = static_cast<OpKind>(fop->kind());
    if (!read_params(*fop, op.kind, where, &op.params, error)) return std::nullopt;
    for (int32_t in : op.inputs) {
      if (in != -1 && !valid_use(in)) return refuse(where + "reads an undefined tensor");
    }
    if (op.output < 0 || static_cast<uint32_t>(op.output) >= num_tensors || defined[op.output]) {
      return refuse(where + "output is not a fresh intermediate tensor");
    }
    if (!check_params(op, i, error)) return std::nullopt;
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
        return refuse(where + "reads integer weights as floats, or floats as integers");
      }
    }
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum && g.tensors[p.tensor].integer()) {
        return refuse(where + "sums integer weights");
      }
    }
    defined[op.output] = 1;
  }

  const auto* outputs = root->outputs();
  const uint32_t num_outputs = outputs != nullptr ? outputs->size() : 0;
  if (num_outputs > kMaxInputs)
    return refuse("more than " + std::to_string(kMaxInputs) + " outputs");
  g.outputs.resize(num_outputs);
  g.output_dim_orders.resize(num_outputs);
  for (uint32_t i = 0; i < num_outputs; ++i) {
    const fb::Output* fo = outputs->Get(i);
    const std::string where = "output " + std::to_string(i) + ": ";
    g.outputs[i] = fo->tensor();
    if (!copy_vector(fo->dim_order(), kMaxCpuRank, &g.output_dim_orders[i])) {
      return refuse(where + "a bad dim order");
    }
    if (!valid_use(g.outputs[i]) || g.tensors[g.outputs[i]].integer()) {
      return refuse(where + "names an undefined tensor or integer weights");
    }
    TensorDesc view{TensorKind::Intermediate, 0, g.tensors[g.outputs[i]].dims,
                    g.output_dim_orders[i]};
    if (!valid_dim_order(view)) return refuse(where + "a bad dim order");
  }

  std::vector<uint8_t> bound(g.num_symbols, 0);
  for (const TensorDesc& t : g.tensors) {
    if (t.kind == TensorKind::Input && t.batch_symbol >= 0) bound[t.batch_symbol] = 1;
  }
  if (std::find(bound.begin(), bound.end(), 0) != bound.end()) {
    return refuse("a batch symbol is the batch of no input");
  }
  return g;
}

CpuGraph with_batch_sizes(const CpuGraph& graph, std::span<const int64_t> values) {
  CpuGraph g = graph;
  for (TensorDesc& t : g.tensors) {
    if (t.batch_symbol >= 0) t.dims[0] = values[static_cast<size_t>(t.batch_symbol)];
  }
  return g;
}

}  // namespace ember::cpu
