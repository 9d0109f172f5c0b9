// The cpu backend's argument helpers (declared in compile/internal.h), read by the support
// checks (compile/support.cc), the builder and the quantization patterns alike: a node's static
// arguments, absent ones taking the schema default the caller passes; the padding, dims and ranges
// they describe; and what a dynamic batch is.
#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/compile/internal.h"

namespace ember::cpu::internal {

using ir::Arg;
using ir::ArgKind;
using ir::Node;
using ir::Value;

std::optional<std::vector<int64_t>> int_list(const Node& n, const char* name, size_t count,
                                             std::vector<int64_t> fallback) {
  const Arg* a = n.arg(name);
  if (a == nullptr || a->is_none()) return fallback;
  if (a->kind() == ArgKind::Int) return std::vector<int64_t>(count, a->as_int());
  if (a->kind() != ArgKind::List) return std::nullopt;
  std::vector<int64_t> out;
  for (const Arg& item : a->as_list()) {
    if (item.kind() != ArgKind::Int) return std::nullopt;  // symbolic sizes are not static
    out.push_back(item.as_int());
  }
  if (out.empty()) return fallback;
  if (out.size() == 1 && count > 1) out.assign(count, out[0]);
  return out;
}

std::optional<PadPairs> pad_pairs(const Node& n, size_t rank) {
  const auto pad = int_list(n, "pad", 0, {});
  if (!pad || pad->size() % 2 != 0 || pad->size() > 2 * rank) return std::nullopt;
  PadPairs p{std::vector<int64_t>(rank, 0), std::vector<int64_t>(rank, 0)};
  for (size_t i = 0; i < pad->size() / 2; ++i) {
    p.before[rank - 1 - i] = (*pad)[2 * i];
    p.after[rank - 1 - i] = (*pad)[2 * i + 1];
  }
  return p;
}

std::optional<double> number(const Node& n, const char* name, double fallback) {
  const Arg* a = n.arg(name);
  if (a == nullptr || a->is_none()) return fallback;
  if (a->kind() == ArgKind::Int || a->kind() == ArgKind::Bool) return double(a->as_int());
  if (a->kind() == ArgKind::Float) return a->as_float();
  return std::nullopt;
}

Value* value_arg(const Node& n, const char* name) {
  const Arg* a = n.arg(name);
  return a != nullptr && a->kind() == ArgKind::Value ? a->as_value() : nullptr;
}

std::vector<int64_t> static_dims(const Value& v) {
  std::vector<int64_t> d;
  for (const ir::Dim& dim : v.tensor_type().shape) d.push_back(dim.value);
  return d;
}

// The right padding that gives `out` positions with oneDNN's floor division: the left padding
// when that works (PyTorch pads symmetrically), else the exact value (ceil mode; a trailing
// remainder PyTorch drops).
int64_t right_padding(int64_t in, int64_t out, int64_t k, int64_t stride, int64_t pad) {
  auto size = [&](int64_t pr) { return (in + pad + pr - k) / stride + 1; };
  if (in + 2 * pad - k >= 0 && size(pad) == out) return pad;
  return std::max<int64_t>(0, (out - 1) * stride + k - in - pad);
}

int64_t normalize_dim(int64_t d, int64_t rank) { return d < 0 ? d + rank : d; }

std::optional<std::vector<int64_t>> reduced_dims(const Node& n, int64_t rank) {
  auto dims = int_list(n, "dim", 0, {});
  if (!dims) return std::nullopt;
  std::vector<int64_t> out;
  if (dims->empty()) {  // no dims: all of them
    for (int64_t d = 0; d < rank; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : *dims) {
    d = normalize_dim(d, rank);
    if (d < 0 || d >= rank) return std::nullopt;
    out.push_back(d);
  }
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) return std::nullopt;
  return out;
}

bool is_global_pool_mean(const Node& n) {
  if (n.op() != "aten::mean") return false;
  const auto rank = static_cast<int64_t>(value_arg(n, "self")->tensor_type().rank());
  return rank == 4 && reduced_dims(n, rank) == std::vector<int64_t>{2, 3};
}

std::optional<SliceRange> slice_range(const Node& n) {
  const Value* in = value_arg(n, "self");
  if (in == nullptr) return std::nullopt;
  const std::vector<int64_t> sd = static_dims(*in);
  const auto rank = static_cast<int64_t>(sd.size());
  const bool select = n.op() == "aten::select" || n.op() == "aten::select_copy";
  auto dim = number(n, "dim", 0);
  if (!dim || rank == 0) return std::nullopt;
  SliceRange p;
  p.dim = normalize_dim(static_cast<int64_t>(*dim), rank);
  if (p.dim < 0 || p.dim >= rank) return std::nullopt;
  const int64_t size = sd[p.dim];
  if (select) {
    auto index = number(n, "index", 0);
    if (!index) return std::nullopt;
    p.start = static_cast<int64_t>(*index);
    if (p.start < 0) p.start += size;
    if (p.start < 0 || p.start >= size) return std::nullopt;
    p.length = 1;
    return p;
  }
  auto step = number(n, "step", 1);
  if (!step || *step != 1) return std::nullopt;
  // PyTorch's bounds: negative ones count from the end; both clamped to [0, size].
  auto bound = [&](const char* name, int64_t fallback) -> std::optional<int64_t> {
    auto v = number(n, name, static_cast<double>(fallback));
    if (!v) return std::nullopt;
    const Arg* a = n.arg(name);
    int64_t x = a != nullptr && a->kind() == ArgKind::Int ? a->as_int() : static_cast<int64_t>(*v);
    if (x < 0) x += size;
    return std::clamp<int64_t>(x, 0, size);
  };
  auto start = bound("start", 0), end = bound("end", size);
  if (!start || !end) return std::nullopt;
  p.start = *start;
  p.length = std::max<int64_t>(0, *end - *start);
  if (static_dims(*n.output())[p.dim] != p.length) return std::nullopt;
  return p;
}

// A dynamic batch: dim 0 of `t` is a bare symbol and every other dim is static.
bool is_dynamic_batch(const ir::TensorType& t) {
  if (t.shape.empty() || t.shape[0].is_static()) return false;
  const std::string& e = t.shape[0].expr;
  if (std::isdigit(static_cast<unsigned char>(e[0]))) return false;
  for (char c : e) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  for (size_t i = 1; i < t.shape.size(); ++i) {
    if (!t.shape[i].is_static()) return false;
  }
  return true;
}
}  // namespace ember::cpu::internal
