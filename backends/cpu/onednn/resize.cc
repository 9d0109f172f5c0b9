// Resizing (OpKind::Resize, PyTorch's upsample_bilinear2d and upsample_nearest2d) by Ember's
// kernel (kernels/resize.h): the NCHW source read row-major, the result written row-major. No
// oneDNN resampling: its linear one has no align_corners, and its nearest one rounds the source
// position where ATen floors it.
#include "backends/cpu/kernels/resize.h"

#include <string>
#include <utility>
#include <vector>

#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {

Error build_resize(Build& b, const OpDesc& op) try {
  const ResizeParams& p = op.resize();
  const memory::dims sd = b.dims_of(op.inputs[0]), od = b.dims_of(op.output);
  if (sd.size() != 4 || od.size() != 4) return refused("resize of a tensor other than NCHW");
  if (od[0] != sd[0] || od[1] != sd[1] || od[2] != p.height || od[3] != p.width) {
    return refused("resize output dims disagree with its sizes");
  }
  EMBER_ASSIGN_OR_RETURN(memory src, b.as(op.inputs[0], plain_md(sd, dt::f32)));
  EMBER_ASSIGN_OR_RETURN(memory dst, b.make_output(op, plain_md(od, dt::f32)));
  const ResizeShape shape{sd[0] * sd[1], sd[2], sd[3], od[2], od[3]};
  const int threads = b.threads();
  const std::string problem = dims_text(sd) + "->" + dims_text(od);
  if (p.alg == ResizeAlg::Nearest) {
    OwnStep s{OwnKind::Exact, "resampling,ember:nearest,forward_inference,,", problem, {}};
    s.run = [src, dst, shape, h = nearest_taps(sd[2], od[2]), w = nearest_taps(sd[3], od[3]),
             threads](void*) {
      resize_nearest(data_as<const float>(src), data_as<float>(dst), shape, h.data(), w.data(),
                     threads);
    };
    b.add_own_step(std::move(s), {src, dst});
    return Error::Ok;
  }
  OwnStep s{OwnKind::Exact,
            p.align_corners ? "resampling,ember:linear_align_corners,forward_inference,,"
                            : "resampling,ember:linear,forward_inference,,",
            problem,
            {}};
  s.run = [src, dst, shape, h = linear_taps(sd[2], od[2], p.align_corners),
           w = linear_taps(sd[3], od[3], p.align_corners), threads](void*) {
    resize_bilinear(data_as<const float>(src), data_as<float>(dst), shape, h.data(), w.data(),
                    threads);
  };
  b.add_own_step(std::move(s), {src, dst});
  return Error::Ok;
} catch (const dnnl::error& e) {
  return b.onednn_error(e);
}

}  // namespace ember::cpu::delegate
