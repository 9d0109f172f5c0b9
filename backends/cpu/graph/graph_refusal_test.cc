// The cpu backend's blob (graph/graph_format.h) refuses what is not one, each time with a reason
// and never a crash (run it under ASan): truncated, padded, corrupted, foreign, old and misaligned
// blobs, ids out of range, and every check the flatbuffers verifier cannot make.
#include <array>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "backends/cpu/graph/graph_format.h"
#include "backends/cpu/graph/graph_test_util.h"
#include "ember/backends/cpu/cpu_graph_generated.h"
#include "runtime/core/error.h"
#include "runtime/core/result.h"

namespace ember::cpu::graph_test {
namespace {

TEST(CpuGraphFormat, TruncatedOrPaddedRefused) {
  const std::vector<uint8_t> blob = serialize(every_kind());
  for (size_t n = 0; n < blob.size(); ++n) {
    const std::string why = reason(std::span<const uint8_t>(blob.data(), n));
    EXPECT_NE(why, "accepted") << "truncated at " << n;
    EXPECT_FALSE(why.empty()) << "truncated at " << n;
  }
  EXPECT_NE(reason(std::span<const uint8_t>(blob.data(), blob.size() - 8)).find("truncated"),
            std::string::npos);
  std::vector<uint8_t> padded = blob;
  padded.push_back(0);
  EXPECT_NE(reason(padded).find("truncated or padded"), std::string::npos) << reason(padded);
}

// Every byte flipped three ways: refused with a reason, or a graph that passes every check and
// comes back the same through serialize and parse. Never a crash (ASan).
TEST(CpuGraphFormat, EveryByteFlipped) {
  for (const CpuGraph& g : {every_kind(), small_cnn()}) {
    const std::vector<uint8_t> blob = serialize(g);
    size_t refused = 0;
    for (size_t i = 0; i < blob.size(); ++i) {
      for (const uint8_t flip : std::array<uint8_t, 3>{0x01, 0x80, 0xff}) {
        std::vector<uint8_t> bad = blob;
        bad[i] ^= flip;
        if (const std::string why = reason(bad); why != "accepted") {
          EXPECT_FALSE(why.empty()) << "byte " << i;
          ++refused;
          continue;
        }
        const Result<CpuGraph> got = parse(bad);
        ASSERT_TRUE(got.ok()) << "byte " << i << ": " << last_error_message();
        const std::vector<uint8_t> again = serialize(*got);
        const Result<CpuGraph> back = parse(again);
        ASSERT_TRUE(back.ok()) << "byte " << i << ": " << last_error_message();
        EXPECT_EQ(serialize(*back), again) << "byte " << i;
      }
    }
    EXPECT_GT(refused, blob.size());  // most flips are refused
  }
}

TEST(CpuGraphFormat, ForeignOrOldBlobRefused) {
  std::vector<uint8_t> blob = serialize(small_cnn());
  std::vector<uint8_t> wrong = blob;
  std::memcpy(wrong.data() + 8, "XCPU", 4);
  EXPECT_NE(reason(wrong).find("not a cpu backend blob (identifier \"XCPU\""), std::string::npos)
      << reason(wrong);
  wrong[8] = 0x07;
  EXPECT_NE(reason(wrong).find("\\x07CPU"), std::string::npos) << reason(wrong);

  std::vector<uint8_t> old = {'E', 'M', 'B', 'R', 'C', 'P', 'U', '1', 4, 0, 0, 0, 0};
  EXPECT_NE(reason(old).find("compile the program again"), std::string::npos) << reason(old);
  EXPECT_NE(reason(std::vector<uint8_t>(3, 0)).find("not a cpu backend blob"), std::string::npos);

  // The right size and identifier, a root offset past the end.
  std::vector<uint8_t> junk(32, 0);
  const uint32_t size = 28, root = 4000;
  std::memcpy(junk.data(), &size, 4);
  std::memcpy(junk.data() + 4, &root, 4);
  std::memcpy(junk.data() + 8, "ECPU", 4);
  EXPECT_NE(reason(junk).find("not a valid flatbuffer"), std::string::npos) << reason(junk);
}

TEST(CpuGraphFormat, OtherVersionRefused) {
  flatbuffers::FlatBufferBuilder fbb;
  fb::FinishSizePrefixedGraphBuffer(fbb, fb::CreateGraph(fbb, /*version=*/4));
  const std::string why = reason(std::span<const uint8_t>(fbb.GetBufferPointer(), fbb.GetSize()));
  EXPECT_NE(why.find("blob version 4, this runtime reads 6"), std::string::npos) << why;
}

// every_kind() as version 5 wrote it (positional parameters: lists of ints and floats): it passes
// the flatbuffers verifier and is refused by its version, never misread.
TEST(CpuGraphFormat, Version5BlobRefused) {
  std::ifstream in(std::filesystem::path(EMBER_CPU_TESTDATA) / "v5_every_kind.ecpu",
                   std::ios::binary);
  const std::vector<uint8_t> blob{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
  ASSERT_FALSE(blob.empty());
  const std::string why = reason(blob);
  EXPECT_NE(why.find("blob version 5, this runtime reads 6: compile the program again"),
            std::string::npos)
      << why;
}

// A [long] of one element whose data lies at 4 mod 8 from the blob's start for one of `pad` 0
// and 1 (which one depends on what the builder holds already): flatbuffers 2.0.8's verifier
// passes it.
flatbuffers::Offset<flatbuffers::Vector<int64_t>> odd_longs(flatbuffers::FlatBufferBuilder& fbb,
                                                            int pad) {
  for (int i = 0; i < pad; ++i) fbb.PushElement<int32_t>(0);
  fbb.StartVector(2, sizeof(int32_t));
  fbb.PushElement<int32_t>(0);
  fbb.PushElement<int32_t>(1);
  return flatbuffers::Offset<flatbuffers::Vector<int64_t>>(fbb.EndVector(1));
}

// Every vector of 64-bit integers among the parameters, misaligned, is refused before it is read.
TEST(CpuGraphFormat, MisalignedParameterVectorRefused) {
  using Longs = flatbuffers::Offset<flatbuffers::Vector<int64_t>>;
  // Whether the blob `make(pad)` is refused as misaligned for a pad of 0 or 1.
  auto refused = [](const std::function<std::vector<uint8_t>(int)>& make) {
    bool any = false;
    for (int pad : {0, 1}) {
      any = any || reason(make(pad)).find("a vector of 64-bit integers is misaligned") !=
                       std::string::npos;
    }
    return any;
  };
  // Five vectors, the `odd`-th misaligned.
  auto five = [](flatbuffers::FlatBufferBuilder& fbb, int odd, int pad) {
    std::array<Longs, 5> v;
    for (int k = 0; k < 5; ++k) {
      v[k] = k == odd ? odd_longs(fbb, pad) : fbb.CreateVector(std::vector<int64_t>{1});
    }
    return v;
  };
  for (int odd = 0; odd < 5; ++odd) {
    SCOPED_TRACE("vector " + std::to_string(odd));
    EXPECT_TRUE(refused([&](int pad) {
      return one_op_blob(OpKind::Conv, {0, 0, -1}, [&](flatbuffers::FlatBufferBuilder& fbb) {
        const auto v = five(fbb, odd, pad);
        return HandMadeOp{fb::OpParams::ConvParams,
                          fb::CreateConvParams(fbb, 1, 0, v[0], v[1], v[2], v[3], v[4]).Union()};
      });
    })) << "conv";
    EXPECT_TRUE(refused([&](int pad) {
      return one_op_blob(
          OpKind::QuantConv, {0, 0, -1, 0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
            const auto v = five(fbb, odd, pad);
            const auto conv = fb::CreateConvParams(fbb, 1, 0, v[0], v[1], v[2], v[3], v[4]);
            const fb::QuantParams src(0.5f, 0);
            return HandMadeOp{fb::OpParams::QuantConvParams,
                              fb::CreateQuantConvParams(fbb, conv, &src).Union()};
          });
    })) << "quantized conv";
    EXPECT_TRUE(refused([&](int pad) {
      return one_op_blob(OpKind::Pool, {0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
        const auto v = five(fbb, odd, pad);
        return HandMadeOp{fb::OpParams::PoolParams,
                          fb::CreatePoolParams(fbb, 0, v[0], v[1], v[2], v[3], v[4]).Union()};
      });
    })) << "pool";
  }
  EXPECT_TRUE(refused([&](int pad) {
    return one_op_blob(OpKind::Permute, {0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
      const Longs perm = odd_longs(fbb, pad);
      return HandMadeOp{fb::OpParams::PermuteParams, fb::CreatePermuteParams(fbb, perm).Union()};
    });
  })) << "permute";
  EXPECT_TRUE(refused([&](int pad) {
    return one_op_blob(OpKind::Reduce, {0}, [&](flatbuffers::FlatBufferBuilder& fbb) {
      const Longs dims = odd_longs(fbb, pad);
      return HandMadeOp{fb::OpParams::ReduceParams, fb::CreateReduceParams(fbb, 0, dims).Union()};
    });
  })) << "reduce";
}

TEST(CpuGraphFormat, TensorIdOutOfRangeRefused) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  const int32_t n = static_cast<int32_t>(small_cnn().tensors.size());
  CpuGraph g = small_cnn();
  g.ops[0].inputs[1] = n;
  EXPECT_NE(refused(g).find("op 0: reads an undefined tensor"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[0].inputs[0] = -2;
  EXPECT_NE(refused(g).find("op 0: reads an undefined tensor"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[1].inputs[0] = g.ops[2].output;  // read before it is written
  EXPECT_NE(refused(g).find("op 1: reads an undefined tensor"), std::string::npos) << refused(g);
  g = small_cnn();
  g.ops[0].output = n;
  EXPECT_NE(refused(g).find("op 0: output is not a fresh intermediate tensor"), std::string::npos);
  g = small_cnn();
  g.ops[2].output = g.ops[1].output;  // written twice
  EXPECT_NE(refused(g).find("op 2: output is not a fresh intermediate tensor"), std::string::npos);
  g = small_cnn();
  g.ops[0].post_ops.push_back(sum(n));
  EXPECT_NE(refused(g).find("op 0: sum post-op reads an undefined tensor"), std::string::npos);
  g = small_cnn();
  g.outputs[0] = n;
  EXPECT_NE(refused(g).find("output 0: names an undefined tensor"), std::string::npos)
      << refused(g);
  g = small_cnn();
  g.tensors[0].index = 2;  // input 2 of 2
  EXPECT_NE(refused(g).find("tensor 0: names a missing input"), std::string::npos) << refused(g);
  g = small_cnn();
  g.tensors[1].index = 7;  // weight 7 of 4
  EXPECT_NE(refused(g).find("tensor 1: names a missing weight"), std::string::npos) << refused(g);
}

// The semantic checks the flatbuffer's verifier cannot make: each refused with its reason.
TEST(CpuGraphFormat, SemanticChecksRefuse) {
  auto refused = [](const CpuGraph& g) { return reason(serialize(g)); };
  struct Case {
    const char* want;
    void (*edit)(CpuGraph&);
  };
  const Case cases[] = {
      {"bad header (input or symbol count)", [](CpuGraph& g) { g.num_inputs = 65537; }},
      {"bad header (input or symbol count)", [](CpuGraph& g) { g.num_symbols = 3; }},
      {"weight 0: oversized key", [](CpuGraph& g) { g.weights[0].key.assign(4097, 'k'); }},
      {"weight 0: oversized", [](CpuGraph& g) { g.weights[0].nbytes = uint64_t{1} << 43; }},
      {"tensor 0: rank above 6", [](CpuGraph& g) { g.tensors[0].dims.assign(7, 1); }},
      {"tensor 0: a bad size or dim order", [](CpuGraph& g) { g.tensors[0].dims[1] = -3; }},
      {"tensor 0: a bad size or dim order",
       [](CpuGraph& g) {
         g.tensors[0].dims = {1 << 20, 1 << 20, 2};
       }},
      {"tensor 0: a bad size or dim order",
       [](CpuGraph& g) {
         g.tensors[0].dim_order = {0, 1};
       }},
      {"tensor 0: a bad size or dim order",
       [](CpuGraph& g) {
         g.tensors[0].dim_order = {0, 1, 1, 2};
       }},
      {"tensor 0: a bad batch symbol", [](CpuGraph& g) { g.tensors[0].batch_symbol = 0; }},
      {"tensor 1: a bad batch symbol",
       [](CpuGraph& g) {
         g.num_symbols = 1;
         g.tensors[0].batch_symbol = 0;
         g.tensors[1].batch_symbol = 0;  // a weight
       }},
      {"a batch symbol is the batch of no input", [](CpuGraph& g) { g.num_symbols = 1; }},
      {"tensor 3: an integer tensor that is not a weight",
       [](CpuGraph& g) { g.tensors[3].storage = WeightStorage::Int8; }},
      {"tensor 1: names a missing weight or its size disagrees",
       [](CpuGraph& g) { g.weights[0].nbytes -= 4; }},
      {"tensor 1: an int4 weight whose last dim is odd",
       [](CpuGraph& g) {
         g.tensors[1].storage = WeightStorage::Int4;
         g.weights[0].nbytes = 54;
       }},
      {"op 0: reads integer weights as floats",
       [](CpuGraph& g) {
         g.tensors[1].dims = {4, 3, 3, 2};
         g.tensors[1].storage = WeightStorage::Int8;
         g.weights[0].nbytes = 72;
       }},
      {"op 0: more than 1024 inputs", [](CpuGraph& g) { g.ops[0].inputs.assign(1025, 0); }},
      {"op 0: oversized parameters", [](CpuGraph& g) { g.ops[0].conv().stride.assign(7, 1); }},
      {"op 1: oversized parameters", [](CpuGraph& g) { g.ops[1].pool().pad_r.assign(7, 0); }},
      {"op 0: more than 16 post-ops",
       [](CpuGraph& g) { g.ops[0].post_ops.assign(17, eltwise(EltwiseAlg::Relu)); }},
      {"op 0: convolution stride, paddings, dilation and output padding differ in length",
       [](CpuGraph& g) { g.ops[0].conv().output_padding.pop_back(); }},
      {"op 0: convolution stride, paddings, dilation and output padding differ in length",
       [](CpuGraph& g) { g.ops[0].conv().pad_l.push_back(1); }},
      {"op 0: convolution of 0 spatial dims (1 to 3)",
       [](CpuGraph& g) { g.ops[0].conv().stride.clear(); }},
      {"op 0: convolution of 4 spatial dims (1 to 3)",
       [](CpuGraph& g) {
         ConvParams& c = g.ops[0].conv();
         for (auto* v : {&c.stride, &c.pad_l, &c.pad_r, &c.dilation, &c.output_padding}) {
           v->resize(4, 1);
         }
       }},
      {"op 0: convolution groups or transposed flag out of range",
       [](CpuGraph& g) { g.ops[0].conv().groups = 0; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().stride[0] = 0; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().stride[1] = 4097; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().pad_l[1] = -1; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().pad_r[0] = -4097; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().dilation[0] = 0; }},
      {"op 0: convolution stride/padding/dilation out of range",
       [](CpuGraph& g) { g.ops[0].conv().output_padding[1] = -1; }},
      {"op 0: convolution needs src, weight, bias and parameters",
       [](CpuGraph& g) { g.ops[0].inputs.pop_back(); }},
      {"op 1: pooling kernel, stride, paddings and dilation differ in length",
       [](CpuGraph& g) { g.ops[1].pool().dilation.pop_back(); }},
      {"op 1: pooling kernel, stride, paddings and dilation differ in length",
       [](CpuGraph& g) { g.ops[1].pool().stride.push_back(1); }},
      {"op 1: pooling parameters out of range",
       [](CpuGraph& g) { g.ops[1].pool().kernel.clear(); }},
      {"op 1: pooling parameters out of range",
       [](CpuGraph& g) {
         PoolParams& p = g.ops[1].pool();
         for (auto* v : {&p.kernel, &p.stride, &p.pad_l, &p.pad_r, &p.dilation}) v->resize(4, 1);
       }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().kernel[0] = 0; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().stride[1] = 4097; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().pad_l[0] = -1; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().pad_r[1] = 4097; }},
      {"op 1: pooling kernel/stride/padding out of range",
       [](CpuGraph& g) { g.ops[1].pool().dilation[0] = 0; }},
      {"op 1: post-ops on an op that takes none",
       [](CpuGraph& g) { g.ops[1].post_ops.push_back(eltwise(EltwiseAlg::Relu)); }},
      {"op 3: matmul needs a, b and bias", [](CpuGraph& g) { g.ops[3].inputs.pop_back(); }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {0.1f, 0.f}, {0.2f, 128.f}};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {0.1f, 0.5f}, {0.2f, 0.f}};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {-0.1f, 0.f}, {0.2f, 0.f}};
       }},
      {"op 3: matmul of int8 values needs two scales and zero points",
       [](CpuGraph& g) {
         g.ops[3].params = MatMulParams{true, {0.1f, 0.f}, {0.f, 0.f}};
       }},
      {"output 0: a bad dim order",
       [](CpuGraph& g) {
         g.output_dim_orders[0] = {0, 0};
       }},
      {"output 0: a bad dim order", [](CpuGraph& g) { g.output_dim_orders[0].assign(7, 0); }},
      {"output 0: names an undefined tensor or integer weights",
       [](CpuGraph& g) {
         g.tensors[1].dims = {4, 3, 3, 2};
         g.tensors[1].storage = WeightStorage::Int8;
         g.weights[0].nbytes = 72;
         g.ops.clear();
         g.outputs[0] = 1;
       }},
  };
  for (const Case& c : cases) {
    CpuGraph g = small_cnn();
    c.edit(g);
    EXPECT_NE(refused(g).find(c.want), std::string::npos) << c.want << " <- " << refused(g);
  }
}

}  // namespace
}  // namespace ember::cpu::graph_test
