#include "backends/cpu/onednn/layout.h"

#include <algorithm>
#include <cstring>

namespace ember::cpu::delegate {

memory::dims to_dims(const std::vector<int64_t>& d) { return memory::dims(d.begin(), d.end()); }

// Appends (gcc 12 warns falsely of overlapping copies in chains of operator+).
std::string dims_text(const memory::dims& d) {
  std::string out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0) out.append("x");
    out.append(std::to_string(d[i]));
  }
  return out;
}

// Strides of a dense tensor whose dims are laid out in `order` (outermost first; empty: in order).
memory::dims dense_strides(const memory::dims& dims, const std::vector<uint8_t>& order) {
  memory::dims strides(dims.size(), 1);
  int64_t s = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    const size_t d = order.empty() ? k : order[k];
    strides[d] = s;
    s *= std::max<int64_t>(dims[d], 1);
  }
  return strides;
}

memory::dims plain_strides(const memory::desc& md) {
  const dnnl_memory_desc_t& d = md.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0 ||
      md.data_type() != dt::f32 || d.offset0 != 0) {
    return {};
  }
  return memory::dims(d.format_desc.blocking.strides, d.format_desc.blocking.strides + d.ndims);
}

memory::dims reshaped_strides(const memory::dims& dims, const memory::dims& strides,
                              const memory::dims& new_dims) {
  if (dims.empty() || dims.size() != strides.size()) return {};
  // The old dims fall into chunks whose dims are contiguous to each other (size-1 dims never
  // break one); each chunk's elements must be exactly some run of new dims, which take dense
  // strides from the chunk's innermost stride.
  memory::dims out(new_dims.size(), 0);
  int64_t v = static_cast<int64_t>(new_dims.size()) - 1;
  int64_t base = strides.back(), old_count = 1, new_count = 1;
  for (int64_t d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    old_count *= dims[d];
    const bool chunk_ends = d == 0 || (dims[d - 1] != 1 && strides[d - 1] != old_count * base);
    if (!chunk_ends) continue;
    while (v >= 0 && (new_count < old_count || new_dims[v] == 1)) {
      out[v] = new_count * base;
      new_count *= new_dims[v];
      --v;
    }
    if (new_count != old_count) return {};
    if (d > 0) {
      base = strides[d - 1];
      old_count = new_count = 1;
    }
  }
  return v == -1 ? out : memory::dims{};
}

// By oneDNN's C API, which returns a status where the C++ constructor would throw: dims the
// verifier passed always make a descriptor; any others give an empty one, which every primitive
// and memory refuses where it is created.
memory::desc plain_md(const memory::dims& dims, dt type, const std::vector<uint8_t>& order) {
  const memory::dims d = dims.empty() ? memory::dims{1} : dims;
  const memory::dims strides = dims.empty() ? memory::dims{1} : dense_strides(dims, order);
  dnnl_memory_desc_t md{};
  if (dnnl_memory_desc_init_by_strides(&md, static_cast<int>(d.size()), d.data(),
                                       static_cast<dnnl_data_type_t>(type),
                                       strides.data()) != dnnl_success) {
    return memory::desc();
  }
  return memory::desc(md);
}

bool copy_to_blocked(const memory& from, const memory& to) {
  const memory::desc from_md = from.get_desc(), to_md = to.get_desc();
  const dnnl_memory_desc_t &s = from_md.data, &d = to_md.data;
  const int n = s.ndims;
  if (n < 1 || n != d.ndims || s.data_type != dnnl_f32 || d.data_type != dnnl_f32 ||
      s.format_kind != dnnl_blocked || d.format_kind != dnnl_blocked ||
      s.format_desc.blocking.inner_nblks != 0 || d.extra.flags != 0 || d.offset0 != 0) {
    return false;
  }
  for (int i = 0; i < n; ++i) {
    if (s.dims[i] != d.dims[i] || s.dims[i] < 1 || d.padded_offsets[i] != 0) return false;
  }
  const dnnl_blocking_desc_t& b = d.format_desc.blocking;
  // An element's offset in `to` is a sum of one term per dim: its block's (the outer index times
  // the dim's stride) and its place in the inner blocks (a digit per block of the dim, the
  // innermost block's the least significant).
  int64_t block[DNNL_MAX_NDIMS], inner_stride[DNNL_MAX_NDIMS];
  std::fill(block, block + n, int64_t{1});
  int64_t stride = 1;
  for (int k = b.inner_nblks - 1; k >= 0; --k) {
    inner_stride[k] = stride;
    stride *= b.inner_blks[k];
    block[b.inner_idxs[k]] *= b.inner_blks[k];
  }
  std::vector<int64_t> table[DNNL_MAX_NDIMS];
  for (int i = 0; i < n; ++i) {
    table[i].resize(static_cast<size_t>(d.dims[i]));
    for (int64_t x = 0; x < d.dims[i]; ++x) {
      int64_t off = x / block[i] * b.strides[i], rest = x % block[i];
      for (int k = b.inner_nblks - 1; k >= 0; --k) {
        if (b.inner_idxs[k] != i) continue;
        off += rest % b.inner_blks[k] * inner_stride[k];
        rest /= b.inner_blks[k];
      }
      table[i][static_cast<size_t>(x)] = off;
    }
  }
  const float* src = data_as<const float>(from) + s.offset0;
  float* dst = data_as<float>(to);
  if (src == nullptr || dst == nullptr) return false;
  std::memset(dst, 0, to_md.get_size());
  // Innermost the dim `from` holds densest (of those longer than 1: a 1x1 filter's last dims
  // are 1), read in order; the others in order around it.
  const dnnl_dims_t& ss = s.format_desc.blocking.strides;
  int in = n - 1;
  for (int i = 0; i < n; ++i) {
    if (d.dims[i] > 1 && (d.dims[in] == 1 || ss[i] < ss[in])) in = i;
  }
  const int64_t inner = d.dims[in], inner_s = ss[in];
  const int64_t* inner_t = table[in].data();
  int64_t idx[DNNL_MAX_NDIMS] = {};
  for (;;) {
    int64_t so = 0, doff = 0;
    for (int i = 0; i < n; ++i) {
      so += idx[i] * ss[i];
      doff += table[i][static_cast<size_t>(idx[i])];
    }
    for (int64_t x = 0; x < inner; ++x) dst[doff + inner_t[x]] = src[so + x * inner_s];
    int i = n - 1;
    for (; i >= 0; --i) {
      if (i == in) continue;
      if (++idx[i] < d.dims[i]) break;
      idx[i] = 0;
    }
    if (i < 0) return true;
  }
}

// `dims` right-aligned to `rank` with leading ones (broadcast operands, biases).
memory::dims pad_rank(const memory::dims& dims, size_t rank) {
  memory::dims out(rank > dims.size() ? rank - dims.size() : 0, 1);
  out.insert(out.end(), dims.begin(), dims.end());
  return out;
}

dnnl::algorithm eltwise_alg(EltwiseAlg a) {
  switch (a) {
    case EltwiseAlg::Relu:
      return dnnl::algorithm::eltwise_relu;
    case EltwiseAlg::Clip:
      return dnnl::algorithm::eltwise_clip_v2;
    case EltwiseAlg::GeluErf:
      return dnnl::algorithm::eltwise_gelu_erf;
    case EltwiseAlg::GeluTanh:
      return dnnl::algorithm::eltwise_gelu_tanh;
    case EltwiseAlg::Swish:
      return dnnl::algorithm::eltwise_swish;
    case EltwiseAlg::Logistic:
      return dnnl::algorithm::eltwise_logistic;
    case EltwiseAlg::Hardswish:
      return dnnl::algorithm::eltwise_hardswish;
    case EltwiseAlg::Elu:
      return dnnl::algorithm::eltwise_elu;
    case EltwiseAlg::Tanh:
      return dnnl::algorithm::eltwise_tanh;
    case EltwiseAlg::Square:
      return dnnl::algorithm::eltwise_square;
    case EltwiseAlg::Sqrt:
      return dnnl::algorithm::eltwise_sqrt;
    case EltwiseAlg::Quantize:  // Ember's steps only (is_own_eltwise)
    case EltwiseAlg::Dequantize:
    case EltwiseAlg::Rsqrt:
    case EltwiseAlg::Neg:
    case EltwiseAlg::Abs:
    case EltwiseAlg::Exp:
    case EltwiseAlg::Log:
    case EltwiseAlg::Floor:
    case EltwiseAlg::Ceil:
    case EltwiseAlg::Sin:
    case EltwiseAlg::Cos:
    case EltwiseAlg::LeakyRelu:
    case EltwiseAlg::Reciprocal:
    case EltwiseAlg::Round:
      return dnnl::algorithm::eltwise_linear;
  }
  return dnnl::algorithm::eltwise_relu;
}

// (alpha, beta) in oneDNN's terms for one of our element-wise ops.
std::pair<float, float> eltwise_params(EltwiseAlg a, float alpha, float beta) {
  switch (a) {
    case EltwiseAlg::Hardswish:
      return {1.f / 6.f, 0.5f};
    case EltwiseAlg::Swish:
      return {1.f, 0.f};
    case EltwiseAlg::Clip:
    case EltwiseAlg::Elu:
      return {alpha, beta};
    default:
      return {0.f, 0.f};
  }
}

memory::desc nhwc_md(const std::vector<int64_t>& dims) {
  return plain_md(to_dims(dims), dt::f32, {0, 2, 3, 1});
}

}  // namespace ember::cpu::delegate
