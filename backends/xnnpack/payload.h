// ExecuTorch's XNNPACK delegate payload (the processed blob of a "XnnpackBackend" delegate), read
// and verified into plain structs.
//
//   Result<xnn::Payload> p = xnn::read_payload(blob);  // InvalidProgram, last_error_message() why
//   for (const xnn::Node& n : p->nodes) ...            // every id, size and range already checked
//
// The blob is a 30-byte header ("XH00" at bytes 4..8: the flatbuffer's offset and size, the
// constant data's offset and size) followed by an XNNGraph flatbuffer (xnn_graph.fbs, identifier
// XN01, or XN00 whose constants may sit inside the flatbuffer), or, in files written before the
// header, the flatbuffer alone. read_payload refuses, with a message that names what is wrong,
// anything that is not a payload this reader understands as written: a bad header, ranges outside
// the blob, a flatbuffer the verifier rejects, a value id used twice or never defined, a node that
// reads a value before any node writes it, a value written twice, dims past kMaxXnnRank or 2^40
// elements, constants outside their data, external ids that are not 0..n-1 (inputs first), a
// value flagged external that input_ids and output_ids do not list, a window parameter (kernel,
// stride, dilation, padding, groups) past 2^24. It does not judge
// whether Ember can run a node (translate.h does); it only guarantees that what it returns is
// self-consistent. The result copies everything but the constant bytes: constants in the blob are
// offsets into it (Constant), so the caller keeps the blob while it reads them.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/core/result.h"

namespace ember::xnn {

inline constexpr int kMaxXnnRank = 6;

// XNNPACK's datatypes, with the format's values.
enum class Datatype : uint8_t {
  Invalid = 0,
  Fp32 = 1,
  Fp16 = 2,
  QInt8 = 3,
  QUInt8 = 4,
  QInt32 = 5,
  QCInt8 = 6,
  QCInt32 = 7,
  QCInt4 = 8,
  QDInt8 = 9,
  QBInt4 = 10,
  QPInt8 = 11,
  Int32 = 12,
  PFp32 = 13,
  Bf16 = 14,
};
const char* datatype_name(Datatype d);

// A value's quantization.
struct Quant {
  enum class Kind : uint8_t { None, PerTensor, PerChannel, PerToken, PerChannelGroup };
  Kind kind = Kind::None;
  float scale = 0;            // PerTensor
  int32_t zero_point = 0;     // PerTensor
  std::vector<float> scales;  // PerChannel, PerChannelGroup: inline scales (may be empty, below)
  // PerChannel (float32) / PerChannelGroup (bf16): scales held as constant data `scale_constant`
  // (an index of Payload::constants, nonzero) instead, `num_scales` of them.
  uint32_t scale_constant = 0;
  uint32_t num_scales = 0;
  int32_t channel_dim = 0;        // PerChannel, PerChannelGroup
  int32_t group_size = 0;         // PerChannelGroup
  int32_t num_nonbatch_dims = 0;  // PerToken
};

inline constexpr uint32_t kExternalInput = 1, kExternalOutput = 2;

struct Value {
  uint32_t id = 0;  // what nodes name it by (the format's id_out); index into Payload::values
  Datatype dtype = Datatype::Invalid;
  std::vector<int64_t> dims;
  uint32_t constant = 0;  // index into Payload::constants; 0: not a constant
  uint32_t flags = 0;     // kExternalInput | kExternalOutput
  uint32_t external_id = 0;
  Quant quant;
  bool quantized() const { return quant.kind != Quant::Kind::None; }
};

// The node types, by the format's union tags.
enum class NodeType : uint8_t {
  Add = 1,
  FullyConnected,
  Softmax,
  Sigmoid,
  StaticTranspose,
  Clamp,
  Conv2d,
  Div,
  StaticResizeBilinear2D,
  StaticConstantPad,
  AvgPooling2d,
  Minimum,
  DepthwiseConv2d,
  MaxPooling2d,
  Multiply,
  Subtract,
  Floor,
  Convert,
  GlobalAvgPooling2d,
  StaticReshape,
  ArgMaxPooling2d,
  SquareRoot,
  Ceiling,
  Hardswish,
  LeakyReLU,
  Maximum,
  Negate,
  Square,
  ELU,
  Abs,
  PReLU,
  Concatenate2,
  Concatenate3,
  Concatenate4,
  StaticSlice,
  ScaledDotProductAttention,
  BatchMatrixMultiply,
  Concatenate5,
  ConvTranspose2d,
  ReciprocalSquareRoot,
  Log,
  Gelu,
  Tanh,
  Exp,
  Sin,
  Copy,
  Cos,
};
inline constexpr uint8_t kLastNodeType = static_cast<uint8_t>(NodeType::Cos);
// The format's name of `t` ("XNNConv2d"...).
const char* node_type_name(NodeType t);

// A convolution's or a pooling's window (the fields a node type does not have stay 0).
struct Window {
  uint32_t pad_top = 0, pad_right = 0, pad_bottom = 0, pad_left = 0;
  uint32_t kernel_h = 0, kernel_w = 0;
  uint32_t stride_h = 0, stride_w = 0;
  uint32_t dilation_h = 0, dilation_w = 0;
  uint32_t groups = 0, group_input_channels = 0, group_output_channels = 0;
  uint32_t adjustment_h = 0, adjustment_w = 0;  // a transposed convolution's output padding
};

inline constexpr uint32_t kNoValue = 0xFFFFFFFFu;  // an absent optional input (a bias)

struct Node {
  NodeType type = NodeType::Add;
  uint32_t debug_handle = 0;
  // Value ids read, in the node type's order (a convolution's: input, filter, bias|kNoValue;
  // a concatenate's: its 2 to 5 inputs), and written (ArgMaxPooling2d: values, indices).
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  uint32_t flags = 0;
  bool has_output_min_max = false;
  float output_min = 0, output_max = 0;
  Window window;                // convolutions and poolings
  std::vector<uint32_t> ints;   // transpose: perm; reshape: new shape; slice: offsets; pad: pre
  std::vector<uint32_t> ints2;  // slice: sizes; pad: post
  float alpha = 0;              // ELU's alpha, LeakyReLU's slope, the constant pad's value
  uint32_t axis = 0;            // a concatenate's
  uint32_t new_height = 0, new_width = 0;  // the bilinear resize's
};

// Where a constant's bytes are: [offset, offset + size) of the payload's constant data (which
// read_payload has checked lie inside the blob, as Payload::constant_data), or named data under
// `named_key` (size bytes, checked when it is read), or, in an XN00 payload, inline_bytes.
struct Constant {
  uint64_t offset = 0;
  uint64_t size = 0;
  std::string named_key;
  // An XN00 payload's constant held inside its flatbuffer (Graph.constant_buffer): copied here.
  std::vector<uint8_t> inline_bytes;
  bool is_inline = false;
};

struct Payload {
  std::string identifier;  // "XN01" or "XN00"
  std::string version;
  std::vector<Value> values;  // values[i].id == i
  std::vector<Node> nodes;    // in the order they run; each reads only values defined before it
  // Value ids of the delegate's inputs, then of its outputs, in argument order: by external id
  // (the format's input_ids list them in the order the exporter defined them).
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<Constant> constants;  // entry 0 unused
  // The constant data the offsets are relative to: a range of the blob read_payload was given.
  std::span<const uint8_t> constant_data;
};

// Reads and verifies `blob` (see above). The result's constant_data points into `blob`.
Result<Payload> read_payload(std::span<const uint8_t> blob);

// The number of elements of `dims`, or -1 past 2^40.
int64_t numel(std::span<const int64_t> dims);

}  // namespace ember::xnn
