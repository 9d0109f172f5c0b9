// An XNNPACK payload (payload.h) as a graph of the cpu engine's steps (backends/cpu/graph), so
// ExecuTorch's XNNPACK-delegated programs run on the engine Ember's own partitioner feeds.
//
//   Result<xnn::Translation> t = xnn::translate(payload);  // NotSupported names node and reason
//   // t->graph is a CpuGraph; t->weights resolves its weight keys (a NamedDataMap)
//
// Layouts: XNNPACK computes convolutions and poolings on NHWC values, and the exporter writes
// static transposes between them and the NCHW tensors around them. The engine's ops take PyTorch's
// logical NCHW dims and choose their own memory layouts. So each XNNPACK value maps to an engine
// tensor plus a permutation (XNNPACK dim i is the tensor's dim perm[i]): a transpose only changes
// the permutation, an NHWC value that a convolution writes is the engine's NCHW tensor under
// {0, 2, 3, 1}, and an engine Permute is written only where an op needs the dims in another order
// (a reshape, a delegate output). Weights are re-described, never copied: an OHWI filter is an
// OIHW weight with a dim order. Constants that need new bytes (biases of quantized nodes, scales
// held as bf16) are computed once here and owned by the Translation.
//
// Values: fp32, and fp16 and bf16, which the engine holds in float32 (fp16/bf16 constants are
// widened into float32 weights owned by the Translation; the delegate's fp16/bf16 inputs and
// outputs are converted by the runtime, xnnpack_runtime.h); static int8 values as their real
// values (a delegate's int8 inputs and outputs too: the runtime converts them).
//
// Whatever the engine cannot compute exactly as XNNPACK specifies is refused here: NotSupported,
// the message naming the node's index, its type, and what is missing, so a program is refused at
// load and never runs wrongly.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/cpu/graph/graph_format.h"
#include "backends/xnnpack/payload.h"
#include "runtime/executor/named_data_map.h"

namespace ember::xnn {

// The weights of a translated graph, by the keys its WeightRefs name: bytes of the payload's
// constant data (a view: the blob must outlive this), bytes the translation made, or keys of the
// program's named data or .ptd (`named`, given at construction; it must outlive this).
class WeightTable final : public NamedDataMap {
 public:
  void add_view(std::string key, std::span<const uint8_t> bytes);
  void add_owned(std::string key, std::vector<uint8_t> bytes);
  void set_named(const NamedDataMap* named) { named_ = named; }

  Result<TensorLayout> get_tensor_layout(std::string_view key) const override;
  Result<FreeableBuffer> get_data(std::string_view key) const override;
  Error load_data_into(std::string_view key, void* buffer, size_t size) const override;
  size_t num_keys() const override { return entries_.size(); }
  Result<std::string_view> key(size_t index) const override;

 private:
  struct Entry {
    std::span<const uint8_t> view;
    std::vector<uint8_t> owned;
    std::span<const uint8_t> bytes() const { return owned.empty() ? view : owned; }
  };
  std::map<std::string, Entry, std::less<>> entries_;
  const NamedDataMap* named_ = nullptr;
};

struct Translation {
  cpu::CpuGraph graph;
  std::unique_ptr<WeightTable> weights;
  // Where the payload computes row by row (translate_rows.cc): the leading dims (every dim but
  // the last) all its values share, at their upper bounds. The graph then holds each value as
  // [rows, last dim], rows the product of these, and its rows are the engine's dynamic batch
  // (symbol 0): a call may bring any leading dims of at most that many rows. Empty: the graph is
  // at the payload's sizes, the only ones a call may bring.
  std::vector<int64_t> lead;
};

// The engine graph of `p` (read_payload's result; its blob must outlive the Translation, whose
// weights view its constant data): over rows where `p` computes row by row (Translation::lead),
// else at its sizes. Constants under a named key resolve through `named` (the program's named
// data, or a .ptd's), which may be null when none are named.
Result<Translation> translate(const Payload& p, const NamedDataMap* named);

}  // namespace ember::xnn
