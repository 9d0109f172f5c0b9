// The Translator's engine tensors (translate_internal.h): intermediates and the ops that write
// them, constants as weights (re-described, or bytes made here), and the permutations under which
// XNNPACK values are held.
#include "backends/xnnpack/translate_internal.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/core/half.h"

namespace ember::xnn::detail {

int32_t Translator::add_tensor(TensorDesc t) {
  out_.graph.tensors.push_back(std::move(t));
  return static_cast<int32_t>(out_.graph.tensors.size() - 1);
}

int32_t Translator::intermediate(std::vector<int64_t> dims) {
  TensorDesc t;
  t.kind = TensorKind::Intermediate;
  t.dims = std::move(dims);
  return add_tensor(std::move(t));
}

int32_t Translator::emit(OpKind kind, std::vector<int32_t> inputs, cpu::OpParams params,
                         std::vector<int64_t> dims, std::vector<cpu::PostOp> post) {
  OpDesc d;
  d.kind = kind;
  d.inputs = std::move(inputs);
  d.params = std::move(params);
  d.output = intermediate(dims);
  const bool fused = takes_post_ops(kind);
  if (fused) d.post_ops = std::move(post);
  const int32_t t = d.output;
  out_.graph.ops.push_back(std::move(d));
  return fused ? t : apply_post_ops(t, post);
}

Result<int32_t> Translator::constant(const Value& v) {
  if (!is_float(v)) {
    return refuse("constant value %u is %s; this node takes float (fp32, fp16, bf16) constants",
                  v.id, datatype_name(v.dtype));
  }
  EMBER_TRY(check_rank(v, "constant"));
  const int64_t n = numel(v.dims);
  const Constant& c = p_.constants[v.constant];
  const uint64_t element = v.dtype == Datatype::Fp32 ? 4 : 2;
  if (static_cast<uint64_t>(n) * element != c.size) {
    return refuse("constant value %u has %lld elements but %llu bytes", v.id,
                  static_cast<long long>(n), static_cast<unsigned long long>(c.size));
  }
  if (v.dtype != Datatype::Fp32) {
    EMBER_ASSIGN_OR_RETURN(const std::vector<float> wide, float_values(v));
    return owned_floats("constant", wide, v.dims);
  }
  return constant_weight(v, cpu::WeightStorage::Float32);
}

Result<int32_t> Translator::int8_constant(const Value& v, const Perm& want) {
  EMBER_TRY(check_rank(v, "constant"));
  const uint64_t n = static_cast<uint64_t>(numel(v.dims));
  const Constant& c = p_.constants[v.constant];
  if (n != c.size) {
    return refuse("constant value %u (%s, %s) has %llu bytes, expected %llu", v.id,
                  datatype_name(v.dtype), dims_text(v.dims).c_str(),
                  static_cast<unsigned long long>(c.size), static_cast<unsigned long long>(n));
  }
  Mapped& m = mapped_[v.id];
  if (m.perm.empty()) {
    m.tensor = constant_weight(v, cpu::WeightStorage::Int8);
    m.perm = identity(v.dims.size());
  }
  return held(v.id, want);
}

int32_t Translator::constant_weight(const Value& v, cpu::WeightStorage storage) {
  const Constant& c = p_.constants[v.constant];
  std::string key;
  if (!c.named_key.empty()) {
    key = c.named_key;
  } else {
    key = "xnnpack/constant/" + std::to_string(v.constant);
    if (c.is_inline) {
      out_.weights->add_owned(key, c.inline_bytes);
    } else {
      out_.weights->add_view(key, p_.constant_data.subspan(c.offset, c.size));
    }
  }
  cpu::WeightRef ref{key, c.size};
  out_.graph.weights.push_back(ref);
  TensorDesc t;
  t.kind = TensorKind::Weight;
  t.index = static_cast<uint32_t>(out_.graph.weights.size() - 1);
  t.dims = v.dims;
  t.storage = storage;
  return add_tensor(std::move(t));
}

Result<std::vector<float>> Translator::float_values(const Value& v) {
  if (!is_float(v) || v.constant == 0) {
    return refuse("value %u is not a float (fp32, fp16, bf16) constant", v.id);
  }
  const bool fp32 = v.dtype == Datatype::Fp32;
  EMBER_ASSIGN_OR_RETURN(const std::vector<uint8_t> bytes, constant_bytes(v, fp32 ? 4 : 2));
  std::vector<float> out(static_cast<size_t>(numel(v.dims)));
  if (fp32) {
    if (!out.empty()) std::memcpy(out.data(), bytes.data(), out.size() * 4);
    return out;
  }
  // The engine computes in float32: the fp16 or bf16 constant widened once, exactly.
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 2 * i, 2);
    out[i] = v.dtype == Datatype::Fp16 ? static_cast<float>(Half::from_bits(bits))
                                       : static_cast<float>(BFloat16::from_bits(bits));
  }
  return out;
}

Result<int32_t> Translator::as_perm(uint32_t id, const Perm& want) {
  Mapped& m = mapped_[id];
  if (m.perm.empty()) {
    const Value& v = value(id);
    if (v.constant == 0) return refuse("value %u is read before it is written", id);
    EMBER_ASSIGN_OR_RETURN(m.tensor, constant(v));
    m.perm = identity(v.dims.size());
  }
  if (m.perm == want) return m.tensor;
  if (m.perm.size() != want.size()) return refuse("value %u: rank mismatch", id);
  const size_t r = want.size();
  // The new tensor's dim j is XNNPACK's dim k with want[k] = j, which is the old tensor's dim
  // m.perm[k]: a Permute whose output dim j is input dim q[j].
  std::vector<int64_t> q(r);
  for (size_t k = 0; k < r; ++k) q[want[k]] = m.perm[k];
  const TensorDesc src = out_.graph.tensors[m.tensor];
  std::vector<int64_t> dims(r);
  for (size_t j = 0; j < r; ++j) dims[j] = src.dims[q[j]];
  int32_t t;
  if (src.kind == TensorKind::Weight) {
    // The same bytes, re-described: dims permuted, the physical order kept.
    std::vector<int64_t> inv(r);
    for (size_t j = 0; j < r; ++j) inv[q[j]] = static_cast<int64_t>(j);
    TensorDesc w = src;
    w.dims = dims;
    w.dim_order.clear();
    for (size_t k = 0; k < r; ++k) {
      const int64_t old = src.dim_order.empty() ? static_cast<int64_t>(k) : src.dim_order[k];
      w.dim_order.push_back(static_cast<uint8_t>(inv[old]));
    }
    t = add_tensor(std::move(w));
  } else {
    t = emit(OpKind::Permute, {m.tensor}, cpu::PermuteParams{q}, dims);
  }
  // Later readers wanting `want` find it (one Permute per value and layout).
  alt_.push_back({id, want, t});
  return t;
}

Result<int32_t> Translator::held(uint32_t id, const Perm& want) {
  for (const auto& a : alt_) {
    if (a.id == id && a.perm == want) return a.tensor;
  }
  return as_perm(id, want);
}

Result<Mapped> Translator::any(uint32_t id) {
  if (mapped_[id].perm.empty()) EMBER_TRY(as_perm(id, identity(value(id).dims.size())).error());
  return mapped_[id];
}

std::vector<int64_t> Translator::engine_dims(const std::vector<int64_t>& dims, const Perm& perm) {
  std::vector<int64_t> e(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) e[perm[i]] = dims[i];
  return e;
}

Result<int32_t> Translator::broadcast_operand(uint32_t id, size_t rank, const Perm& perm) {
  const Value& v = value(id);
  if (v.dims.size() == rank) return held(id, perm);
  std::vector<int64_t> full(rank - v.dims.size(), 1);
  full.insert(full.end(), v.dims.begin(), v.dims.end());
  EMBER_ASSIGN_OR_RETURN(const int32_t plain, held(id, identity(v.dims.size())));
  const TensorDesc& src = out_.graph.tensors[plain];
  int32_t t;
  if (src.kind == TensorKind::Weight && src.dim_order.empty()) {
    TensorDesc w = src;
    w.dims = full;
    t = add_tensor(std::move(w));
  } else {
    t = emit(OpKind::Reshape, {plain}, cpu::NoParams{}, full);
  }
  if (perm == identity(rank)) return t;
  // Leading 1s: the permuted tensor's dims, with the same elements in the same order where only
  // dims of size 1 move; otherwise a Permute.
  std::vector<int64_t> q(rank);
  for (size_t k = 0; k < rank; ++k) q[perm[k]] = static_cast<int64_t>(k);
  std::vector<int64_t> dims(rank);
  for (size_t j = 0; j < rank; ++j) dims[j] = full[q[j]];
  if (out_.graph.tensors[t].kind == TensorKind::Weight && only_ones_move(full, q)) {
    TensorDesc w = out_.graph.tensors[t];
    w.dims = dims;
    return add_tensor(std::move(w));
  }
  return emit(OpKind::Permute, {t}, cpu::PermuteParams{q}, dims);
}

bool Translator::only_ones_move(const std::vector<int64_t>& dims, const std::vector<int64_t>& q) {
  int64_t last = -1;
  for (const int64_t j : q) {
    if (dims[j] == 1) continue;
    if (j < last) return false;
    last = j;
  }
  return true;
}

void Translator::define(uint32_t id, int32_t tensor, Perm perm, bool on_grid) {
  if (is_q8(value(id)) && !on_grid) tensor = to_grid(value(id), tensor);
  mapped_[id] = {tensor, std::move(perm)};
}

bool Translator::moves_on_grid(const Node& n) const {
  const Value& y = value(n.outputs[0]);
  for (const uint32_t in : n.inputs) {
    if (!same_grid(value(in), y)) return false;
  }
  return true;
}

Result<std::vector<uint8_t>> Translator::constant_bytes(const Value& v, int bytes_per_element) {
  const int64_t n = numel(v.dims);
  const uint64_t want = bytes_per_element == 0 ? static_cast<uint64_t>((n + 1) / 2)
                                               : static_cast<uint64_t>(n) * bytes_per_element;
  if (p_.constants[v.constant].size != want) {
    return refuse("constant value %u (%s, %s) has %llu bytes, expected %llu", v.id,
                  datatype_name(v.dtype), dims_text(v.dims).c_str(),
                  static_cast<unsigned long long>(p_.constants[v.constant].size),
                  static_cast<unsigned long long>(want));
  }
  return bytes_of(v.constant);
}

Result<std::vector<uint8_t>> Translator::bytes_of(uint32_t index) {
  const Constant& c = p_.constants[index];
  if (c.is_inline) return c.inline_bytes;
  if (c.named_key.empty()) {
    const std::span<const uint8_t> b = p_.constant_data.subspan(c.offset, c.size);
    return std::vector<uint8_t>(b.begin(), b.end());
  }
  if (named_ == nullptr) {
    return refuse("constant %u is named data '%s', and the program has none", index,
                  c.named_key.c_str());
  }
  std::vector<uint8_t> out(c.size);
  if (Error e = named_->load_data_into(c.named_key, out.data(), out.size()); e != Error::Ok) {
    return refuse("constant %u ('%s'): %s", index, c.named_key.c_str(), last_error_message());
  }
  return out;
}

int32_t Translator::owned_weight(const char* what, std::vector<uint8_t> bytes,
                                 std::vector<int64_t> dims, cpu::WeightStorage storage) {
  const std::string key =
      "xnnpack/node" + std::to_string(node_) + "/" + what + std::to_string(made_++);
  out_.graph.weights.push_back({key, bytes.size()});
  out_.weights->add_owned(key, std::move(bytes));
  TensorDesc t;
  t.kind = TensorKind::Weight;
  t.index = static_cast<uint32_t>(out_.graph.weights.size() - 1);
  t.dims = std::move(dims);
  t.storage = storage;
  return add_tensor(std::move(t));
}

int32_t Translator::owned_floats(const char* what, const std::vector<float>& v,
                                 std::vector<int64_t> dims) {
  std::vector<uint8_t> bytes(v.size() * 4);
  if (!v.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
  return owned_weight(what, std::move(bytes), std::move(dims), cpu::WeightStorage::Float32);
}

Error Translator::same_dims(const Node& n) const {
  const Value& x = value(n.inputs[0]);
  const Value& y = value(n.outputs[0]);
  if (x.dims != y.dims) {
    return refuse("output %s, input %s", dims_text(y.dims).c_str(), dims_text(x.dims).c_str());
  }
  return Error::Ok;
}

Error Translator::check_broadcast(const Value& v, const Value& y) const {
  if (v.dims.size() > y.dims.size()) return refuse("an operand of higher rank than the output");
  for (size_t i = 0; i < v.dims.size(); ++i) {
    const int64_t d = v.dims[i], o = y.dims[y.dims.size() - v.dims.size() + i];
    if (d != o && d != 1) {
      return refuse("operand %s does not broadcast to %s", dims_text(v.dims).c_str(),
                    dims_text(y.dims).c_str());
    }
  }
  return Error::Ok;
}

std::string Translator::dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

}  // namespace ember::xnn::detail
