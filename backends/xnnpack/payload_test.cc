// read_payload (payload.h): payloads it accepts and, one test per malformation, what it refuses
// and with which message. Payloads are built with flatbuffers' builder (payload_test_util.h), or
// are ExecuTorch's own (testdata/fuzz_seeds: exported by XnnpackPartitioner, README.md).
#include "backends/xnnpack/payload.h"

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

Result<Payload> read(const std::vector<uint8_t>& blob) {
  clear_error_message();
  return read_payload(blob);
}

// Refused as InvalidProgram, the message containing `why`.
void expect_refused(const std::vector<uint8_t>& blob, const std::string& why) {
  Result<Payload> p = read(blob);
  ASSERT_FALSE(p.ok()) << "accepted; expected a refusal with '" << why << "'";
  EXPECT_EQ(p.error(), Error::InvalidProgram);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("XNNPACK payload: "), std::string::npos) << message;
  EXPECT_NE(message.find(why), std::string::npos) << message;
}

void expect_refused(const GraphSpec& g, const std::string& why) { expect_refused(build(g), why); }

// Accepted

TEST(XnnPayload, ReadsAHeaderAndAnXN01Flatbuffer) {
  Result<Payload> p = read(build(add_graph()));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->identifier, "XN01");
  EXPECT_EQ(p->version, "0");
  ASSERT_EQ(p->values.size(), 3u);
  EXPECT_EQ(p->values[2].dims, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(p->values[2].dtype, Datatype::Fp32);
  EXPECT_EQ(p->values[2].flags, kExternalOutput);
  ASSERT_EQ(p->nodes.size(), 1u);
  EXPECT_EQ(p->nodes[0].type, NodeType::Add);
  EXPECT_EQ(p->nodes[0].debug_handle, 5u);
  EXPECT_EQ(p->nodes[0].inputs, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(p->nodes[0].outputs, (std::vector<uint32_t>{2}));
  EXPECT_EQ(p->inputs, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(p->outputs, (std::vector<uint32_t>{2}));
  EXPECT_EQ(p->constants.size(), 1u);
  EXPECT_STREQ(node_type_name(p->nodes[0].type), "XNNAdd");
}

TEST(XnnPayload, ConstantsAreRangesOfTheConstantData) {
  const GraphSpec g = fc_graph();
  const std::vector<uint8_t> blob = build(g);
  Result<Payload> p = read(blob);
  ASSERT_TRUE(p.ok()) << last_error_message();
  ASSERT_EQ(p->constants.size(), 3u);
  EXPECT_EQ(p->constant_data.size(), g.constant_data.size());
  EXPECT_GE(p->constant_data.data(), blob.data());
  EXPECT_EQ(p->constants[2].offset, 64u);
  EXPECT_EQ(p->constants[2].size, 12u);
  float bias0 = 0;
  std::memcpy(&bias0, p->constant_data.data() + p->constants[2].offset, 4);
  EXPECT_EQ(bias0, 0.5f);
  EXPECT_EQ(p->values[1].constant, 1u);
  EXPECT_EQ(p->nodes[0].type, NodeType::FullyConnected);
  EXPECT_EQ(p->nodes[0].inputs, (std::vector<uint32_t>{0, 1, 2}));
}

TEST(XnnPayload, ReadsAFlatbufferWithoutHeader) {
  GraphSpec g = add_graph();
  g.header = false;
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->nodes.size(), 1u);
  EXPECT_TRUE(p->constant_data.empty());
}

TEST(XnnPayload, ReadsXN00WithConstantsInsideTheFlatbuffer) {
  GraphSpec g = fc_graph();
  g.identifier = "XN00";
  g.constant_data.clear();
  g.constants.clear();
  g.inline_buffers = {{}, std::vector<uint8_t>(48, 1), std::vector<uint8_t>(12, 2)};
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->identifier, "XN00");
  ASSERT_EQ(p->constants.size(), 3u);
  EXPECT_TRUE(p->constants[1].is_inline);
  EXPECT_EQ(p->constants[1].size, 48u);
  EXPECT_EQ(p->constants[2].inline_bytes, std::vector<uint8_t>(12, 2));
}

// ExecuTorch lists input_ids in the order values are defined, not in argument order: the
// argument a value binds to is its external id (x + y * y defines y first).
TEST(XnnPayload, InputsAreInExternalIdOrder) {
  GraphSpec g = add_graph();
  g.values[0].external_id = 1;
  g.values[1].external_id = 0;
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->inputs, (std::vector<uint32_t>{1, 0}));
}

TEST(XnnPayload, OutputsAreInExternalIdOrder) {
  GraphSpec g;
  g.values = {input(0, 0, {2}), output(1, 2, {2}), output(2, 1, {2})};
  g.nodes = {node1x1(fb::NodeUnion::XNNSigmoid, 0, 1), node1x1(fb::NodeUnion::XNNTanh, 0, 2)};
  g.input_ids = {0};
  g.output_ids = {1, 2};
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->outputs, (std::vector<uint32_t>{2, 1}));
}

TEST(XnnPayload, ReadsQuantizationParameters) {
  GraphSpec g = fc_graph();
  ValueSpec& w = g.values[1];
  w.dtype = fb::Datatype::qcint8;
  w.quantized = true;
  w.quant = fb::QuantParams::PerChannelQuant;
  w.scales = {0.5f, 0.25f, 0.125f};
  w.channel_dim = 0;
  ValueSpec& x = g.values[0];
  x.dtype = fb::Datatype::qint8;
  x.quantized = true;
  x.quant = fb::QuantParams::PerTensorQuant;
  x.scale = 0.1f;
  x.zero_point = -3;
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->values[1].quant.kind, Quant::Kind::PerChannel);
  EXPECT_EQ(p->values[1].quant.scales, (std::vector<float>{0.5f, 0.25f, 0.125f}));
  EXPECT_EQ(p->values[1].quant.num_scales, 3u);
  EXPECT_EQ(p->values[0].quant.kind, Quant::Kind::PerTensor);
  EXPECT_EQ(p->values[0].quant.scale, 0.1f);
  EXPECT_EQ(p->values[0].quant.zero_point, -3);
  EXPECT_STREQ(datatype_name(p->values[1].dtype), "qcint8");
}

TEST(XnnPayload, ReadsGroupQuantizationWithScalesAsConstant) {
  GraphSpec g = fc_graph();
  ValueSpec& w = g.values[1];
  w.dtype = fb::Datatype::qbint4;
  w.quantized = true;
  w.quant = fb::QuantParams::PerChannelGroupQuant;
  w.channel_dim = 0;
  w.group_size = 2;
  w.scale_buffer_idx = 2;
  w.num_scales = 6;
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->values[1].quant.kind, Quant::Kind::PerChannelGroup);
  EXPECT_EQ(p->values[1].quant.group_size, 2);
  EXPECT_EQ(p->values[1].quant.scale_constant, 2u);
  EXPECT_EQ(p->values[1].quant.num_scales, 6u);
}

TEST(XnnPayload, ReadsAFusedOutputClamp) {
  GraphSpec g;
  g.values = {input(0, 0, {4}), output(1, 1, {4})};
  g.nodes = {clamp_node(0, 1, -1.5f, 6)};
  g.input_ids = {0};
  g.output_ids = {1};
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_TRUE(p->nodes[0].has_output_min_max);
  EXPECT_EQ(p->nodes[0].output_min, -1.5f);
  EXPECT_EQ(p->nodes[0].output_max, 6.0f);
}

TEST(XnnPayload, AnAbsentBiasIsNoValue) {
  GraphSpec g = fc_graph();
  g.nodes = {fully_connected(0, 1, kNone, 3)};
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  EXPECT_EQ(p->nodes[0].inputs[2], kNoValue);
}

// A transposed convolution's every window field, its adjustment (PyTorch's output_padding)
// included, and its absent bias.
TEST(XnnPayload, ReadsAConvTranspose2d) {
  GraphSpec g;
  g.values = {input(0, 0, {1, 3, 4, 4}), constant(1, 1, {6, 3, 2, 2}), output(2, 1, {1, 7, 10, 6})};
  g.constant_data.resize(6 * 3 * 2 * 2 * 4);
  g.constants = {{0, 6 * 3 * 2 * 2 * 4, ""}};
  NodeConvSpec c;
  uint32_t* const fields[] = {&c.pad_top,    &c.pad_right,    &c.pad_bottom,   &c.pad_left,
                              &c.kh,         &c.kw,           &c.stride_h,     &c.stride_w,
                              &c.dilation_h, &c.dilation_w,   &c.gi,           &c.go,
                              &c.groups,     &c.adjustment_h, &c.adjustment_w, &c.flags};
  for (uint32_t i = 0; i < 16; ++i) *fields[i] = i + 1;  // each field its own value
  g.nodes = {conv_node(fb::NodeUnion::XNNConvTranspose2d, c, 0, 1, kNone, 2)};
  g.input_ids = {0};
  g.output_ids = {2};
  Result<Payload> p = read(build(g));
  ASSERT_TRUE(p.ok()) << last_error_message();
  const Node& n = p->nodes[0];
  EXPECT_EQ(n.type, NodeType::ConvTranspose2d);
  EXPECT_STREQ(node_type_name(n.type), "XNNConvTranspose2d");
  const Window& w = n.window;
  const uint32_t got[] = {w.pad_top,
                          w.pad_right,
                          w.pad_bottom,
                          w.pad_left,
                          w.kernel_h,
                          w.kernel_w,
                          w.stride_h,
                          w.stride_w,
                          w.dilation_h,
                          w.dilation_w,
                          w.group_input_channels,
                          w.group_output_channels,
                          w.groups,
                          w.adjustment_h,
                          w.adjustment_w,
                          n.flags};
  for (uint32_t i = 0; i < 16; ++i) EXPECT_EQ(got[i], i + 1) << "field " << i;
  EXPECT_EQ(n.inputs, (std::vector<uint32_t>{0, 1, kNoValue}));
  EXPECT_EQ(n.outputs, (std::vector<uint32_t>{2}));
  // An adjustment past 2^24, as any window parameter, is refused.
  c.adjustment_w = 1u << 25;
  g.nodes = {conv_node(fb::NodeUnion::XNNConvTranspose2d, c, 0, 1, kNone, 2)};
  expect_refused(g, "node 0 (XNNConvTranspose2d) has a window parameter of 33554432, past 2^24");
}

// ExecuTorch's own payloads (testdata/fuzz_seeds/README.md says how they were made).
TEST(XnnPayload, ReadsEveryExportedSeed) {
  size_t files = 0;
  for (const auto& e : std::filesystem::directory_iterator(EMBER_XNNPACK_TESTDATA "/fuzz_seeds")) {
    if (e.path().extension() != ".xnn") continue;
    const std::vector<uint8_t> blob = read_file(e.path().string());
    Result<Payload> p = read(blob);
    EXPECT_TRUE(p.ok()) << e.path() << ": " << last_error_message();
    if (p.ok()) {
      EXPECT_FALSE(p->nodes.empty()) << e.path();
    }
    ++files;
  }
  EXPECT_GE(files, 6u);
}

// Refused: the header and the ranges it gives

TEST(XnnPayloadRefusal, AnEmptyBlob) { expect_refused(std::vector<uint8_t>{}, "has 0 bytes"); }

// Without "XH00" at bytes 4..8 the blob is taken for a flatbuffer alone (the format before the
// header), whose identifier sits there instead.
TEST(XnnPayloadRefusal, AnUnknownHeaderMagic) {
  std::vector<uint8_t> blob = build(add_graph());
  blob[7] = '1';  // "XH01"
  expect_refused(blob, "the flatbuffer's identifier is not XN01 or XN00");
}

TEST(XnnPayloadRefusal, ATruncatedHeader) {
  std::vector<uint8_t> blob = build(add_graph());
  blob.resize(20);
  expect_refused(blob, "the header is truncated");
}

TEST(XnnPayloadRefusal, AHeaderLengthBelow30) {
  std::vector<uint8_t> blob = build(add_graph());
  blob[8] = 20;
  expect_refused(blob, "the header says it has 20 bytes, below 30");
}

TEST(XnnPayloadRefusal, AFlatbufferRangeOutsideTheBlob) {
  std::vector<uint8_t> blob = build(add_graph());
  blob[14] = 0xF0;  // the flatbuffer's size
  blob[15] = 0xFF;
  expect_refused(blob, "the flatbuffer's range");
}

TEST(XnnPayloadRefusal, AFlatbufferInsideTheHeader) {
  std::vector<uint8_t> blob = build(add_graph());
  blob[10] = 8;  // the flatbuffer's offset
  expect_refused(blob, "the flatbuffer's range [8,");
}

TEST(XnnPayloadRefusal, AConstantDataRangeOutsideTheBlob) {
  std::vector<uint8_t> blob = build(fc_graph());
  blob[22] = 0xFF;  // the constant data's size
  expect_refused(blob, "the constant data's range");
  blob = build(fc_graph());
  blob[29] = 0x80;  // a size past 2^63
  expect_refused(blob, "the constant data's range");
}

TEST(XnnPayloadRefusal, ConstantDataOverlappingTheFlatbuffer) {
  std::vector<uint8_t> blob = build(fc_graph());
  blob[18] = 40;  // the constant data's offset, inside the flatbuffer
  blob[19] = 0;
  expect_refused(blob, "is not inside the");
}

TEST(XnnPayloadRefusal, ABadIdentifier) {
  GraphSpec g = add_graph();
  g.identifier = "XN99";
  expect_refused(g, "the flatbuffer's identifier is not XN01 or XN00");
}

TEST(XnnPayloadRefusal, AFlatbufferTheVerifierRejects) {
  GraphSpec g = add_graph();
  g.header = false;
  std::vector<uint8_t> blob = build(g);
  blob.resize(blob.size() / 2);
  expect_refused(blob, "fails verification");
  // Inside a header: the flatbuffer's size cut, the blob intact.
  std::vector<uint8_t> framed = build(add_graph());
  framed[14] = 40;
  framed[15] = 0;
  expect_refused(framed, "fails verification");
}

TEST(XnnPayloadRefusal, EveryTruncationOfAValidPayload) {
  GraphSpec g = fc_graph();
  g.header = false;
  const std::vector<uint8_t> blob = build(g);
  for (size_t n = 0; n + 1 < blob.size(); ++n) {
    const std::vector<uint8_t> cut(blob.begin(), blob.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(read(cut).ok()) << "cut to " << n << " bytes";
  }
}

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
