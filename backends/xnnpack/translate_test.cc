// translate (translate.h): small payloads (payload_test_util.h) and ExecuTorch's own
// (testdata/fuzz_seeds) into the cpu engine's graph, and the refusals that name node and reason.
#include "backends/xnnpack/translate.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/xnnpack/payload_test_util.h"
#include "runtime/core/error.h"

namespace ember::xnn {
namespace {

using namespace ember::xnn::testing;
using cpu::OpKind;
using cpu::TensorKind;

// The blob outlives the payload's views.
struct Translated {
  std::vector<uint8_t> blob;
  Result<Payload> payload = Error::Internal;
  Result<Translation> translation = Error::Internal;
};

Translated translate_blob(std::vector<uint8_t> blob) {
  Translated t;
  t.blob = std::move(blob);
  t.payload = read_payload(t.blob);
  if (!t.payload.ok()) {
    ADD_FAILURE() << "read_payload: " << last_error_message();
    return t;
  }
  clear_error_message();
  t.translation = translate(*t.payload, nullptr);
  return t;
}

std::vector<OpKind> op_kinds(const cpu::CpuGraph& g) {
  std::vector<OpKind> kinds;
  for (const cpu::OpDesc& op : g.ops) kinds.push_back(op.kind);
  return kinds;
}

// A graph translate returns passes the engine's own verifier (parse checks every op).
void expect_verifies(const cpu::CpuGraph& g) {
  Result<cpu::CpuGraph> again = cpu::parse(cpu::serialize(g));
  EXPECT_TRUE(again.ok()) << last_error_message();
}

TEST(XnnTranslate, AddIsOneBinaryOp) {
  Translated t = translate_blob(build(add_graph()));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& g = t.translation->graph;
  EXPECT_EQ(g.num_inputs, 2u);
  EXPECT_EQ(op_kinds(g), std::vector<OpKind>{OpKind::Binary});
  ASSERT_EQ(g.outputs.size(), 1u);
  EXPECT_EQ(g.outputs[0], g.ops[0].output);
  expect_verifies(g);
}

// Inputs bind by external id: value 1 is argument 0.
TEST(XnnTranslate, InputsFollowTheirExternalIds) {
  GraphSpec g = add_graph();
  g.values[0].external_id = 1;
  g.values[1].external_id = 0;
  g.values[0].dims = {2, 3};
  g.values[1].dims = {3};  // broadcast: the second operand of the engine's Binary
  Translated t = translate_blob(build(g));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& cg = t.translation->graph;
  const int32_t a = cg.ops.back().inputs[0];
  EXPECT_EQ(cg.tensors[a].kind, TensorKind::Input);
  EXPECT_EQ(cg.tensors[a].index, 1u) << "value 0 ([2, 3]) is argument 1";
  EXPECT_EQ(cg.tensors[a].dims, (std::vector<int64_t>{2, 3}));
}

TEST(XnnTranslate, FullyConnectedTakesItsFilterAsKByN) {
  Translated t = translate_blob(build(fc_graph()));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& g = t.translation->graph;
  ASSERT_EQ(op_kinds(g), std::vector<OpKind>{OpKind::MatMul});
  const cpu::TensorDesc& w = g.tensors[g.ops[0].inputs[1]];
  EXPECT_EQ(w.kind, TensorKind::Weight);
  EXPECT_EQ(w.dims, (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(w.dim_order, (std::vector<uint8_t>{1, 0}));  // the [3, 4] bytes, re-described
  ASSERT_EQ(g.weights.size(), 2u);
  EXPECT_EQ(g.weights[0].nbytes, 48u);
  // The weight's bytes are a view of the payload's constant data.
  Result<FreeableBuffer> bias = t.translation->weights->get_data(g.weights[1].key);
  ASSERT_TRUE(bias.ok());
  EXPECT_EQ(bias->size(), 12u);
  EXPECT_EQ(static_cast<const float*>(bias->data())[1], 1.5f);
  expect_verifies(g);
}

// NCHW input -> transpose to NHWC -> conv (OHWI filter) -> transpose back: one Conv op, no
// Permute, the filter the same bytes as an OIHW weight with a dim order.
TEST(XnnTranslate, ConvFilterIsOihwWithADimOrder) {
  GraphSpec g;
  // Filter OHWI [4, 3, 2, 3]: 4 out channels, a 3x2 window, 3 in channels.
  g.values = {input(0, 0, {1, 3, 8, 8}), internal(1, {1, 8, 8, 3}), constant(2, 1, {4, 3, 2, 3}),
              constant(3, 2, {4}),       internal(4, {1, 6, 7, 4}), output(5, 1, {1, 4, 6, 7})};
  ConvSpec c;
  c.kh = 3;
  c.kw = 2;
  c.gi = 3;
  c.go = 4;
  g.nodes = {transpose({0, 2, 3, 1}, 0, 1), conv(fb::NodeUnion::XNNConv2d, c, 1, 2, 3, 4),
             transpose({0, 3, 1, 2}, 4, 5)};
  g.input_ids = {0};
  g.output_ids = {5};
  g.constant_data.resize(4 * 3 * 2 * 3 * 4 + 16);
  g.constants = {{0, 4 * 3 * 2 * 3 * 4, ""}, {4 * 3 * 2 * 3 * 4, 16, ""}};
  Translated t = translate_blob(build(g));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& cg = t.translation->graph;
  ASSERT_EQ(op_kinds(cg), std::vector<OpKind>{OpKind::Conv});
  const cpu::OpDesc& op = cg.ops[0];
  EXPECT_EQ(cg.tensors[op.inputs[0]].kind, TensorKind::Input);  // the NCHW input, as is
  const cpu::TensorDesc& w = cg.tensors[op.inputs[1]];
  EXPECT_EQ(w.kind, TensorKind::Weight);
  EXPECT_EQ(w.dims, (std::vector<int64_t>{4, 3, 3, 2}));
  EXPECT_EQ(w.dim_order, (std::vector<uint8_t>{0, 2, 3, 1}));
  EXPECT_EQ(cg.tensors[op.output].dims, (std::vector<int64_t>{1, 4, 6, 7}));
  EXPECT_EQ(cg.outputs[0], op.output);
  expect_verifies(cg);
}

// NCHW input [1, 3, 4, 5] -> NHWC -> ConvTranspose2d (filter [4, 3, 3, 3]: 4 out channels, a 3x3
// window, 3 in channels; stride 2, padding 1, adjustment 1) -> NCHW output [1, 4, 8, 10].
GraphSpec deconv_graph(const NodeConvSpec& c) {
  GraphSpec g;
  g.values = {input(0, 0, {1, 3, 4, 5}), internal(1, {1, 4, 5, 3}),  constant(2, 1, {4, 3, 3, 3}),
              constant(3, 2, {4}),       internal(4, {1, 8, 10, 4}), output(5, 1, {1, 4, 8, 10})};
  g.nodes = {transpose({0, 2, 3, 1}, 0, 1),
             conv_node(fb::NodeUnion::XNNConvTranspose2d, c, 1, 2, 3, 4),
             transpose({0, 3, 1, 2}, 4, 5)};
  g.input_ids = {0};
  g.output_ids = {5};
  g.constant_data.resize(4 * 3 * 3 * 3 * 4 + 16);
  g.constants = {{0, 4 * 3 * 3 * 3 * 4, ""}, {4 * 3 * 3 * 3 * 4, 16, ""}};
  return g;
}

NodeConvSpec deconv_spec() {
  NodeConvSpec c;
  c.kh = c.kw = 3;
  c.stride_h = c.stride_w = 2;
  c.pad_top = c.pad_bottom = c.pad_left = c.pad_right = 1;
  c.adjustment_h = c.adjustment_w = 1;
  c.gi = 3;
  c.go = 4;
  return c;
}

// The engine's transposed Conv: the filter PyTorch's IOHW weight re-described (the same bytes,
// a dim order), the adjustment a right padding that much smaller.
TEST(XnnTranslate, ConvTranspose2dIsATransposedConv) {
  Translated t = translate_blob(build(deconv_graph(deconv_spec())));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& cg = t.translation->graph;
  ASSERT_EQ(op_kinds(cg), std::vector<OpKind>{OpKind::Conv});
  const cpu::OpDesc& op = cg.ops[0];
  const cpu::ConvParams& c = op.conv();
  EXPECT_TRUE(c.transposed);
  EXPECT_EQ(c.groups, 1);
  EXPECT_EQ(c.stride, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.pad_l, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.pad_r, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(c.dilation, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.output_padding, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(cg.tensors[op.inputs[0]].kind, TensorKind::Input);
  const cpu::TensorDesc& w = cg.tensors[op.inputs[1]];
  EXPECT_EQ(w.kind, TensorKind::Weight);
  EXPECT_EQ(w.dims, (std::vector<int64_t>{3, 4, 3, 3}));
  EXPECT_EQ(w.dim_order, (std::vector<uint8_t>{1, 2, 3, 0}));  // stored [O, kh, kw, I]
  EXPECT_EQ(cg.tensors[op.output].dims, (std::vector<int64_t>{1, 4, 8, 10}));
  EXPECT_EQ(cg.outputs[0], op.output);
  expect_verifies(cg);
}

// Grouped, XNNPACK's filter [groups * go, kh, kw, gi] is no permutation of PyTorch's [groups * gi,
// go, kh, kw]: the weight is made, each element where PyTorch keeps it.
TEST(XnnTranslate, AGroupedConvTranspose2dFilterIsReordered) {
  GraphSpec g;
  // x [1, 2, 2, 4] NHWC, 2 groups of 2 in and 3 out channels, a 1x1 window; filter [6, 1, 1, 2]
  // holding 0..11.
  g.values = {input(0, 0, {1, 2, 2, 4}), constant(1, 1, {6, 1, 1, 2}), output(2, 1, {1, 2, 2, 6})};
  std::vector<float> f(12);
  for (int i = 0; i < 12; ++i) f[i] = static_cast<float>(i);
  g.constant_data.resize(48);
  std::memcpy(g.constant_data.data(), f.data(), 48);
  g.constants = {{0, 48, ""}};
  NodeConvSpec c;
  c.groups = 2;
  c.gi = 2;
  c.go = 3;
  g.nodes = {conv_node(fb::NodeUnion::XNNConvTranspose2d, c, 0, 1, kNone, 2)};
  g.input_ids = {0};
  g.output_ids = {2};
  Translated t = translate_blob(build(g));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& cg = t.translation->graph;
  ASSERT_EQ(op_kinds(cg).size(), 3u);  // the input and the output permuted from and to NHWC
  const cpu::OpDesc& op = cg.ops[1];
  ASSERT_EQ(op.kind, OpKind::Conv);
  EXPECT_EQ(op.conv().groups, 2);
  const cpu::TensorDesc& w = cg.tensors[op.inputs[1]];
  EXPECT_EQ(w.dims, (std::vector<int64_t>{4, 3, 1, 1}));
  EXPECT_TRUE(w.dim_order.empty());
  Result<FreeableBuffer> data = t.translation->weights->get_data(cg.weights[w.index].key);
  ASSERT_TRUE(data.ok());
  ASSERT_EQ(data->size(), 48u);
  std::vector<float> got(12);
  std::memcpy(got.data(), data->data(), 48);
  // PyTorch's [g * 2 + i][o] is XNNPACK's [g * 3 + o][i]: (g * 3 + o) * 2 + i.
  EXPECT_EQ(got, (std::vector<float>{0, 2, 4, 1, 3, 5, 6, 8, 10, 7, 9, 11}));
  expect_verifies(cg);
}

// A transpose and its inverse around an element-wise op: only the op.
TEST(XnnTranslate, ATransposeAddsNoOp) {
  GraphSpec g;
  g.values = {input(0, 0, {2, 3}), internal(1, {3, 2}), internal(2, {3, 2}), output(3, 1, {2, 3})};
  g.nodes = {transpose({1, 0}, 0, 1), node1x1(fb::NodeUnion::XNNSigmoid, 1, 2),
             transpose({1, 0}, 2, 3)};
  g.input_ids = {0};
  g.output_ids = {3};
  Translated t = translate_blob(build(g));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  EXPECT_EQ(op_kinds(t.translation->graph), std::vector<OpKind>{OpKind::Eltwise});
  EXPECT_EQ(t.translation->graph.tensors[t.translation->graph.outputs[0]].dims,
            (std::vector<int64_t>{2, 3}));
}

// An output held transposed is permuted once, at the end.
TEST(XnnTranslate, AnOutputHeldTransposedIsPermuted) {
  GraphSpec g;
  g.values = {input(0, 0, {2, 3}), internal(1, {3, 2}), output(2, 1, {3, 2})};
  g.nodes = {transpose({1, 0}, 0, 1), node1x1(fb::NodeUnion::XNNSigmoid, 1, 2)};
  g.input_ids = {0};
  g.output_ids = {2};
  Translated t = translate_blob(build(g));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  EXPECT_EQ(op_kinds(t.translation->graph),
            (std::vector<OpKind>{OpKind::Eltwise, OpKind::Permute}));
  expect_verifies(t.translation->graph);
}

TEST(XnnTranslate, AFusedClampIsAPostOp) {
  GraphSpec g = add_graph();
  g.nodes = {[](flatbuffers::FlatBufferBuilder& b) {
    return fb::CreateNode(b, fb::NodeUnion::XNNAdd, fb::CreateNode2x1(b, 0, 1, 2).Union(), 0,
                          fb::CreateOutputMinMax(b, 0, 6));
  }};
  Translated t = translate_blob(build(g));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  ASSERT_EQ(t.translation->graph.ops.size(), 1u);
  ASSERT_EQ(t.translation->graph.ops[0].post_ops.size(), 1u);
  EXPECT_EQ(t.translation->graph.ops[0].post_ops[0].alg, cpu::EltwiseAlg::Clip);
  EXPECT_EQ(t.translation->graph.ops[0].post_ops[0].beta, 6.0f);
}

// Refusals name the node's index, its type and its debug handle.

TEST(XnnTranslateRefusal, AnUnsupportedNodeType) {
  GraphSpec g;
  g.values = {input(0, 0, {1, 4, 4, 2}), internal(1, {1, 4, 4, 2}), output(2, 1, {1, 2, 2, 2}),
              internal(3, {1, 2, 2, 2})};
  g.nodes = {node1x1(fb::NodeUnion::XNNSigmoid, 0, 1, 3), argmax_pool(1, 2, 3)};
  g.input_ids = {0};
  g.output_ids = {2};
  Translated t = translate_blob(build(g));
  ASSERT_FALSE(t.translation.ok());
  EXPECT_EQ(t.translation.error(), Error::NotSupported);
  EXPECT_STREQ(last_error_message(),
               "XNNPACK delegate: node 1 (XNNArgMaxPooling2d, debug handle 0): Ember's cpu engine "
               "has no translation of this node type");
}

// What a ConvTranspose2d the engine cannot compute as XNNPACK does is refused, naming why.
TEST(XnnTranslateRefusal, ConvTranspose2dParameters) {
  const std::string prefix = "XNNPACK delegate: node 1 (XNNConvTranspose2d, debug handle 0): ";
  auto refused = [&](const GraphSpec& g, const std::string& why) {
    Translated t = translate_blob(build(g));
    ASSERT_FALSE(t.translation.ok());
    EXPECT_EQ(t.translation.error(), Error::NotSupported);
    EXPECT_EQ(last_error_message(), prefix + why);
  };
  NodeConvSpec c = deconv_spec();
  c.adjustment_w = 2;
  refused(deconv_graph(c), "adjustment (output padding) 1 x 2 not below the stride 2 x 2");
  c = deconv_spec();
  c.flags = 1;
  refused(deconv_graph(c), "flags 1 are not supported");
  c = deconv_spec();
  c.pad_left = 5000;
  refused(deconv_graph(c), "padding left 5000; Ember's engine takes 0 to 4096");
  // Without the adjustment the output would be [1, 7, 9, 4].
  c = deconv_spec();
  c.adjustment_h = 0;
  refused(deconv_graph(c),
          "output [1, 8, 10, 4] does not follow from input [1, 4, 5, 3], the window and the "
          "adjustment");
  // Static int8: the engine's integer convolution has no transposed form.
  GraphSpec g = deconv_graph(deconv_spec());
  for (const uint32_t id : {0u, 1u, 4u, 5u}) {
    g.values[id].dtype = fb::Datatype::qint8;
    g.values[id].quantized = true;
    g.values[id].quant = fb::QuantParams::PerTensorQuant;
    g.values[id].scale = 0.5f;
  }
  refused(g,
          "a static int8 transposed convolution (input qint8, filter fp32, output qint8): "
          "Ember's integer convolution (QuantConv) has no transposed form; Ember runs "
          "ConvTranspose2d in float (fp32, fp16, bf16) only");
}

TEST(XnnTranslateRefusal, AQuantizedValueInAFloatNode) {
  GraphSpec g = fc_graph();
  g.values[2] = constant(2, 2, {2, 3});
  g.values[2].dtype = fb::Datatype::qint8;
  g.values[2].quantized = true;
  g.values[2].quant = fb::QuantParams::PerTensorQuant;
  g.values[2].scale = 0.5f;
  g.values[3].dims = {2, 3};
  g.values.push_back(internal(4, {2, 3}));
  g.values[3].id = 4;  // the output is the Add's
  g.values[4].id = 3;
  g.output_ids = {4};
  g.nodes = {fully_connected(0, 1, kNone, 3), node2x1(fb::NodeUnion::XNNAdd, 3, 2, 4, /*debug=*/7)};
  Translated t = translate_blob(build(g));
  ASSERT_FALSE(t.translation.ok());
  EXPECT_EQ(t.translation.error(), Error::NotSupported);
  EXPECT_STREQ(
      last_error_message(),
      "XNNPACK delegate: node 1 (XNNAdd, debug handle 7): input 1 (value 2) is qint8 (a "
      "constant); Ember runs this node on float (fp32, fp16, bf16) and per-tensor int8 values");
}

// Delegate inputs and outputs the runtime converts: fp32, fp16, bf16, qint8 per tensor. Others
// (quint8 here) are refused naming the value; so is an int8 grid the conversion cannot compute.
TEST(XnnTranslateRefusal, AQuantizedDelegateInput) {
  GraphSpec g = add_graph();
  g.values[0].dtype = fb::Datatype::quint8;
  g.values[0].quantized = true;
  g.values[0].quant = fb::QuantParams::PerTensorQuant;
  Translated t = translate_blob(build(g));
  ASSERT_FALSE(t.translation.ok());
  EXPECT_STREQ(last_error_message(),
               "XNNPACK delegate: input 0 (value 0) is quint8 (per tensor); Ember runs fp32, fp16, "
               "bf16 and per-tensor int8 (qint8) delegate inputs");
}

TEST(XnnTranslateRefusal, AnInt8DelegateOutputWithAZeroScale) {
  GraphSpec g = add_graph();
  for (ValueSpec& v : g.values) {
    v.dtype = fb::Datatype::qint8;
    v.quantized = true;
    v.quant = fb::QuantParams::PerTensorQuant;
    v.scale = 0.5f;
  }
  {
    Translated t = translate_blob(build(g));
    ASSERT_TRUE(t.translation.ok()) << last_error_message();
  }
  g.values[2].scale = 0;
  Translated t = translate_blob(build(g));
  ASSERT_FALSE(t.translation.ok());
  EXPECT_NE(std::string(last_error_message())
                .find("output 0 (value 2) is qint8 with scale 0 and zero point 0"),
            std::string::npos)
      << last_error_message();
}

// fp16 and bf16 constants become float32 weights, widened exactly (the engine computes in float32).
TEST(XnnTranslate, HalfConstantsAreWidenedToFloat32) {
  for (const fb::Datatype dtype : {fb::Datatype::fp16, fb::Datatype::bf16}) {
    SCOPED_TRACE(static_cast<int>(dtype));
    GraphSpec g;
    g.values = {input(0, 0, {2}), constant(1, 1, {2}), output(2, 1, {2})};
    for (ValueSpec& v : g.values) v.dtype = dtype;
    // fp16 1.5 and -2^-24 (the smallest subnormal); bf16 1.5 and -2^-133 (a subnormal).
    const std::vector<uint16_t> bits = dtype == fb::Datatype::fp16
                                           ? std::vector<uint16_t>{0x3E00, 0x8001}
                                           : std::vector<uint16_t>{0x3FC0, 0x8001};
    const std::vector<float> want = dtype == fb::Datatype::fp16
                                        ? std::vector<float>{1.5f, -0x1p-24f}
                                        : std::vector<float>{1.5f, -0x1p-133f};
    g.constant_data.resize(4);
    std::memcpy(g.constant_data.data(), bits.data(), 4);
    g.constants = {{0, 4, ""}};
    g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 2)};
    g.input_ids = {0};
    g.output_ids = {2};
    Translated t = translate_blob(build(g));
    ASSERT_TRUE(t.translation.ok()) << last_error_message();
    expect_verifies(t.translation->graph);
    const cpu::CpuGraph& cg = t.translation->graph;
    ASSERT_EQ(cg.weights.size(), 1u);
    EXPECT_EQ(cg.weights[0].nbytes, 8u);
    float got[2];
    ASSERT_EQ(t.translation->weights->load_data_into(cg.weights[0].key, got, 8), Error::Ok);
    EXPECT_EQ(got[0], want[0]);
    EXPECT_EQ(got[1], want[1]);
  }
}

TEST(XnnTranslateRefusal, AConstantOfTheWrongByteSize) {
  GraphSpec g = fc_graph();
  g.constants[1].size = 8;
  Translated t = translate_blob(build(g));
  ASSERT_FALSE(t.translation.ok());
  EXPECT_NE(std::string(last_error_message())
                .find("node 0 (XNNFullyConnected, debug handle 0): constant value 2 has 3 "
                      "elements but 8 bytes"),
            std::string::npos)
      << last_error_message();
}

// Found by payload_fuzz (testdata/fuzz_regressions/fc_zero_filter_dim.xnn): a filter with a zero
// dim divided the element count by zero. Every value with a zero dim is refused up front.
TEST(XnnTranslateRefusal, AFullyConnectedFilterWithAZeroDim) {
  GraphSpec g = fc_graph();
  g.values[1].dims = {3, 0};
  g.values[0].dims = {2, 0};
  g.constants[0].size = 0;
  Translated t = translate_blob(build(g));
  ASSERT_FALSE(t.translation.ok());
  EXPECT_NE(std::string(last_error_message()).find("value 0 has a dim of size 0"),
            std::string::npos)
      << last_error_message();
}

// Found by xnnpack_corruption_test under ASan (mlp.pte, a dims count overwritten): an element-wise
// node whose output had another rank than its input read past the input's permutation.
TEST(XnnTranslateRefusal, AnElementwiseNodeChangingDims) {
  for (const fb::NodeUnion type : {fb::NodeUnion::XNNSigmoid, fb::NodeUnion::XNNSoftmax}) {
    GraphSpec g;
    g.values = {input(0, 0, {2, 3}), output(1, 1, {2, 3, 4})};
    g.nodes = {node1x1(type, 0, 1)};
    g.input_ids = {0};
    g.output_ids = {1};
    Translated t = translate_blob(build(g));
    ASSERT_FALSE(t.translation.ok());
    EXPECT_NE(std::string(last_error_message()).find("output [2, 3, 4], input [2, 3]"),
              std::string::npos)
        << last_error_message();
  }
}

// ExecuTorch's payloads translate into graphs the engine's verifier accepts. The quantized ones
// keep their per-channel scales in the program's named data, which a payload alone lacks: their
// refusal names the node and the missing key (the programs in testdata/programs run whole, in
// cli_test and the e2e test).
// ExecuTorch's ConvTranspose2d(3, 4, 3, stride=2, padding=1, output_padding=1) and its relu:
// one transposed Conv with the relu fused, the filter the payload's bytes re-described.
TEST(XnnTranslate, ExportedConvTranspose2d) {
  Translated t = translate_blob(read_file(EMBER_XNNPACK_TESTDATA "/fuzz_seeds/deconv.xnn"));
  ASSERT_TRUE(t.translation.ok()) << last_error_message();
  const cpu::CpuGraph& cg = t.translation->graph;
  ASSERT_EQ(op_kinds(cg), std::vector<OpKind>{OpKind::Conv});
  const cpu::OpDesc& op = cg.ops[0];
  EXPECT_TRUE(op.conv().transposed);
  EXPECT_EQ(op.conv().pad_r, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(op.conv().output_padding, (std::vector<int64_t>{1, 1}));
  ASSERT_EQ(op.post_ops.size(), 1u);
  EXPECT_EQ(op.post_ops[0].alg, cpu::EltwiseAlg::Relu);
  EXPECT_EQ(cg.tensors[op.inputs[1]].dims, (std::vector<int64_t>{3, 4, 3, 3}));
  EXPECT_EQ(cg.tensors[op.output].dims, (std::vector<int64_t>{1, 4, 10, 12}));
  expect_verifies(cg);
}

TEST(XnnTranslate, ExportedSeeds) {
  const std::string dir = EMBER_XNNPACK_TESTDATA "/fuzz_seeds/";
  for (const char* name :
       {"mlp.xnn", "convnet.xnn", "add.xnn", "add_headerless.xnn", "misc.xnn", "deconv.xnn"}) {
    SCOPED_TRACE(name);
    Translated t = translate_blob(read_file(dir + name));
    ASSERT_TRUE(t.translation.ok()) << last_error_message();
    expect_verifies(t.translation->graph);
  }
  for (const char* name : {"mlp_qs8.xnn", "mlp_qd8.xnn", "convnet_qs8.xnn"}) {
    SCOPED_TRACE(name);
    Translated t = translate_blob(read_file(dir + name));
    ASSERT_FALSE(t.translation.ok());
    const std::string message = last_error_message();
    EXPECT_NE(message.find("XNNPACK delegate: node "), std::string::npos) << message;
    EXPECT_NE(message.find("is named data 'scale_"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace ember::xnn
