#include "backends/cpu/graph_format.h"

#include <algorithm>
#include <cstring>

namespace ember::cpu {
namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'R', 'C', 'P', 'U', '1'};
constexpr uint32_t kVersion = 4;  // 2: dynamic batch symbols; 3: quantized convolutions;
                                  // 4: grouped int8/int4 linears
constexpr int64_t kMaxNumel = int64_t{1} << 40;

class Writer {
 public:
  void bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  template <typename T>
  void pod(T v) {
    bytes(&v, sizeof v);
  }
  template <typename T>
  void vec(const std::vector<T>& v) {
    pod(static_cast<uint32_t>(v.size()));
    if (!v.empty()) bytes(v.data(), v.size() * sizeof(T));
  }
  std::vector<uint8_t> take() { return std::move(out_); }

 private:
  std::vector<uint8_t> out_;
};

// Every read checks the bytes left; the first failure sticks, so callers check once at the end
// of a record (and before using a count).
class Reader {
 public:
  explicit Reader(std::span<const uint8_t> in) : in_(in) {}
  bool ok() const { return ok_; }
  size_t left() const { return in_.size() - pos_; }
  bool bytes(void* p, size_t n) {
    if (!ok_ || n > left()) return ok_ = false;
    if (n != 0) std::memcpy(p, in_.data() + pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  T pod() {
    T v{};
    bytes(&v, sizeof v);
    return v;
  }
  template <typename T>
  bool vec(std::vector<T>* v, uint32_t max_count) {
    const auto n = pod<uint32_t>();
    if (!ok_ || n > max_count || static_cast<uint64_t>(n) * sizeof(T) > left()) return ok_ = false;
    v->resize(n);
    return bytes(v->data(), n * sizeof(T));
  }

 private:
  std::span<const uint8_t> in_;
  size_t pos_ = 0;
  bool ok_ = true;
};

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
          (op.ints.size() == 2 && (op.ints[1] != 1 || op.inputs.size() != 5 ||
                                   op.floats.size() != 1 || !(op.floats[0] >= 0))) ||
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
  Writer w;
  w.bytes(kMagic, sizeof kMagic);
  w.pod(kVersion);
  w.pod(static_cast<uint8_t>(g.precision));
  w.pod(g.num_inputs);
  w.pod(g.num_symbols);
  w.pod(static_cast<uint32_t>(g.weights.size()));
  for (const WeightRef& r : g.weights) {
    std::vector<char> key(r.key.begin(), r.key.end());
    w.vec(key);
    w.pod(r.nbytes);
  }
  w.pod(static_cast<uint32_t>(g.tensors.size()));
  for (const TensorDesc& t : g.tensors) {
    w.pod(static_cast<uint8_t>(t.kind));
    w.pod(t.index);
    w.vec(t.dims);
    w.vec(t.dim_order);
    w.pod(t.batch_symbol);
    w.pod(static_cast<uint8_t>(t.storage));
  }
  w.pod(static_cast<uint32_t>(g.ops.size()));
  for (const OpDesc& op : g.ops) {
    w.pod(static_cast<uint8_t>(op.kind));
    w.vec(op.inputs);
    w.pod(op.output);
    w.vec(op.ints);
    w.vec(op.floats);
    w.pod(static_cast<uint32_t>(op.post_ops.size()));
    for (const PostOp& p : op.post_ops) {
      w.pod(static_cast<uint8_t>(p.is_sum));
      w.pod(p.tensor);
      w.pod(static_cast<uint8_t>(p.alg));
      w.pod(p.alpha);
      w.pod(p.beta);
    }
  }
  w.vec(g.outputs);
  for (const auto& order : g.output_dim_orders) w.vec(order);
  return w.take();
}

std::optional<CpuGraph> parse(std::span<const uint8_t> blob, std::string* error) {
  Reader r(blob);
  CpuGraph g;
  char magic[sizeof kMagic];
  if (!r.bytes(magic, sizeof magic) || std::memcmp(magic, kMagic, sizeof magic) != 0) {
    fail(error, "not a cpu backend blob (bad magic)");
    return std::nullopt;
  }
  const auto version = r.pod<uint32_t>();
  const auto precision = r.pod<uint8_t>();
  g.num_inputs = r.pod<uint32_t>();
  g.num_symbols = r.pod<uint32_t>();
  if (!r.ok() || version != kVersion || precision > 1 || g.num_inputs > 65536 ||
      g.num_symbols > g.num_inputs) {
    fail(error, "bad header (version, precision, input or symbol count)");
    return std::nullopt;
  }
  g.precision = static_cast<Precision>(precision);
  auto truncated = [&](const char* what) {
    fail(error, std::string("truncated or oversized ") + what);
    return std::nullopt;
  };
  const auto num_weights = r.pod<uint32_t>();
  if (!r.ok() || num_weights > r.left() / 12) return truncated("weight table");
  g.weights.resize(num_weights);
  for (WeightRef& w : g.weights) {
    std::vector<char> key;
    if (!r.vec(&key, 4096)) return truncated("weight key");
    w.key.assign(key.begin(), key.end());
    w.nbytes = r.pod<uint64_t>();
    if (!r.ok() || w.nbytes > static_cast<uint64_t>(kMaxNumel) * 4) return truncated("weight");
  }
  const auto num_tensors = r.pod<uint32_t>();
  if (!r.ok() || num_tensors > r.left() / 18) return truncated("tensor table");
  g.tensors.resize(num_tensors);
  for (TensorDesc& t : g.tensors) {
    const auto kind = r.pod<uint8_t>();
    t.index = r.pod<uint32_t>();
    if (!r.vec(&t.dims, kMaxCpuRank) || !r.vec(&t.dim_order, kMaxCpuRank)) {
      return truncated("tensor");
    }
    t.batch_symbol = r.pod<int32_t>();
    const auto storage = r.pod<uint8_t>();
    if (!r.ok()) return truncated("tensor");
    if (storage > 2 || (storage != 0 && kind != static_cast<uint8_t>(TensorKind::Weight))) {
      fail(error, "an integer tensor that is not a weight");
      return std::nullopt;
    }
    t.storage = static_cast<WeightStorage>(storage);
    if (kind > 2) {
      fail(error, "tensor kind out of range");
      return std::nullopt;
    }
    t.kind = static_cast<TensorKind>(kind);
    const int64_t numel = checked_numel(t.dims);
    if (numel < 0 || !valid_dim_order(t)) {
      fail(error, "tensor with a bad size or dim order");
      return std::nullopt;
    }
    if (t.kind == TensorKind::Input && t.index >= g.num_inputs) {
      fail(error, "tensor names a missing input");
      return std::nullopt;
    }
    if (t.batch_symbol < -1 || t.batch_symbol >= static_cast<int64_t>(g.num_symbols) ||
        (t.batch_symbol >= 0 &&
         (t.kind == TensorKind::Weight || t.dims.empty() || t.dims[0] < 1))) {
      fail(error, "tensor with a bad batch symbol");
      return std::nullopt;
    }
    const bool odd_int4 = t.storage == WeightStorage::Int4 &&
                          (t.dims.empty() || t.dims.back() % 2 != 0 || !t.dim_order.empty());
    const uint64_t nbytes = t.storage == WeightStorage::Int4   ? static_cast<uint64_t>(numel) / 2
                            : t.storage == WeightStorage::Int8 ? static_cast<uint64_t>(numel)
                                                               : static_cast<uint64_t>(numel) * 4;
    if (odd_int4) {
      fail(error, "an int4 weight whose last dim is odd or not innermost");
      return std::nullopt;
    }
    if (t.kind == TensorKind::Weight &&
        (t.index >= g.weights.size() || g.weights[t.index].nbytes != nbytes)) {
      fail(error, "tensor names a missing weight or its size disagrees");
      return std::nullopt;
    }
  }
  const auto num_ops = r.pod<uint32_t>();
  if (!r.ok() || num_ops > r.left() / 21) return truncated("op table");
  g.ops.resize(num_ops);
  // defined[t]: tensor t has a value when the op being read runs.
  std::vector<uint8_t> defined(num_tensors, 0);
  for (size_t i = 0; i < num_tensors; ++i) {
    defined[i] = g.tensors[i].kind != TensorKind::Intermediate;
  }
  auto valid_use = [&](int32_t id) {
    return id >= 0 && static_cast<uint32_t>(id) < num_tensors && defined[id];
  };
  for (size_t i = 0; i < num_ops; ++i) {
    OpDesc& op = g.ops[i];
    const auto kind = r.pod<uint8_t>();
    if (!r.vec(&op.inputs, 1024)) return truncated("op inputs");
    op.output = r.pod<int32_t>();
    if (!r.vec(&op.ints, 64) || !r.vec(&op.floats, 16)) return truncated("op parameters");
    const auto num_post = r.pod<uint32_t>();
    if (!r.ok() || num_post > 16) return truncated("post-ops");
    op.post_ops.resize(num_post);
    for (PostOp& p : op.post_ops) {
      const auto is_sum = r.pod<uint8_t>();
      p.tensor = r.pod<int32_t>();
      const auto alg = r.pod<uint8_t>();
      p.alpha = r.pod<float>();
      p.beta = r.pod<float>();
      if (!r.ok()) return truncated("post-op");
      if (is_sum > 1 || alg >= kNumEltwiseAlgs) {
        fail(error, "op " + std::to_string(i) + ": post-op out of range");
        return std::nullopt;
      }
      p.is_sum = is_sum == 1;
      p.alg = static_cast<EltwiseAlg>(alg);
      if (p.is_sum && !valid_use(p.tensor)) {
        fail(error, "op " + std::to_string(i) + ": sum post-op reads an undefined tensor");
        return std::nullopt;
      }
    }
    if (kind >= kNumOpKinds) {
      fail(error, "op " + std::to_string(i) + ": kind out of range");
      return std::nullopt;
    }
    op.kind = static_cast<OpKind>(kind);
    for (int32_t in : op.inputs) {
      if (in != -1 && !valid_use(in)) {
        fail(error, "op " + std::to_string(i) + ": reads an undefined tensor");
        return std::nullopt;
      }
    }
    if (op.output < 0 || static_cast<uint32_t>(op.output) >= num_tensors || defined[op.output]) {
      fail(error, "op " + std::to_string(i) + ": output is not a fresh intermediate tensor");
      return std::nullopt;
    }
    if (!check_params(op, i, error)) return std::nullopt;
    for (size_t k = 0; k < op.inputs.size(); ++k) {
      const WeightStorage s =
          op.inputs[k] >= 0 ? g.tensors[op.inputs[k]].storage : WeightStorage::Float32;
      const bool int8_weight =
          k == 1 && (op.kind == OpKind::QuantConv || op.kind == OpKind::QuantMatMul ||
                     op.kind == OpKind::GroupQuantMatMul);
      const bool int4_weight = k == 1 && op.kind == OpKind::GroupQuantMatMul;
      if ((s == WeightStorage::Int8 && !int8_weight) ||
          (s == WeightStorage::Int4 && !int4_weight) ||
          (k == 1 && op.kind == OpKind::GroupQuantMatMul && s == WeightStorage::Float32)) {
        fail(error, "op " + std::to_string(i) +
                        ": reads integer weights as floats, or floats as "
                        "integers");
        return std::nullopt;
      }
    }
    for (const PostOp& p : op.post_ops) {
      if (p.is_sum && g.tensors[p.tensor].integer()) {
        fail(error, "op " + std::to_string(i) + ": sums integer weights");
        return std::nullopt;
      }
    }
    defined[op.output] = 1;
  }
  if (!r.vec(&g.outputs, 65536)) return truncated("output list");
  g.output_dim_orders.resize(g.outputs.size());
  for (size_t i = 0; i < g.outputs.size(); ++i) {
    if (!r.vec(&g.output_dim_orders[i], kMaxCpuRank)) return truncated("output dim order");
    if (!valid_use(g.outputs[i]) || g.tensors[g.outputs[i]].integer()) {
      fail(error, "an output names an undefined tensor or integer weights");
      return std::nullopt;
    }
    TensorDesc view{TensorKind::Intermediate, 0, g.tensors[g.outputs[i]].dims,
                    g.output_dim_orders[i]};
    if (!valid_dim_order(view)) {
      fail(error, "an output has a bad dim order");
      return std::nullopt;
    }
  }
  if (r.left() != 0) {
    fail(error, "trailing bytes after the graph");
    return std::nullopt;
  }
  std::vector<uint8_t> bound(g.num_symbols, 0);
  for (const TensorDesc& t : g.tensors) {
    if (t.kind == TensorKind::Input && t.batch_symbol >= 0) bound[t.batch_symbol] = 1;
  }
  if (std::find(bound.begin(), bound.end(), 0) != bound.end()) {
    fail(error, "a batch symbol is the batch of no input");
    return std::nullopt;
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
