// The blob format tests' shared helpers (graph_*_test.cc): graphs built op by op, the two graphs
// every test starts from, parse's reason for refusing a blob, and a blob of one hand-made op (for
// what a CpuGraph cannot hold, so serialize cannot write).
//
//   CpuGraph g = small_cnn();  g.ops[0].conv().groups = 0;
//   EXPECT_NE(reason(serialize(g)).find("op 0: convolution groups"), std::string::npos);
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "ember/backends/cpu/cpu_graph_generated.h"

namespace ember::cpu::graph_test {

// An input tensor (delegate argument `index`), and an intermediate one.
TensorDesc input(uint32_t index, std::vector<int64_t> dims, int32_t batch_symbol = -1);
TensorDesc value(std::vector<int64_t> dims, int32_t batch_symbol = -1);

// Adds a weight and its tensor; returns the tensor id.
int32_t weight(CpuGraph& g, std::string key, std::vector<int64_t> dims,
               WeightStorage storage = WeightStorage::Float32);

// Adds a tensor; returns its id.
int32_t add(CpuGraph& g, TensorDesc t);

// Adds an op producing a new tensor `out`; returns its id.
int32_t op(CpuGraph& g, OpKind kind, std::vector<int32_t> inputs, TensorDesc out,
           OpParams params = NoParams{}, std::vector<PostOp> post_ops = {});

PostOp eltwise(EltwiseAlg alg, float alpha = 0, float beta = 0);
PostOp sum(int32_t tensor);

// A 3x3 convolution's geometry: stride 1, padding 1.
ConvParams conv3x3();
PoolParams pool2x2(PoolAlg alg, std::vector<int64_t> pad = {0, 0});

// Every op kind, every field of every record set to something other than its default: a dynamic
// batch, dim orders, int8 and int4 weights, a bool input, a 0-d weight, a key with a NUL and
// UTF-8, post-ops of both kinds, a transposed convolution.
CpuGraph every_kind();

// A convolution, a relu, a pooling and a linear: the shape of what the compiler writes most.
CpuGraph small_cnn();

// "accepted" where parse takes `blob`, else the message it left (this call's: the message is
// cleared first). A refusal must be an InvalidProgram (checked).
std::string reason(std::span<const uint8_t> blob);

// What a hand-made op holds besides its kind and tensors (for what a CpuGraph cannot hold).
struct HandMadeOp {
  fb::OpParams type = fb::OpParams::NONE;
  flatbuffers::Offset<void> params{};
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::PostOp>>> post_ops{};
};

// A blob of this format's version holding one op of `kind` reading tensor 0 (an input of dims
// {4}) or nothing (-1) as each of `inputs` and writing tensor 1; `make` writes the rest of it in
// the blob's builder.
std::vector<uint8_t> one_op_blob(
    OpKind kind, const std::vector<int32_t>& inputs,
    const std::function<HandMadeOp(flatbuffers::FlatBufferBuilder&)>& make);

}  // namespace ember::cpu::graph_test
