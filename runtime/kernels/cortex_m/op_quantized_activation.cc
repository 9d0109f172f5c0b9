// cortex_m::quantized_activation.out(Tensor input, Tensor lut, *, Tensor(a!) out)
// An int8 activation by table lookup (cortex-m-ops.md §3.12): out = lut[input + 128], element by
// element in memory order. Export builds the 256-entry table (sigmoid, tanh, SiLU, GELU).
#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/util.h"

namespace ember::cortex_m {

Error quantized_activation_out(KernelContext& /*ctx*/, std::span<EValue*> args) {
  constexpr const char* op = "cortex_m::quantized_activation";
  const Tensor& in = args[0]->to_tensor();
  const Tensor& lut = args[1]->to_tensor();
  Tensor& out = args[2]->to_tensor();
  EMBER_TRY(check_dtype(in, ScalarType::Char, op, "input"));
  EMBER_TRY(check_dtype(out, ScalarType::Char, op, "out"));
  EMBER_TRY(check_vector(lut, ScalarType::Char, 256, op, "lut"));
  EMBER_CHECK(same_layout(in, out), Error::InvalidArgument,
              "%s: out must have the input's sizes and dim order", op);
  const int8_t* x = in.data<int8_t>();
  const int8_t* table = lut.data<int8_t>();
  int8_t* y = out.data<int8_t>();
  for (int64_t i = 0; i < in.numel(); ++i) y[i] = table[x[i] + 128];
  return Error::Ok;
}

}  // namespace ember::cortex_m
