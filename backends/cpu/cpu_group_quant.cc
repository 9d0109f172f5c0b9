// The cpu delegate's linear layers by weights quantized by groups of a row (GroupQuantMatMul,
// docs/backends/cpu.md "Quantized programs"): torchao's 8da4w, 8da8w and weight-only int4/int8,
// on Ember's kernels (quant_gemm.h).
#include <optional>
#include <string>
#include <vector>

#include "backends/cpu/cpu_delegate.h"

namespace ember::cpu::delegate {

void CpuDelegate::build_group_quant_matmul(const OpDesc& op) {
  // A dynamically quantized input (7 inputs), or a float one the op quantizes (ints [group, 1]),
  // may have any shape of m * k elements.
  const bool quantize = op.ints.size() == 2;
  const bool dynamic = op.inputs.size() == 7 || quantize;
  const memory::dims wd = dims_of(op.inputs[1]), od = dims_of(op.output);
  memory::dims ad = dims_of(op.inputs[0]);
  if (dynamic && wd.size() == 2 && od.size() == 2) ad = {od[0], checked_numel(ad) / od[0]};
  if (ad.size() != 2 || wd.size() != 2 || od.size() != 2 || ad[1] != wd[1] || od[0] != ad[0] ||
      od[1] != wd[0] || checked_numel(graph_.tensors[op.inputs[0]].dims) != ad[0] * ad[1]) {
    refuse("grouped quantized matmul sizes disagree");
  }
  const int64_t m = ad[0], k = ad[1], n = wd[0], group = op.ints[0];
  const WeightStorage storage = graph_.tensors[op.inputs[1]].storage;
  const int64_t bits = storage == WeightStorage::Int4 ? 4 : 8;
  if (k % group != 0 || (bits == 4 && group % 2 != 0)) {
    refuse("grouped quantized matmul: the group size does not divide the rows");
  }
  const int64_t count = n * (k / group);
  auto floats = [&](int32_t id, const char* what) -> const float* {
    if (checked_numel(graph_.tensors[id].dims) != count) {
      refuse(std::string("grouped quantized matmul: one ") + what + " a group");
    }
    return data_as<float>(as(id, plain_md(dims_of(id), dt::f32)));
  };
  const float* scales = floats(op.inputs[3], "scale");
  const float* zeros = op.inputs[4] >= 0 ? floats(op.inputs[4], "zero point") : nullptr;
  const float* bias = nullptr;
  if (op.inputs[2] >= 0) {
    if (checked_numel(graph_.tensors[op.inputs[2]].dims) != n) {
      refuse("grouped quantized matmul: bias size differs from the output features");
    }
    bias = data_as<float>(as(op.inputs[2], plain_md(dims_of(op.inputs[2]), dt::f32)));
  }
  const auto* stored = data_as<uint8_t>(src_memory(op.inputs[1]));
  std::vector<int8_t> q(static_cast<size_t>(n * k));
  for (size_t i = 0; i < q.size(); ++i) {
    if (bits == 8) {
      q[i] = static_cast<int8_t>(stored[i]);
    } else {  // two's complement nibbles, the low one first
      const auto nibble = static_cast<uint8_t>((stored[i / 2] >> (i % 2 ? 4 : 0)) & 0xF);
      q[i] = static_cast<int8_t>(nibble >= 8 ? nibble - 16 : nibble);
    }
  }
  const memory a = as(op.inputs[0], plain_md(dims_of(op.inputs[0]), dt::f32));
  const memory dst = make_output(op, plain_md(od, dt::f32));
  memory zero_points, input_scales;  // a's, one a row (7 inputs)
  if (op.inputs.size() == 7) {
    for (int32_t id : {op.inputs[5], op.inputs[6]}) {
      if (checked_numel(graph_.tensors[id].dims) != m) {
        refuse("grouped quantized matmul: one input zero point and scale a row");
      }
    }
    zero_points = as(op.inputs[5], plain_md(dims_of(op.inputs[5]), dt::f32));
    input_scales = as(op.inputs[6], plain_md(dims_of(op.inputs[6]), dt::f32));
  }
  // A quantized input (8da) by a weight of zero points 0 runs in integers from AVX2 up; the rest
  // on the float kernel.
  std::shared_ptr<DotPackedMatrix> dot;
  std::shared_ptr<QuantPackedMatrix> packed;
  if (const int dot_bits = dynamic && own_kernels_supported()
                               ? DotPackedMatrix::fits(q.data(), zeros, k, n, group)
                               : 0) {
    dot = std::make_shared<DotPackedMatrix>(
        DotPackedMatrix::pack(q.data(), scales, bias, k, n, group, dot_bits, weight_storage()));
  } else {
    packed = std::make_shared<QuantPackedMatrix>(QuantPackedMatrix::pack(
        q.data(), scales, zeros, bias, k, n, group, bits, weight_storage()));
  }
  add_own_step(group_quant_matmul_step(std::move(dot), std::move(packed), m, threads_,
                                       quantize ? std::optional<float>(op.floats[0]) : std::nullopt,
                                       a, zero_points, input_scales, dst));
}

}  // namespace ember::cpu::delegate
