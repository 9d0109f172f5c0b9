#include "backends/cpu/graph/graph_format.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "ember/backends/cpu/cpu_graph_generated.h"

namespace ember::cpu {
namespace {

// 2: dynamic batch symbols; 3: quantized convolutions; 4: grouped int8/int4 linears; 5: a
// flatbuffer (graph/cpu_graph.fbs) instead of the hand-written layout that began with "EMBRCPU1".
constexpr uint32_t kVersion = 5;
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
constexpr size_t kMaxOpInputs = 1024, kMaxOpInts = 64, kMaxOpFloats = 16, kMaxPostOps = 16;
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

bool longs_aligned(const fb::Graph& root) {
  if (const auto* tensors = root.tensors()) {
    for (const fb::Tensor* t : *tensors) {
      if (!aligned(t->dims())) return false;
    }
  }
  if (const auto* ops = root.ops()) {
    for (const fb::Op* op : *ops) {
      if (!aligned(op->ints())) return false;
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

// Checks one op's parameter counts and values; tensor ids were checked by the caller.
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
      if (!need_inputs(quant ? 4 : 3, quant ? 4 : 3) || !required(0) || !required(1) ||
          (quant && !required(3)) || op.ints.size() < 3) {
        return fail(error, where + "convolution needs src, weight, bias and parameters");
      }
      if (quant &&
          (op.floats.size() != 2 || !(op.floats[0] > 0) || op.ints[0] != 2 || op.ints[2] != 0)) {
        return fail(error, where + "quantized convolution: a 2-D one, with a positive scale");
      }
      const int64_t r = op.ints[0];
      if (r < 1 || r > 3 || op.ints.size() != static_cast<size_t>(3 + 5 * r)) {
        return fail(error, where + "convolution parameters have the wrong count");
      }
      if (op.ints[1] < 1 || (op.ints[2] != 0 && op.ints[2] != 1)) {
        return fail(error, where + "convolution groups or transposed flag out of range");
      }
      for (int64_t i = 0; i < r; ++i) {
        const int64_t stride = op.ints[3 + i], pl = op.ints[3 + r + i], pr = op.ints[3 + 2 * r + i];
        const int64_t dil = op.ints[3 + 3 * r + i], opad = op.ints[3 + 4 * r + i];
        // A transposed convolution's right padding is negative where output_padding exceeds it.
        if (stride < 1 || stride > 4096 || pl < 0 || pl > 4096 || pr < -4096 || pr > 4096 ||
            dil < 1 || dil > 4096 || opad < 0 || opad > 4096) {
          return fail(error, where + "convolution stride/padding/dilation out of range");
        }
      }
      break;
    }
    case OpKind::MatMul:
      if (!need_inputs(3, 3) || !required(0) || !required(1) || !op.ints.empty()) {
        return fail(error, where + "matmul needs a, b and bias");
      }
      if (!op.floats.empty() &&
          (op.floats.size() != 4 || !(op.floats[0] > 0) || !(op.floats[2] > 0) ||
           !int8_zero_point(op.floats[1]) || !int8_zero_point(op.floats[3]))) {
        return fail(error, where + "matmul of int8 values needs two scales and zero points");
      }
      break;
    case OpKind::QuantMatMul:
      if (!need_inputs(4, 4) || !required(0) || !required(1) || !required(3) || !op.ints.empty() ||
          op.floats.size() != 2 || !(op.floats[0] > 0)) {
        return fail(error, where + "quantized matmul needs a, weight, bias, scales, parameters");
      }
      break;
    case OpKind::GroupQuantMatMul:
      if ((!need_inputs(5, 5) && !need_inputs(7, 7)) || !required(0) || !required(1) ||
          !required(3) || (op.inputs.size() == 7 && (!required(5) || !required(6))) ||
          op.ints.empty() || op.ints.size() > 2 || op.ints[0] < 2 ||
          (op.ints.size() == 2 &&
           ((op.ints[1] != static_cast<int64_t>(InputQuant::PerToken) &&
             op.ints[1] != static_cast<int64_t>(InputQuant::PerTensor)) ||
            op.inputs.size() != 5 || op.floats.size() != 1 || !(op.floats[0] >= 0))) ||
          (op.ints.size() == 1 && !op.floats.empty())) {
        return fail(error, where +
                               "grouped quantized matmul needs a, weight, bias, scales, zero "
                               "points and a group size of at least 2");
      }
      break;
    case OpKind::Pool: {
      if (!need_inputs(1, 1) || !required(0) || op.ints.size() < 2) {
        return fail(error, where + "pooling needs src and parameters");
      }
      const int64_t r = op.ints[1];
      if (op.ints[0] < 0 || op.ints[0] >= kNumPoolAlgs || r < 1 || r > 3 ||
          op.ints.size() != static_cast<size_t>(2 + 5 * r)) {
        return fail(error, where + "pooling parameters out of range");
      }
      for (size_t i = 2; i < op.ints.size(); ++i) {
        const bool is_pad =
            i >= static_cast<size_t>(2 + 2 * r) && i < static_cast<size_t>(2 + 4 * r);
        if (op.ints[i] < (is_pad ? 0 : 1) || op.ints[i] > 4096) {
          return fail(error, where + "pooling kernel/stride/padding out of range");
        }
      }
      break;
    }
    case OpKind::Eltwise:
      if (!need_inputs(1, 1) || !required(0) || op.ints.size() != 1 || op.floats.size() != 2 ||
          op.ints[0] < 0 || op.ints[0] >= kNumEltwiseAlgs) {
        return fail(error, where + "eltwise parameters out of range");
      }
      break;
    case OpKind::Binary:
      if (!need_inputs(2, 2) || !required(0) || !required(1) || op.ints.size() != 1 ||
          op.ints[0] < 0 || op.ints[0] >= kNumBinaryAlgs) {
        return fail(error, where + "binary parameters out of range");
      }
      break;
    case OpKind::Softmax:
      if (!need_inputs(1, 1) || !required(0) || op.ints.size() != 1 || op.ints[0] < 0 ||
          op.ints[0] >= kMaxCpuRank) {
        return fail(error, where + "softmax parameters out of range");
      }
      break;
    case OpKind::LayerNorm:
      if (!need_inputs(3, 3) || !required(0) || op.floats.size() != 1 || !(op.floats[0] >= 0)) {
        return fail(error, where + "layer norm parameters out of range");
      }
      break;
    case OpKind::BatchNorm:
      if (!need_inputs(5, 5) || !required(0) || !required(3) || !required(4) ||
          op.floats.size() != 1 || !(op.floats[0] >= 0)) {
        return fail(error, where + "batch norm parameters out of range");
      }
      break;
    case OpKind::Concat:
      if (op.inputs.empty() || op.inputs.size() > 1024 || op.ints.size() != 1 || op.ints[0] < 0 ||
          op.ints[0] >= kMaxCpuRank) {
        return fail(error, where + "concat parameters out of range");
      }
      for (int32_t t : op.inputs) {
        if (t < 0) return fail(error, where + "concat input missing");
      }
      break;
    case OpKind::Reshape:
      if (!need_inputs(1, 1) || !required(0) || !op.ints.empty()) {
        return fail(error, where + "reshape parameters out of range");
      }
      break;
    case OpKind::Reduce: {
      if (!need_inputs(1, 1) || !required(0) || op.ints.size() < 2 ||
          op.ints.size() > 1 + kMaxCpuRank || op.ints[0] < 0 || op.ints[0] >= kNumReduceAlgs) {
        return fail(error, where + "reduction parameters out of range");
      }
      for (size_t i = 1; i < op.ints.size(); ++i) {
        if (op.ints[i] < 0 || op.ints[i] >= kMaxCpuRank ||
            (i > 1 && op.ints[i] <= op.ints[i - 1])) {
          return fail(error, where + "reduction dims are not distinct ascending dims");
        }
      }
      break;
    }
    case OpKind::Where:
      if (!need_inputs(3, 3) || !required(0) || !required(1) || !required(2) || !op.ints.empty() ||
          !op.floats.empty()) {
        return fail(error, where + "where needs a condition and two values");
      }
      break;
    case OpKind::Slice:
      if (!need_inputs(1, 1) || !required(0) || op.ints.size() != 2 || op.ints[0] < 0 ||
          op.ints[0] >= kMaxCpuRank || op.ints[1] < 0) {
        return fail(error, where + "slice parameters out of range");
      }
      break;
    case OpKind::Permute: {
      if (!need_inputs(1, 1) || !required(0) || op.ints.size() > kMaxCpuRank) {
        return fail(error, where + "permute parameters out of range");
      }
      bool seen[kMaxCpuRank] = {};
      for (int64_t p : op.ints) {
        if (p < 0 || p >= static_cast<int64_t>(op.ints.size()) || seen[p]) {
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
    ops.push_back(fb::CreateOp(fbb, static_cast<uint8_t>(op.kind), write_vector(fbb, op.inputs),
                               op.output, write_vector(fbb, op.ints), write_vector(fbb, op.floats),
                               write_vector(fbb, post_ops)));
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
    if (!copy_vector(fop->ints(), kMaxOpInts, &op.ints) ||
        !copy_vector(fop->floats(), kMaxOpFloats, &op.floats)) {
      return refuse(where + "oversized parameters");
    }
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
