// Constant padding (OpKind::Pad, PyTorch's constant_pad_nd) by Ember's kernel: the source read
// row-major, the result written row-major, every element copied as it is.
#include "backends/cpu/kernels/pad.h"

#include <string>

#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {

Error build_pad(Build& b, const OpDesc& op) try {
  const PadParams& p = op.pad();
  const memory::dims sd = b.dims_of(op.inputs[0]), od = b.dims_of(op.output);
  if (sd.size() != p.before.size() || od.size() != sd.size()) {
    return refused("padding of the wrong rank");
  }
  for (size_t d = 0; d < sd.size(); ++d) {
    if (od[d] != sd[d] + p.before[d] + p.after[d]) return refused("padding output size disagrees");
  }
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], plain_md(sd, dt::f32)));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, plain_md(od, dt::f32)));
  OwnStep s{OwnKind::Pad,
            "pad,ember:constant,forward_inference,,",
            dims_text(sd) + "->" + dims_text(od),
            {}};
  s.run = [src, dst, sd, before = p.before, after = p.after, value = p.value,
           threads = b.threads()](void*) {
    constant_pad(data_as<const float>(src), sd, before, after, value, data_as<float>(dst), threads);
  };
  b.add_own_step(std::move(s), {src, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
