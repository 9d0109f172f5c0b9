// Payloads for the XNNPACK reader's and translator's tests, described as plain structs and built
// with flatbuffers' builder (the generated xnn_graph_generated.h), so that each test changes one
// field of a valid graph and checks what read_payload or translate says of it.
//
//   GraphSpec g = add_graph();        // two inputs, XNNAdd, one output
//   g.values[2].dims = {1, 2, 3, 4, 5, 6, 7};
//   std::vector<uint8_t> blob = build(g);
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ember/backends/xnnpack/xnn_graph_generated.h"

namespace ember::xnn::testing {

namespace fb = ember::xnn::fb;

inline constexpr uint32_t kNone = 0xFFFFFFFFu;  // external_id of an internal value; no bias

struct ValueSpec {
  uint32_t id = 0;
  std::vector<uint32_t> dims;
  fb::Datatype dtype = fb::Datatype::fp32;
  uint32_t constant = 0;
  uint32_t flags = 0;
  uint32_t external_id = kNone;
  std::optional<uint32_t> num_dims;  // default: dims.size()
  fb::Datatype dq_datatype = fb::Datatype::invalid;
  // Quantization: a QuantizedTensorValue with these parameters (NONE with `quantized`: none set).
  bool quantized = false;
  fb::QuantParams quant = fb::QuantParams::NONE;
  float scale = 1;
  int32_t zero_point = 0;
  std::vector<float> scales;
  int32_t channel_dim = 0;
  int32_t group_size = 0;
  uint32_t scale_buffer_idx = 0;
  uint32_t num_scales = 0;
  int32_t num_nonbatch_dims = 0;
  bool not_a_tensor = false;  // a Value whose union is empty
};

struct ConstantSpec {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string named_key;
};

using NodeFn = std::function<flatbuffers::Offset<fb::Node>(flatbuffers::FlatBufferBuilder&)>;

struct GraphSpec {
  std::string identifier = "XN01";
  bool header = true;
  std::vector<ValueSpec> values;
  std::vector<NodeFn> nodes;
  std::vector<uint32_t> input_ids;
  std::vector<uint32_t> output_ids;
  std::optional<uint32_t> num_externs;  // default: inputs + outputs
  std::vector<ConstantSpec> constants;  // from index 1 (entry 0 is added)
  std::vector<uint8_t> constant_data;
  std::vector<std::vector<uint8_t>> inline_buffers;  // XN00's constant_buffer (entry 0 included)
};

// The payload bytes of `g`: the 30-byte XH00 header, the flatbuffer at 32, the constant data after
// it at a 16-byte boundary (or, without `header`, the flatbuffer alone).
std::vector<uint8_t> build(const GraphSpec& g);

// Values: an external input or output, an internal value, a constant.
ValueSpec input(uint32_t id, uint32_t external_id, std::vector<uint32_t> dims);
ValueSpec output(uint32_t id, uint32_t external_id, std::vector<uint32_t> dims);
ValueSpec internal(uint32_t id, std::vector<uint32_t> dims);
ValueSpec constant(uint32_t id, uint32_t index, std::vector<uint32_t> dims);

// Nodes (a debug handle of 7 + their position is not needed: each takes one).
NodeFn node2x1(fb::NodeUnion type, uint32_t a, uint32_t b, uint32_t out, uint32_t debug = 0);
NodeFn node1x1(fb::NodeUnion type, uint32_t in, uint32_t out, uint32_t debug = 0);
NodeFn clamp_node(uint32_t in, uint32_t out, float lo, float hi);
NodeFn transpose(std::vector<uint32_t> perm, uint32_t in, uint32_t out);
NodeFn fully_connected(uint32_t in, uint32_t filter, uint32_t bias, uint32_t out,
                       uint32_t flags = 0);
struct ConvSpec {
  uint32_t kh = 1, kw = 1, stride = 1, pad = 0, groups = 1, gi = 1, go = 1;
};
NodeFn conv(fb::NodeUnion type, const ConvSpec& c, uint32_t in, uint32_t filter, uint32_t bias,
            uint32_t out);
// Every field of a NodeConv (a transposed convolution's adjustment included), and a fused output
// clamp where `clamp` is set.
struct NodeConvSpec {
  uint32_t pad_top = 0, pad_right = 0, pad_bottom = 0, pad_left = 0;
  uint32_t kh = 1, kw = 1, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  uint32_t gi = 1, go = 1, groups = 1, adjustment_h = 0, adjustment_w = 0;
  uint32_t flags = 0;
  bool clamp = false;
  float output_min = 0, output_max = 0;
};
NodeFn conv_node(fb::NodeUnion type, const NodeConvSpec& c, uint32_t in, uint32_t filter,
                 uint32_t bias, uint32_t out);
NodeFn argmax_pool(uint32_t in, uint32_t values, uint32_t indices);
// A node with any union tag (unknown ones included) over a Node1x1 table.
NodeFn raw_node(uint8_t tag, uint32_t in, uint32_t out);

// Graphs: x0 [2, 3] + x1 [2, 3] -> y2 (externals 0, 1, 2).
GraphSpec add_graph();
// y3 [2, 3] = x0 [2, 4] (external 0) times constant 1 (value 1, [3, 4]) plus constant 2 (value 2,
// [3]), both in the constant data: weight floats 1..12, bias 0.5, 1.5, 2.5.
GraphSpec fc_graph();

// Reads a whole file (empty when it cannot).
std::vector<uint8_t> read_file(const std::string& path);

}  // namespace ember::xnn::testing
