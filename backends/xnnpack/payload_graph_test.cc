// read_payload (payload.h) on the graph a payload holds: one test per malformation of its values,
// arguments and nodes, what it refuses and with which message (the header's and the accepted
// payloads are payload_test.cc's).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/payload_refusal_test_util.h"
#include "backends/xnnpack/payload_test_util.h"

namespace ember::xnn {
namespace {

using namespace ember::xnn::testing;

// Refused: values

TEST(XnnPayloadRefusal, NoValues) {
  GraphSpec g = add_graph();
  g.values.clear();
  expect_refused(g, "no values");
}

TEST(XnnPayloadRefusal, AValueThatIsNotATensor) {
  GraphSpec g = add_graph();
  g.values[1].not_a_tensor = true;
  expect_refused(g, "value 1 is not a tensor");
}

TEST(XnnPayloadRefusal, AValueIdUsedTwice) {
  GraphSpec g = add_graph();
  g.values[1].id = 0;
  expect_refused(g, "value 1 has id 0: ids must be 0..2, each once");
}

TEST(XnnPayloadRefusal, AValueIdOutOfRange) {
  GraphSpec g = add_graph();
  g.values[2].id = 3;
  expect_refused(g, "value 2 has id 3: ids must be 0..2, each once");
}

TEST(XnnPayloadRefusal, AnInvalidDatatype) {
  GraphSpec g = add_graph();
  g.values[1].dtype = fb::Datatype::invalid;
  expect_refused(g, "value 1 has datatype 0");
  g.values[1].dtype = static_cast<fb::Datatype>(99);
  expect_refused(g, "value 1 has datatype 99");
}

TEST(XnnPayloadRefusal, MoreThanSixDims) {
  GraphSpec g = add_graph();
  g.values[0].dims = {1, 1, 1, 1, 1, 2, 3};
  expect_refused(g, "value 0 has 7 dims (num_dims 7); at most 6");
}

TEST(XnnPayloadRefusal, NumDimsDisagreeingWithTheDims) {
  GraphSpec g = add_graph();
  g.values[0].num_dims = 3;
  expect_refused(g, "value 0 has 2 dims (num_dims 3)");
}

TEST(XnnPayloadRefusal, AnElementCountPast2To40) {
  GraphSpec g = add_graph();
  g.values[1].dims = {1u << 20, 1u << 20, 2};
  expect_refused(g, "value 1 has more than 2^40 elements");
}

TEST(XnnPayloadRefusal, AQuantizationAskedAtRunTime) {
  GraphSpec g = add_graph();
  g.values[0].dq_datatype = fb::Datatype::qint8;
  expect_refused(g, "quantized at run time");
}

TEST(XnnPayloadRefusal, AConstantIndexOutOfRange) {
  GraphSpec g = fc_graph();
  g.values[2].constant = 5;
  expect_refused(g, "value 2 is constant 5, of 3");
}

TEST(XnnPayloadRefusal, AConstantOutsideTheConstantData) {
  GraphSpec g = fc_graph();
  g.constants[1].offset = 70;
  expect_refused(g, "constant 2's bytes [70, +12) are not inside the 76 bytes of constant data");
  g = fc_graph();
  g.constants[0].size = 1000;
  expect_refused(g, "constant 1's bytes [0, +1000)");
  g = fc_graph();
  g.constants[0].offset = ~uint64_t{0} - 4;  // offset + size wraps
  expect_refused(g, "constant 1's bytes");
}

TEST(XnnPayloadRefusal, AValueBothConstantAndExternal) {
  GraphSpec g = fc_graph();
  g.values[1].flags = 1;
  g.values[1].external_id = 0;
  expect_refused(g, "value 1 is both a constant and external");
}

TEST(XnnPayloadRefusal, ConstantBufferInAnXN01Payload) {
  GraphSpec g = add_graph();
  g.inline_buffers = {{}, {1, 2, 3, 4}};
  expect_refused(g, "an XN01 payload with constant_buffer");
}

// Refused: quantization

TEST(XnnPayloadRefusal, AQuantizedValueWithoutParameters) {
  GraphSpec g = add_graph();
  g.values[0].quantized = true;
  g.values[0].dtype = fb::Datatype::qint8;
  expect_refused(g, "value 0: a quantized value without quantization parameters");
}

TEST(XnnPayloadRefusal, AChannelDimOutOfRange) {
  GraphSpec g = fc_graph();
  ValueSpec& w = g.values[1];
  w.dtype = fb::Datatype::qcint8;
  w.quantized = true;
  w.quant = fb::QuantParams::PerChannelQuant;
  w.scales = {1, 1, 1};
  w.channel_dim = 2;
  expect_refused(g, "value 1: channel dim 2 of a rank-2 value");
  w.channel_dim = -1;
  expect_refused(g, "value 1: channel dim -1 of a rank-2 value");
}

TEST(XnnPayloadRefusal, ScalesAsAConstantOutOfRange) {
  GraphSpec g = fc_graph();
  ValueSpec& w = g.values[1];
  w.dtype = fb::Datatype::qcint8;
  w.quantized = true;
  w.quant = fb::QuantParams::PerChannelQuant;
  w.scale_buffer_idx = 9;
  w.num_scales = 3;
  expect_refused(g, "value 1: its scales are constant 9, of 3");
}

TEST(XnnPayloadRefusal, ScalesBothInlineAndAsConstant) {
  GraphSpec g = fc_graph();
  ValueSpec& w = g.values[1];
  w.dtype = fb::Datatype::qcint8;
  w.quantized = true;
  w.quant = fb::QuantParams::PerChannelQuant;
  w.scales = {1, 1, 1};
  w.scale_buffer_idx = 2;
  expect_refused(g, "value 1: scales both inline and as constant");
}

TEST(XnnPayloadRefusal, AGroupSizeNotPositive) {
  GraphSpec g = fc_graph();
  ValueSpec& w = g.values[1];
  w.dtype = fb::Datatype::qbint4;
  w.quantized = true;
  w.quant = fb::QuantParams::PerChannelGroupQuant;
  w.scales = {1, 1, 1, 1, 1, 1};
  w.group_size = 0;
  expect_refused(g, "value 1: group size 0");
}

TEST(XnnPayloadRefusal, MoreNonBatchDimsThanTheRank) {
  GraphSpec g = add_graph();
  ValueSpec& x = g.values[0];
  x.dtype = fb::Datatype::qdint8;
  x.quantized = true;
  x.quant = fb::QuantParams::PerTokenDynamicQuant;
  x.num_nonbatch_dims = 3;
  expect_refused(g, "value 0: 3 non-batch dims of 2");
}

// Refused: the delegate's arguments

TEST(XnnPayloadRefusal, NoOutputs) {
  GraphSpec g = add_graph();
  g.output_ids.clear();
  expect_refused(g, "no outputs");
}

TEST(XnnPayloadRefusal, AnArgumentThatIsNoValue) {
  GraphSpec g = add_graph();
  g.input_ids = {0, 7};
  expect_refused(g, "argument value 7 is absent");
}

TEST(XnnPayloadRefusal, ExternalIdsNotTheArgumentPositions) {
  GraphSpec g = add_graph();
  g.values[1].external_id = 5;
  expect_refused(g,
                 "argument 1 is value 1, which is not external input 1 (flags 1, external id 5)");
  g = add_graph();
  g.values[1].external_id = 0;  // two inputs claim argument 0
  expect_refused(g, "which is not external input 1");
}

TEST(XnnPayloadRefusal, AnInputWithoutTheInputFlag) {
  GraphSpec g = add_graph();
  g.values[1].flags = 0;
  expect_refused(g, "argument 1 is value 1, which is not external input 1 (flags 0");
}

TEST(XnnPayloadRefusal, AnOutputListedAsInput) {
  GraphSpec g = add_graph();
  g.input_ids = {0, 2};
  g.values[2].external_id = 1;
  expect_refused(g, "which is not external input 1 (flags 2");
}

TEST(XnnPayloadRefusal, NumExternsDisagreeingWithTheArguments) {
  GraphSpec g = add_graph();
  g.num_externs = 5;
  expect_refused(g, "num_externs is 5, with 2 inputs and 1 outputs");
}

TEST(XnnPayloadRefusal, AnExternalValueThatIsNoArgument) {
  GraphSpec g = fc_graph();
  g.values[2].constant = 0;
  g.values[2].flags = 1;
  g.values[2].external_id = 7;  // external, but not among input_ids
  expect_refused(g, "value 2 has flags 1 but is not among input_ids and output_ids");
}

// Found by payload_fuzz (testdata/fuzz_regressions/unlisted_external_flag.xnn): a value flagged
// external input but absent from input_ids counted as defined, and translate, which maps only
// listed inputs, then read it unmapped.
TEST(XnnPayloadRefusal, AnUnlistedValueFlaggedExternal) {
  GraphSpec g = add_graph();
  g.values.push_back(input(3, 1, {2, 3}));  // flagged, not listed
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 3, 2)};
  g.num_externs = 3;
  expect_refused(g, "value 3 has flags 1 but is not among input_ids and output_ids");
}

TEST(XnnPayloadRefusal, FlagsOtherThanInputOrOutput) {
  GraphSpec g = add_graph();
  g.values[1].flags = 1 | 4;
  expect_refused(g, "argument 1 is value 1, which is not external input 1 (flags 5");
  g = add_graph();
  g.values[2].flags = 3;  // both an input and an output
  expect_refused(g, "argument 2 is value 2, which is not external output 2 (flags 3");
}

// Refused: nodes

TEST(XnnPayloadRefusal, ANodeReadingAValueNothingWrote) {
  GraphSpec g = add_graph();
  g.values.push_back(internal(3, {2, 3}));
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 3, 2)};
  expect_refused(g, "node 0 (XNNAdd) reads value 3 as input 1, which nothing has written yet");
}

TEST(XnnPayloadRefusal, ANodeReadingAValueWrittenLater) {
  GraphSpec g = add_graph();
  g.values.push_back(internal(3, {2, 3}));
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 3, 1, 2), node1x1(fb::NodeUnion::XNNSigmoid, 0, 3)};
  expect_refused(g, "node 0 (XNNAdd) reads value 3 as input 0, which nothing has written yet");
}

TEST(XnnPayloadRefusal, ANodeReadingAValueThatDoesNotExist) {
  GraphSpec g = add_graph();
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 40, 2)};
  expect_refused(g, "node 0 (XNNAdd) reads value 40 as input 1, which does not exist");
}

TEST(XnnPayloadRefusal, AnOptionalInputOnlyWhereTheNodeTypeHasOne) {
  GraphSpec g = add_graph();
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, kNone, 2)};
  expect_refused(g, "reads value 4294967295 as input 1, which does not exist");
}

TEST(XnnPayloadRefusal, AValueWrittenTwice) {
  GraphSpec g = add_graph();
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 2), node2x1(fb::NodeUnion::XNNMultiply, 0, 1, 2)};
  expect_refused(g, "node 1 (XNNMultiply) writes value 2, which is already defined");
}

TEST(XnnPayloadRefusal, ANodeWritingAnInputOrAConstant) {
  GraphSpec g = add_graph();
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 1)};
  expect_refused(g, "node 0 (XNNAdd) writes value 1, which is already defined");
  g = fc_graph();
  g.nodes = {fully_connected(0, 1, 2, 2)};
  expect_refused(g, "node 0 (XNNFullyConnected) writes value 2, which is already defined");
}

TEST(XnnPayloadRefusal, ANodeWritingAValueThatDoesNotExist) {
  GraphSpec g = add_graph();
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 9)};
  expect_refused(g, "node 0 (XNNAdd) writes value 9, which does not exist");
}

TEST(XnnPayloadRefusal, AnUnknownNodeType) {
  GraphSpec g = add_graph();
  g.nodes = {raw_node(200, 0, 2)};
  expect_refused(g, "node 0 has node type 200, which this reader does not know");
  g.nodes = {raw_node(0, 0, 2)};
  expect_refused(g, "node 0 has node type 0, which this reader does not know");
}

TEST(XnnPayloadRefusal, TooManyParameters) {
  GraphSpec g = add_graph();
  std::vector<uint32_t> perm(65, 0);
  g.nodes = {transpose(perm, 0, 2)};
  expect_refused(g, "node 0 (XNNStaticTranspose) has 65 parameters");
}

// Found by payload_fuzz (testdata/fuzz_regressions/conv_groups_overflow.xnn): groups times
// output channels per group, each near 2^32, overflowed int64 in translate.
TEST(XnnPayloadRefusal, AWindowParameterPast2To24) {
  GraphSpec g;
  g.values = {input(0, 0, {1, 4, 4, 2}), constant(1, 1, {2, 1, 1, 2}), output(2, 1, {1, 4, 4, 2})};
  ConvSpec c;
  c.groups = 0xFF000000u;
  c.go = 0xFFFFFFFCu;
  g.nodes = {conv(fb::NodeUnion::XNNConv2d, c, 0, 1, kNone, 2)};
  g.input_ids = {0};
  g.output_ids = {2};
  g.constant_data.resize(16);
  g.constants = {{0, 16, ""}};
  expect_refused(g, "node 0 (XNNConv2d) has a window parameter of 4278190080, past 2^24");
  c.groups = 1;
  c.go = 2;
  c.gi = 2;
  c.kh = 1u << 25;
  g.nodes = {conv(fb::NodeUnion::XNNConv2d, c, 0, 1, kNone, 2)};
  expect_refused(g, "has a window parameter of 33554432");
  c.kh = 1;
  g.nodes = {conv(fb::NodeUnion::XNNConv2d, c, 0, 1, kNone, 2)};
  EXPECT_TRUE(read(build(g)).ok()) << last_error_message();
}

TEST(XnnPayloadRefusal, AnOutputNeverWritten) {
  GraphSpec g = add_graph();
  g.nodes.clear();
  expect_refused(g, "output value 2 is never written");
}

}  // namespace
}  // namespace ember::xnn
