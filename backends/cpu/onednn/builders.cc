#include "backends/cpu/onednn/builders.h"

#include <iterator>

#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {
namespace {

using BuildFn = Error (*)(Build& b, const OpDesc& op);
using FusionFn = Result<size_t> (*)(Build& b, size_t i);

struct Family {
  OpKind kind;
  BuildFn build;
};

// Every op kind of graph/graph_format.h, in OpKind's order, and the builder of its family.
constexpr Family kFamilies[] = {
    {OpKind::Conv, build_convolution},
    {OpKind::MatMul, build_matmul},
    {OpKind::Pool, build_pooling},
    {OpKind::Eltwise, build_eltwise},
    {OpKind::Binary, build_binary},
    {OpKind::Softmax, build_softmax},
    {OpKind::LayerNorm, build_layer_norm},
    {OpKind::BatchNorm, build_batch_norm},
    {OpKind::Concat, build_concat},
    {OpKind::Reshape, build_reshape},
    {OpKind::Permute, build_permute},
    {OpKind::QuantConv, build_quant_conv},
    {OpKind::QuantMatMul, build_quant_matmul},
    {OpKind::GroupQuantMatMul, build_group_quant_matmul},
    {OpKind::Reduce, build_reduce},
    {OpKind::Slice, build_slice},
    {OpKind::Where, build_where},
    {OpKind::Pad, build_pad},
    {OpKind::Resize, build_resize},
};

constexpr bool every_kind_at_its_index() {
  for (size_t i = 0; i < std::size(kFamilies); ++i) {
    if (static_cast<size_t>(kFamilies[i].kind) != i) return false;
  }
  return std::size(kFamilies) == kNumOpKinds;
}
static_assert(every_kind_at_its_index(), "each op kind needs its line, at its value's index");

// Several ops as one step, tried in this order before an op's own builder.
constexpr FusionFn kFusions[] = {try_inverted_residual, try_u8_lookup, try_quantize_u8,
                                 try_fake_quant_pair};

}  // namespace

Result<size_t> build_ops_at(Build& b, size_t i) {
  for (FusionFn fusion : kFusions) {
    EMBER_ASSIGN_OR_RETURN(const size_t n, fusion(b, i));
    if (n > 0) return n;
  }
  const OpDesc& op = b.graph().ops[i];
  // parse() refuses a kind at or past kNumOpKinds, and each below has its line here.
  const auto kind = static_cast<size_t>(op.kind);
  if (kind >= std::size(kFamilies)) return refused("op kind without a builder");
  EMBER_TRY(kFamilies[kind].build(b, op));
  return size_t{1};
}

}  // namespace ember::cpu::delegate
