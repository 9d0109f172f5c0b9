#include "backends/xnnpack/payload_test_util.h"

#include <cstring>
#include <fstream>
#include <iterator>

namespace ember::xnn::testing {
namespace {

flatbuffers::Offset<fb::Value> make_value(flatbuffers::FlatBufferBuilder& b, const ValueSpec& v) {
  if (v.not_a_tensor) return fb::CreateValue(b);
  const auto dims = b.CreateVector(v.dims);
  const auto t =
      fb::CreateTensorValue(b, v.dtype, v.num_dims.value_or(static_cast<uint32_t>(v.dims.size())),
                            dims, v.constant, v.external_id, v.flags, v.id, v.dq_datatype);
  if (!v.quantized) return fb::CreateValue(b, fb::ValueUnion::TensorValue, t.Union());
  flatbuffers::Offset<void> params = 0;
  switch (v.quant) {
    case fb::QuantParams::PerTensorQuant:
      params = fb::CreatePerTensorQuant(b, v.scale, v.zero_point).Union();
      break;
    case fb::QuantParams::PerChannelQuant:
      params = fb::CreatePerChannelQuant(b, v.scales.empty() ? 0 : b.CreateVector(v.scales),
                                         v.channel_dim, v.scale_buffer_idx, v.num_scales)
                   .Union();
      break;
    case fb::QuantParams::PerChannelGroupQuant:
      params = fb::CreatePerChannelGroupQuant(b, v.scales.empty() ? 0 : b.CreateVector(v.scales),
                                              v.channel_dim, v.group_size, v.scale_buffer_idx,
                                              v.num_scales)
                   .Union();
      break;
    case fb::QuantParams::PerTokenDynamicQuant:
      params = fb::CreatePerTokenDynamicQuant(b, v.num_nonbatch_dims).Union();
      break;
    default:
      break;
  }
  const auto q = fb::CreateQuantizedTensorValue(b, t, v.quant, params);
  return fb::CreateValue(b, fb::ValueUnion::QuantizedTensorValue, q.Union());
}

void put32(std::vector<uint8_t>& out, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) out[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

}  // namespace

std::vector<uint8_t> build(const GraphSpec& g) {
  flatbuffers::FlatBufferBuilder b;
  std::vector<flatbuffers::Offset<fb::Node>> nodes;
  for (const NodeFn& n : g.nodes) nodes.push_back(n(b));
  std::vector<flatbuffers::Offset<fb::Value>> values;
  for (const ValueSpec& v : g.values) values.push_back(make_value(b, v));
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::ConstantDataOffset>>> data = 0;
  if (g.inline_buffers.empty()) {
    std::vector<flatbuffers::Offset<fb::ConstantDataOffset>> offsets;
    offsets.push_back(fb::CreateConstantDataOffset(b, 0, 0, b.CreateString("")));
    for (const ConstantSpec& c : g.constants) {
      offsets.push_back(
          fb::CreateConstantDataOffset(b, c.offset, c.size, b.CreateString(c.named_key)));
    }
    data = b.CreateVector(offsets);
  }
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>>> buffers = 0;
  if (!g.inline_buffers.empty()) {
    std::vector<flatbuffers::Offset<fb::Buffer>> list;
    for (const auto& bytes : g.inline_buffers) {
      list.push_back(fb::CreateBuffer(b, b.CreateVector(bytes)));
    }
    buffers = b.CreateVector(list);
  }
  const uint32_t externs =
      g.num_externs.value_or(static_cast<uint32_t>(g.input_ids.size() + g.output_ids.size()));
  const auto root = fb::CreateGraph(b, b.CreateString("0"), b.CreateVector(nodes),
                                    b.CreateVector(values), externs, b.CreateVector(g.input_ids),
                                    b.CreateVector(g.output_ids), buffers, data);
  b.Finish(root, g.identifier.c_str());
  const std::vector<uint8_t> flat(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
  if (!g.header) return flat;
  const size_t fb_offset = 32;
  const size_t data_offset = (fb_offset + flat.size() + 15) / 16 * 16;
  std::vector<uint8_t> out(data_offset + g.constant_data.size(), 0);
  out[4] = 'X';
  out[5] = 'H';
  out[6] = '0';
  out[7] = '0';
  out[8] = 30;
  put32(out, 10, static_cast<uint32_t>(fb_offset));
  put32(out, 14, static_cast<uint32_t>(flat.size()));
  put32(out, 18, static_cast<uint32_t>(data_offset));
  put32(out, 22, static_cast<uint32_t>(g.constant_data.size()));  // the low half of 8 bytes
  std::memcpy(&out[fb_offset], flat.data(), flat.size());
  if (!g.constant_data.empty()) {
    std::memcpy(&out[data_offset], g.constant_data.data(), g.constant_data.size());
  }
  return out;
}

ValueSpec input(uint32_t id, uint32_t external_id, std::vector<uint32_t> dims) {
  ValueSpec v;
  v.id = id;
  v.dims = std::move(dims);
  v.flags = 1;
  v.external_id = external_id;
  return v;
}

ValueSpec output(uint32_t id, uint32_t external_id, std::vector<uint32_t> dims) {
  ValueSpec v = input(id, external_id, std::move(dims));
  v.flags = 2;
  return v;
}

ValueSpec internal(uint32_t id, std::vector<uint32_t> dims) {
  ValueSpec v;
  v.id = id;
  v.dims = std::move(dims);
  return v;
}

ValueSpec constant(uint32_t id, uint32_t index, std::vector<uint32_t> dims) {
  ValueSpec v = internal(id, std::move(dims));
  v.constant = index;
  return v;
}

NodeFn node2x1(fb::NodeUnion type, uint32_t a, uint32_t b, uint32_t out, uint32_t debug) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    return fb::CreateNode(fbb, type, fb::CreateNode2x1(fbb, a, b, out).Union(), debug);
  };
}

NodeFn node1x1(fb::NodeUnion type, uint32_t in, uint32_t out, uint32_t debug) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    return fb::CreateNode(fbb, type, fb::CreateNode1x1(fbb, in, out).Union(), debug);
  };
}

NodeFn clamp_node(uint32_t in, uint32_t out, float lo, float hi) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    return fb::CreateNode(fbb, fb::NodeUnion::XNNClamp, fb::CreateNode1x1(fbb, in, out).Union(), 0,
                          fb::CreateOutputMinMax(fbb, lo, hi));
  };
}

NodeFn transpose(std::vector<uint32_t> perm, uint32_t in, uint32_t out) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    const auto p = fbb.CreateVector(perm);
    return fb::CreateNode(
        fbb, fb::NodeUnion::XNNStaticTranspose,
        fb::CreateStaticTranspose(fbb, static_cast<uint32_t>(perm.size()), p, in, out).Union());
  };
}

NodeFn fully_connected(uint32_t in, uint32_t filter, uint32_t bias, uint32_t out, uint32_t flags) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    return fb::CreateNode(fbb, fb::NodeUnion::XNNFullyConnected,
                          fb::CreateFullyConnected(fbb, in, filter, bias, out, flags).Union());
  };
}

NodeFn conv(fb::NodeUnion type, const ConvSpec& c, uint32_t in, uint32_t filter, uint32_t bias,
            uint32_t out) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    const auto n =
        fb::CreateNodeConv(fbb, c.pad, c.pad, c.pad, c.pad, c.kh, c.kw, c.stride, c.stride, 1, 1,
                           c.gi, c.go, c.groups, 0, 0, in, filter, bias, out, 0);
    return fb::CreateNode(fbb, type, n.Union());
  };
}

NodeFn conv_node(fb::NodeUnion type, const NodeConvSpec& c, uint32_t in, uint32_t filter,
                 uint32_t bias, uint32_t out) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    const auto n =
        fb::CreateNodeConv(fbb, c.pad_top, c.pad_right, c.pad_bottom, c.pad_left, c.kh, c.kw,
                           c.stride_h, c.stride_w, c.dilation_h, c.dilation_w, c.gi, c.go, c.groups,
                           c.adjustment_h, c.adjustment_w, in, filter, bias, out, c.flags);
    const auto clamp = c.clamp ? fb::CreateOutputMinMax(fbb, c.output_min, c.output_max) : 0;
    return fb::CreateNode(fbb, type, n.Union(), 0, clamp);
  };
}

NodeFn argmax_pool(uint32_t in, uint32_t values, uint32_t indices) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    const auto n = fb::CreateArgMaxPooling2d(fbb, 0, 0, 0, 0, 2, 2, in, values, indices, 0);
    return fb::CreateNode(fbb, fb::NodeUnion::XNNArgMaxPooling2d, n.Union());
  };
}

NodeFn raw_node(uint8_t tag, uint32_t in, uint32_t out) {
  return [=](flatbuffers::FlatBufferBuilder& fbb) {
    return fb::CreateNode(fbb, static_cast<fb::NodeUnion>(tag),
                          fb::CreateNode1x1(fbb, in, out).Union());
  };
}

GraphSpec add_graph() {
  GraphSpec g;
  g.values = {input(0, 0, {2, 3}), input(1, 1, {2, 3}), output(2, 2, {2, 3})};
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 2, 5)};
  g.input_ids = {0, 1};
  g.output_ids = {2};
  return g;
}

GraphSpec fc_graph() {
  GraphSpec g;
  g.values = {input(0, 0, {2, 4}), constant(1, 1, {3, 4}), constant(2, 2, {3}),
              output(3, 1, {2, 3})};
  g.nodes = {fully_connected(0, 1, 2, 3)};
  g.input_ids = {0};
  g.output_ids = {3};
  std::vector<float> floats;
  for (int i = 1; i <= 12; ++i) floats.push_back(static_cast<float>(i));
  floats.push_back(0);  // padding: the bias starts at byte 64
  floats.push_back(0);
  floats.push_back(0);
  floats.push_back(0);
  for (float f : {0.5f, 1.5f, 2.5f}) floats.push_back(f);
  g.constant_data.resize(floats.size() * 4);
  std::memcpy(g.constant_data.data(), floats.data(), g.constant_data.size());
  g.constants = {{0, 48, ""}, {64, 12, ""}};
  return g;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace ember::xnn::testing
