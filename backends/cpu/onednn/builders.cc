#include "backends/cpu/onednn/builders.h"

#include <iterator>

#include "backends/cpu/onednn/families.h"

namespace ember::cpu::delegate {
namespace {

using BuildFn = Error (*)(Build& b, const OpDesc& op);
using FusionFn = Result<size_t> (*)(Build& b, size_t i);

struct Family {
  OpKind kind;
  const char* name;
  BuildFn build;
};

// Every op kind of graph/graph_format.h, and the builder of its family.
constexpr Family kFamilies[] = {
    {OpKind::Conv, "convolution", build_convolution},
    {OpKind::QuantConv, "quantized convolution", build_quant_conv},
    {OpKind::MatMul, "matmul", build_matmul},
    {OpKind::QuantMatMul, "quantized linear", build_quant_matmul},
    {OpKind::GroupQuantMatMul, "grouped quantized linear", build_group_quant_matmul},
    {OpKind::Pool, "pooling", build_pooling},
    {OpKind::Eltwise, "element-wise", build_eltwise},
    {OpKind::Binary, "binary", build_binary},
    {OpKind::Where, "where", build_where},
    {OpKind::Softmax, "softmax", build_softmax},
    {OpKind::LayerNorm, "layer norm", build_layer_norm},
    {OpKind::BatchNorm, "batch norm", build_batch_norm},
    {OpKind::Reduce, "reduction", build_reduce},
    {OpKind::Reshape, "reshape", build_reshape},
    {OpKind::Permute, "permute", build_permute},
    {OpKind::Concat, "concat", build_concat},
    {OpKind::Slice, "slice", build_slice},
    {OpKind::Pad, "padding", build_pad},
};
static_assert(std::size(kFamilies) == kNumOpKinds, "an op kind without its family builder");

// Several ops as one step, tried in this order before an op's own builder.
constexpr FusionFn kFusions[] = {try_inverted_residual, try_quantize_u8, try_fake_quant_pair};

const Family* family_of(OpKind kind) {
  for (const Family& f : kFamilies) {
    if (f.kind == kind) return &f;
  }
  return nullptr;
}

}  // namespace

const char* family_name(OpKind kind) {
  const Family* f = family_of(kind);
  return f != nullptr ? f->name : "unknown";
}

Result<size_t> build_ops_at(Build& b, size_t i) {
  for (FusionFn fusion : kFusions) {
    EMBER_ASSIGN_OR_RETURN(const size_t n, fusion(b, i));
    if (n > 0) return n;
  }
  const OpDesc& op = b.graph().ops[i];
  const Family* f = family_of(op.kind);
  // parse() refuses every kind without a parameter check, and each has a family here.
  if (f == nullptr) return refused("op kind without a builder");
  EMBER_TRY(f->build(b, op));
  return size_t{1};
}

}  // namespace ember::cpu::delegate
