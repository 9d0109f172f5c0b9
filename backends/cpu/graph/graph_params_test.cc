// The cpu backend's blob (graph/graph_format.h) refuses op parameters that are out of range
// (enum values past their kNum* bounds, each parameter's range kind by kind), of another kind's
// type, or missing, each with the op's index and the reason.
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_test_util.h"
#include "ember/backends/cpu/cpu_graph_generated.h"

namespace ember::cpu::graph_test {
namespace {

TEST(CpuGraphFormat, OutOfRangeEnumRefused) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  CpuGraph g = small_cnn();
  g.ops[0].kind = static_cast<OpKind>(kNumOpKinds);
  EXPECT_NE(refused(g).find("op 0: kind out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[0].post_ops[0].alg = static_cast<EltwiseAlg>(kNumEltwiseAlgs);
  EXPECT_NE(refused(g).find("op 0: post-op out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[1].pool().alg = static_cast<PoolAlg>(kNumPoolAlgs);
  EXPECT_NE(refused(g).find("op 1: pooling parameters out of range"), std::string::npos);
  g = small_cnn();
  g.tensors[0].kind = static_cast<TensorKind>(200);
  EXPECT_NE(refused(g).find("tensor 0: kind out of range"), std::string::npos) << refused(g);
  g = small_cnn();
  g.tensors[1].storage = static_cast<WeightStorage>(200);
  EXPECT_NE(refused(g).find("tensor 1: weight storage out of range"), std::string::npos);
  g = every_kind();
  for (OpDesc& o : g.ops) {
    if (o.kind == OpKind::GroupQuantMatMul &&
        o.group_quant_matmul().input_quant != InputQuant::None) {
      o.group_quant_matmul().input_quant = static_cast<InputQuant>(kNumInputQuants);
    }
  }
  EXPECT_NE(refused(g).find("grouped quantized matmul needs"), std::string::npos) << refused(g);
  g = small_cnn();
  g.precision = static_cast<Precision>(200);
  EXPECT_NE(refused(g).find("precision out of range"), std::string::npos) << refused(g);

  CpuGraph e;
  e.num_inputs = 1;
  const int32_t x = add(e, input(0, {4}));
  op(e, OpKind::Eltwise, {x}, value({4}), EltwiseParams{static_cast<EltwiseAlg>(kNumEltwiseAlgs)});
  op(e, OpKind::Binary, {x, x}, value({4}), BinaryParams{static_cast<BinaryAlg>(kNumBinaryAlgs)});
  op(e, OpKind::Reduce, {x}, value({}), ReduceParams{static_cast<ReduceAlg>(kNumReduceAlgs), {0}});
  EXPECT_NE(refused(e).find("op 0: eltwise parameters out of range"), std::string::npos);
  e.ops[0].eltwise().alg = EltwiseAlg::Relu;
  EXPECT_NE(refused(e).find("op 1: binary parameters out of range"), std::string::npos);
  e.ops[1].binary().alg = BinaryAlg::Add;
  EXPECT_NE(refused(e).find("op 2: reduction parameters out of range"), std::string::npos);

  // A post-op's is_sum other than 0 or 1, a convolution's transposed flag other than 0 or 1 (a
  // CpuGraph holds neither).
  std::string why = reason(one_op_blob(OpKind::Binary, {0, 0}, [](auto& fbb) {
    const auto p = fb::CreatePostOp(fbb, /*is_sum=*/2, /*tensor=*/0);
    return HandMadeOp{fb::OpParams::BinaryParams, fb::CreateBinaryParams(fbb).Union(),
                      fbb.CreateVector(std::vector<flatbuffers::Offset<fb::PostOp>>{p})};
  }));
  EXPECT_NE(why.find("op 0: post-op out of range"), std::string::npos) << why;
  why = reason(one_op_blob(OpKind::Conv, {0, 0, -1}, [](auto& fbb) {
    const auto one = fbb.CreateVector(std::vector<int64_t>{1});
    const auto zero = fbb.CreateVector(std::vector<int64_t>{0});
    return HandMadeOp{
        fb::OpParams::ConvParams,
        fb::CreateConvParams(fbb, 1, /*transposed=*/2, one, zero, zero, one, zero).Union()};
  }));
  EXPECT_NE(why.find("op 0: convolution groups or transposed flag out of range"), std::string::npos)
      << why;
  why = reason(one_op_blob(OpKind::Resize, {0}, [](auto& fbb) {
    return HandMadeOp{fb::OpParams::ResizeParams,
                      fb::CreateResizeParams(fbb, 0, /*align_corners=*/2, 4, 4).Union()};
  }));
  EXPECT_NE(why.find("op 0: resize align_corners is not 0 or 1"), std::string::npos) << why;
}

// Parameters of another kind's type, or none, are refused with the op's index and both types.
TEST(CpuGraphFormat, ParametersOfAnotherKindRefused) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  CpuGraph g = small_cnn();
  g.ops[0].params = g.ops[1].params;
  EXPECT_NE(refused(g).find("op 0: parameters of type PoolParams, op kind 0 takes ConvParams"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[0].params = NoParams{};
  EXPECT_NE(refused(g).find("op 0: parameters missing, op kind 0 takes ConvParams"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[0].kind = OpKind::QuantConv;  // a Conv's parameters
  EXPECT_NE(refused(g).find("op 0: parameters of type ConvParams, op kind 11 takes "
                            "QuantConvParams"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[2].params = SliceParams{};  // on a Reshape
  EXPECT_NE(refused(g).find("op 2: parameters of type SliceParams, op kind 9 takes none"),
            std::string::npos)
      << refused(g);
  g = small_cnn();
  g.ops[3].params = NoParams{};
  EXPECT_NE(refused(g).find("op 3: parameters missing, op kind 1 takes MatMulParams"),
            std::string::npos)
      << refused(g);
  // Every kind against every other kind's parameters.
  const CpuGraph every = every_kind();
  for (size_t i = 0; i < every.ops.size(); ++i) {
    for (size_t j = 0; j < every.ops.size(); ++j) {
      if (every.ops[i].params.index() == every.ops[j].params.index()) continue;
      g = every;
      g.ops[i].params = every.ops[j].params;
      const std::string why = refused(g);
      EXPECT_EQ(why.rfind("op " + std::to_string(i) + ": parameters ", 0), 0u)
          << i << " <- " << j << ": " << why;
    }
  }

  // A union type past the last table, and a type without its table.
  std::string why = reason(one_op_blob(OpKind::Eltwise, {0}, [](auto& fbb) {
    return HandMadeOp{static_cast<fb::OpParams>(99), fb::CreateEltwiseParams(fbb).Union()};
  }));
  EXPECT_NE(why.find("op 0: parameters of type 99, op kind 3 takes EltwiseParams"),
            std::string::npos)
      << why;
  why = reason(one_op_blob(OpKind::Eltwise, {0}, [](auto&) {
    return HandMadeOp{fb::OpParams::EltwiseParams, {}};
  }));
  EXPECT_NE(why.find("op 0: parameters missing, op kind 3 takes EltwiseParams"), std::string::npos)
      << why;
  // Tables without a part they need.
  why = reason(one_op_blob(OpKind::QuantConv, {0, 0, -1, 0}, [](auto& fbb) {
    const fb::QuantParams src(0.5f, 0);
    return HandMadeOp{fb::OpParams::QuantConvParams,
                      fb::CreateQuantConvParams(fbb, 0, &src).Union()};
  }));
  EXPECT_NE(why.find("op 0: quantized convolution needs its geometry"), std::string::npos) << why;
  why = reason(one_op_blob(OpKind::QuantMatMul, {0, 0, -1, 0}, [](auto& fbb) {
    return HandMadeOp{fb::OpParams::QuantMatMulParams, fb::CreateQuantMatMulParams(fbb).Union()};
  }));
  EXPECT_NE(why.find("op 0: quantized matmul needs"), std::string::npos) << why;
  why = reason(one_op_blob(OpKind::MatMul, {0, 0, -1}, [](auto& fbb) {
    const fb::QuantParams a(0.5f, 0);
    return HandMadeOp{fb::OpParams::MatMulParams, fb::CreateMatMulParams(fbb, &a).Union()};
  }));
  EXPECT_NE(why.find("op 0: matmul of int8 values needs two scales and zero points"),
            std::string::npos)
      << why;
}

// The first op of `kind` in `g`.
OpDesc& first(CpuGraph& g, OpKind kind) {
  for (OpDesc& o : g.ops) {
    if (o.kind == kind) return o;
  }
  ADD_FAILURE() << "no op of kind " << static_cast<int>(kind);
  return g.ops.front();
}

// Each parameter's range, op kind by op kind, on every_kind(): refused with its reason.
TEST(CpuGraphFormat, ParameterRangesRefused) {
  struct Case {
    const char* want;
    void (*edit)(CpuGraph&);
  };
  const Case cases[] = {
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) { first(g, OpKind::QuantConv).quant_conv().src.scale = 0; }},
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) {
         first(g, OpKind::QuantConv).quant_conv().src.scale =
             std::numeric_limits<float>::quiet_NaN();
       }},
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) { first(g, OpKind::QuantConv).quant_conv().conv.transposed = true; }},
      {"quantized convolution: a 2-D one, with a positive scale",
       [](CpuGraph& g) {
         ConvParams& c = first(g, OpKind::QuantConv).quant_conv().conv;
         for (auto* v : {&c.stride, &c.pad_l, &c.pad_r, &c.dilation, &c.output_padding}) {
           v->pop_back();
         }
       }},
      {"quantized matmul needs a, weight, bias, scales, parameters",
       [](CpuGraph& g) { first(g, OpKind::QuantMatMul).quant_matmul().src.scale = -1; }},
      {"grouped quantized matmul needs",
       [](CpuGraph& g) { first(g, OpKind::GroupQuantMatMul).group_quant_matmul().group = 1; }},
      {"grouped quantized matmul needs",  // an eps without a quantization
       [](CpuGraph& g) { first(g, OpKind::GroupQuantMatMul).group_quant_matmul().eps = 1e-6f; }},
      {"grouped quantized matmul needs",
       [](CpuGraph& g) {
         for (OpDesc& o : g.ops) {
           if (o.kind == OpKind::GroupQuantMatMul &&
               o.group_quant_matmul().input_quant != InputQuant::None) {
             o.group_quant_matmul().eps = -1;
           }
         }
       }},
      {"grouped quantized matmul needs",
       [](CpuGraph& g) {
         for (OpDesc& o : g.ops) {
           if (o.kind == OpKind::GroupQuantMatMul &&
               o.group_quant_matmul().input_quant != InputQuant::None) {
             o.group_quant_matmul().eps = std::numeric_limits<float>::quiet_NaN();
           }
         }
       }},
      {"grouped quantized matmul needs",  // an input quantized already, and to quantize
       [](CpuGraph& g) {
         OpDesc& o = first(g, OpKind::GroupQuantMatMul);
         o.group_quant_matmul() = {4, InputQuant::PerToken, 0};
         o.inputs.push_back(o.inputs[0]);
         o.inputs.push_back(o.inputs[0]);
       }},
      {"softmax parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Softmax).softmax().axis = -1; }},
      {"softmax parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Softmax).softmax().axis = kMaxCpuRank; }},
      {"layer norm parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::LayerNorm).norm().eps = -1e-5f; }},
      {"layer norm parameters out of range",
       [](CpuGraph& g) {
         first(g, OpKind::LayerNorm).norm().eps = std::numeric_limits<float>::quiet_NaN();
       }},
      {"batch norm parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::BatchNorm).norm().eps = -1e-5f; }},
      {"concat parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Concat).concat().axis = -1; }},
      {"concat parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Concat).concat().axis = kMaxCpuRank; }},
      {"reduction parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims.clear(); }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) {
         first(g, OpKind::Reduce).reduce().dims = {1, 1};
       }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) {
         first(g, OpKind::Reduce).reduce().dims = {1, 0};
       }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims = {kMaxCpuRank}; }},
      {"reduction dims are not distinct ascending dims",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims = {-1}; }},
      {"slice parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Slice).slice().dim = kMaxCpuRank; }},
      {"slice parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Slice).slice().dim = -1; }},
      {"slice parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Slice).slice().start = -1; }},
      {"permute is not a permutation",
       [](CpuGraph& g) {
         first(g, OpKind::Permute).permute().perm = {1, 1};
       }},
      {"permute is not a permutation",
       [](CpuGraph& g) {
         first(g, OpKind::Permute).permute().perm = {0, 2};
       }},
      {"permute is not a permutation",
       [](CpuGraph& g) {
         first(g, OpKind::Permute).permute().perm = {-1, 0};
       }},
      {"oversized parameters",
       [](CpuGraph& g) { first(g, OpKind::Permute).permute().perm.assign(7, 0); }},
      {"oversized parameters",
       [](CpuGraph& g) { first(g, OpKind::Reduce).reduce().dims.assign(7, 0); }},
      {"padding needs src and a pad pair per dim",
       [](CpuGraph& g) { first(g, OpKind::Pad).pad().after.pop_back(); }},
      {"padding needs src and a pad pair per dim",
       [](CpuGraph& g) { first(g, OpKind::Pad).pad() = PadParams{}; }},
      {"oversized parameters",
       [](CpuGraph& g) {
         PadParams& p = first(g, OpKind::Pad).pad();
         p.before.assign(kMaxCpuRank + 1, 0);
         p.after.assign(kMaxCpuRank + 1, 0);
       }},
      {"padding out of range", [](CpuGraph& g) { first(g, OpKind::Pad).pad().before[0] = -1; }},
      {"padding out of range", [](CpuGraph& g) { first(g, OpKind::Pad).pad().after[1] = 4097; }},
      {"resize needs src", [](CpuGraph& g) { first(g, OpKind::Resize).inputs.push_back(0); }},
      {"resize needs src", [](CpuGraph& g) { first(g, OpKind::Resize).inputs = {-1}; }},
      {"resize parameters out of range",
       [](CpuGraph& g) {
         first(g, OpKind::Resize).resize().alg = static_cast<ResizeAlg>(kNumResizeAlgs);
       }},
      {"resize parameters out of range",  // align_corners is bilinear's only
       [](CpuGraph& g) { first(g, OpKind::Resize).resize().alg = ResizeAlg::Nearest; }},
      {"resize parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Resize).resize().height = 0; }},
      {"resize parameters out of range",
       [](CpuGraph& g) { first(g, OpKind::Resize).resize().width = (int64_t{1} << 20) + 1; }},
      {"eltwise parameters out of range",  // a leaky relu's slope must be finite
       [](CpuGraph& g) {
         EltwiseParams& p = first(g, OpKind::Eltwise).eltwise();
         p.alg = EltwiseAlg::LeakyRelu;
         p.alpha = std::numeric_limits<float>::infinity();
       }},
      {"post-op algorithm out of range",
       [](CpuGraph& g) {
         PostOp& p = first(g, OpKind::Conv).post_ops[0];
         p.alg = EltwiseAlg::LeakyRelu;
         p.alpha = std::numeric_limits<float>::quiet_NaN();
       }},
  };
  for (const Case& c : cases) {
    CpuGraph g = every_kind();
    c.edit(g);
    const std::string why = reason(serialize(g));
    EXPECT_NE(why.find(c.want), std::string::npos) << c.want << " <- " << why;
  }
}

}  // namespace
}  // namespace ember::cpu::graph_test
