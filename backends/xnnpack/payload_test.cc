// read_payload (payload.h): payloads it accepts and, one test per malformation, what it refuses
// and with which message. Payloads are built with flatbuffers' builder (payload_test_util.h), or
// are ExecuTorch's own (testdata/fuzz_seeds: exported by XnnpackPartitioner, README.md).
#include "backends/xnnpack/payload.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "backends/xnnpack/payload_refusal_test_util.h"
#include "backends/xnnpack/payload_test_util.h"
#include "runtime/core/error.h"

namespace ember::xnn {
namespace {

using namespace ember::xnn::testing;

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

}  // namespace
}  // namespace ember::xnn
