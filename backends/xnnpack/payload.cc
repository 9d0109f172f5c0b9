// read_payload (payload.h): the header, then the flatbuffer (copied to aligned storage, then
// verified), then everything the verifier cannot know, value by value and node by node. Every
// refusal is an InvalidProgram whose message says what is wrong and where.
#include "backends/xnnpack/payload.h"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "ember/backends/xnnpack/xnn_graph_generated.h"
#include "runtime/core/error.h"

namespace ember::xnn {
namespace {

namespace fb = ember::xnn::fb;

constexpr size_t kHeaderBytes = 30;
constexpr uint32_t kMaxValues = 1u << 22, kMaxNodes = 1u << 22;
constexpr uint32_t kMaxParams = 64;  // elements of a node's vector (perm, shape, paddings)
// A window's sizes, strides, dilations, paddings and group counts: products of two fit int64.
constexpr uint32_t kMaxWindow = 1u << 24;
constexpr uint64_t kNoOffset = std::numeric_limits<uint64_t>::max();
constexpr int64_t kMaxNumel = int64_t{1} << 40;

uint32_t le32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}
uint64_t le64(const uint8_t* p) { return uint64_t{le32(p)} | uint64_t{le32(p + 4)} << 32; }

template <typename T>
std::vector<T> copy(const flatbuffers::Vector<T>* v) {
  return v == nullptr ? std::vector<T>{} : std::vector<T>(v->begin(), v->end());
}

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> blob) : blob_(blob) {}

  Result<Payload> run() {
    EMBER_TRY(header());
    // The flatbuffer, 8-byte aligned (the blob's placement inside a .pte is 4 mod 8 at times, and
    // flatbuffers reads scalars in place).
    // Checked before the copy: an empty blob may have no data pointer, which memcpy must not get.
    if (fb_.size() < 8) return bad("the flatbuffer has %zu bytes", fb_.size());
    storage_.assign((fb_.size() + 7) / 8, 0);
    std::memcpy(storage_.data(), fb_.data(), fb_.size());
    const auto* bytes = reinterpret_cast<const uint8_t*>(storage_.data());
    p_.identifier.assign(reinterpret_cast<const char*>(bytes) + 4, 4);
    if (p_.identifier != "XN01" && p_.identifier != "XN00") {
      return bad("the flatbuffer's identifier is not XN01 or XN00");
    }
    flatbuffers::Verifier verifier(bytes, fb_.size(), /*max_depth=*/64, /*max_tables=*/1u << 24);
    if (!verifier.VerifyBuffer<fb::Graph>(nullptr)) {
      return bad("the XNNGraph flatbuffer fails verification (truncated or corrupted)");
    }
    const fb::Graph* g = flatbuffers::GetRoot<fb::Graph>(bytes);
    if (g->version() != nullptr) p_.version = g->version()->str();
    EMBER_TRY(constants(*g));
    EMBER_TRY(values(*g));
    EMBER_TRY(externals(*g));
    EMBER_TRY(nodes(*g));
    return std::move(p_);
  }

 private:
  [[gnu::format(printf, 2, 3)]] Error bad(const char* format, ...) {
    char text[512];
    va_list args;
    va_start(args, format);
    std::vsnprintf(text, sizeof(text), format, args);
    va_end(args);
    return fail(Error::InvalidProgram, "XNNPACK payload: %s", text);
  }

  Error header() {
    if (blob_.size() >= 8 && std::memcmp(blob_.data() + 4, "XH00", 4) == 0) {
      if (blob_.size() < kHeaderBytes) return bad("the header is truncated");
      const uint32_t length = uint32_t{blob_[8]} | uint32_t{blob_[9]} << 8;
      if (length < kHeaderBytes) return bad("the header says it has %u bytes, below 30", length);
      const uint64_t fb_offset = le32(&blob_[10]), fb_size = le32(&blob_[14]);
      const uint64_t data_offset = le32(&blob_[18]), data_size = le64(&blob_[22]);
      if (fb_size == 0 || fb_offset < length || fb_offset + fb_size > blob_.size()) {
        return bad("the flatbuffer's range [%llu, +%llu) is not inside the %zu-byte blob",
                   static_cast<unsigned long long>(fb_offset),
                   static_cast<unsigned long long>(fb_size), blob_.size());
      }
      if (data_offset < fb_offset + fb_size || data_size > blob_.size() ||
          data_offset > blob_.size() - data_size) {
        return bad(
            "the constant data's range [%llu, +%llu) is not inside the %zu-byte blob "
            "after the flatbuffer",
            static_cast<unsigned long long>(data_offset),
            static_cast<unsigned long long>(data_size), blob_.size());
      }
      fb_ = blob_.subspan(fb_offset, fb_size);
      p_.constant_data = blob_.subspan(data_offset, data_size);
    } else {
      fb_ = blob_;  // a payload written before the header: the flatbuffer alone, no constant data
    }
    return Error::Ok;
  }

  Error constants(const fb::Graph& g) {
    const auto* data = g.constant_data();
    const auto* inline_buffers = g.constant_buffer();
    const bool has_data = data != nullptr && data->size() > 0;
    const bool has_inline = inline_buffers != nullptr && inline_buffers->size() > 0;
    if (has_data && has_inline) return bad("both constant_data and constant_buffer are set");
    if (has_inline) {
      if (p_.identifier != "XN00") return bad("an XN01 payload with constant_buffer");
      if (inline_buffers->size() > kMaxValues) return bad("too many constants");
      for (const fb::Buffer* b : *inline_buffers) {
        Constant c;
        c.is_inline = true;
        c.inline_bytes = copy(b->storage());
        c.size = c.inline_bytes.size();
        p_.constants.push_back(std::move(c));
      }
      return Error::Ok;
    }
    if (!has_data) {
      p_.constants.emplace_back();  // entry 0 alone: no constants
      return Error::Ok;
    }
    if (data->size() > kMaxValues) return bad("too many constants");
    for (uint32_t i = 0; i < data->size(); ++i) {
      const fb::ConstantDataOffset* d = data->Get(i);
      Constant c;
      c.offset = d->offset();
      c.size = d->size();
      if (d->named_key() != nullptr) c.named_key = d->named_key()->str();
      if (i > 0 && c.named_key.empty()) {
        if (c.offset == kNoOffset || c.size > p_.constant_data.size() ||
            c.offset > p_.constant_data.size() - c.size) {
          return bad(
              "constant %u's bytes [%llu, +%llu) are not inside the %zu bytes of "
              "constant data",
              i, static_cast<unsigned long long>(c.offset), static_cast<unsigned long long>(c.size),
              p_.constant_data.size());
        }
      }
      p_.constants.push_back(std::move(c));
    }
    return Error::Ok;
  }

  Error quant(const fb::QuantizedTensorValue& q, Value& v, uint32_t index) {
    Quant& out = v.quant;
    if (q.quant_params() == nullptr) {
      return bad("value %u: a quantized value without quantization parameters", index);
    }
    switch (q.quant_params_type()) {
      case fb::QuantParams::PerTensorQuant: {
        const auto* p = q.quant_params_as_PerTensorQuant();
        out.kind = Quant::Kind::PerTensor;
        out.scale = p->scale();
        out.zero_point = p->zero_point();
        return Error::Ok;
      }
      case fb::QuantParams::PerChannelQuant: {
        const auto* p = q.quant_params_as_PerChannelQuant();
        out.kind = Quant::Kind::PerChannel;
        out.scales = copy(p->scale());
        out.channel_dim = p->channel_dim();
        out.scale_constant = p->scale_buffer_idx();
        out.num_scales = p->num_scales();
        break;
      }
      case fb::QuantParams::PerChannelGroupQuant: {
        const auto* p = q.quant_params_as_PerChannelGroupQuant();
        out.kind = Quant::Kind::PerChannelGroup;
        out.scales = copy(p->scale());
        out.channel_dim = p->channel_dim();
        out.group_size = p->group_size();
        out.scale_constant = p->scale_buffer_idx();
        out.num_scales = p->num_scales();
        if (out.group_size <= 0) return bad("value %u: group size %d", index, out.group_size);
        break;
      }
      case fb::QuantParams::PerTokenDynamicQuant:
        out.kind = Quant::Kind::PerToken;
        out.num_nonbatch_dims = q.quant_params_as_PerTokenDynamicQuant()->num_nonbatch_dims();
        if (out.num_nonbatch_dims < 0 || out.num_nonbatch_dims > static_cast<int>(v.dims.size())) {
          return bad("value %u: %d non-batch dims of %zu", index, out.num_nonbatch_dims,
                     v.dims.size());
        }
        return Error::Ok;
      default:
        return bad("value %u: a quantized value without quantization parameters", index);
    }
    // Per channel, with or without groups: the channel dim and where the scales are.
    if (out.channel_dim < 0 || out.channel_dim >= static_cast<int>(v.dims.size())) {
      return bad("value %u: channel dim %d of a rank-%zu value", index, out.channel_dim,
                 v.dims.size());
    }
    if (out.scale_constant != 0) {
      if (out.scale_constant >= p_.constants.size()) {
        return bad("value %u: its scales are constant %u, of %zu", index, out.scale_constant,
                   p_.constants.size());
      }
      if (!out.scales.empty()) return bad("value %u: scales both inline and as constant", index);
    } else {
      out.num_scales = static_cast<uint32_t>(out.scales.size());
    }
    return Error::Ok;
  }

  Error values(const fb::Graph& g) {
    const auto* values = g.xvalues();
    if (values == nullptr || values->size() == 0) return bad("no values");
    if (values->size() > kMaxValues) return bad("%u values", values->size());
    p_.values.resize(values->size());
    std::vector<bool> seen(values->size(), false);
    for (uint32_t i = 0; i < values->size(); ++i) {
      const fb::Value* x = values->Get(i);
      const fb::TensorValue* t = nullptr;
      const fb::QuantizedTensorValue* q = nullptr;
      if (x->value_type() == fb::ValueUnion::TensorValue) {
        t = x->value_as_TensorValue();
      } else if (x->value_type() == fb::ValueUnion::QuantizedTensorValue) {
        // A union's type may be set with its table absent: each pointer is checked.
        q = x->value_as_QuantizedTensorValue();
        t = q == nullptr ? nullptr : q->tensor_value();
      }
      if (t == nullptr) return bad("value %u is not a tensor", i);
      const uint32_t id = t->id_out();
      if (id >= values->size() || seen[id]) {
        return bad("value %u has id %u: ids must be 0..%u, each once", i, id, values->size() - 1);
      }
      seen[id] = true;
      Value& v = p_.values[id];
      v.id = id;
      const auto dtype = static_cast<uint16_t>(t->datatype());
      if (dtype == 0 || dtype > static_cast<uint16_t>(Datatype::Bf16)) {
        return bad("value %u has datatype %u", id, dtype);
      }
      v.dtype = static_cast<Datatype>(dtype);
      if (t->dq_datatype() != fb::Datatype::invalid) {
        return bad(
            "value %u asks to be quantized at run time (XN00's dq_datatype), which this "
            "reader does not support; export it again with a current ExecuTorch",
            id);
      }
      const auto* dims = t->dims();
      const size_t rank = dims == nullptr ? 0 : dims->size();
      if (rank > static_cast<size_t>(kMaxXnnRank) || t->num_dims() != rank) {
        return bad("value %u has %zu dims (num_dims %u); at most %d", id, rank, t->num_dims(),
                   kMaxXnnRank);
      }
      for (size_t d = 0; d < rank; ++d) v.dims.push_back(dims->Get(static_cast<uint32_t>(d)));
      if (numel(v.dims) < 0) return bad("value %u has more than 2^40 elements", id);
      v.constant = t->constant_buffer_idx();
      if (v.constant >= p_.constants.size()) {
        return bad("value %u is constant %u, of %zu", id, v.constant, p_.constants.size());
      }
      v.flags = t->flags();
      v.external_id = t->external_id();
      if (v.constant != 0 && (v.flags & (kExternalInput | kExternalOutput)) != 0) {
        return bad("value %u is both a constant and external", id);
      }
      if (q != nullptr) EMBER_TRY(quant(*q, v, id));
    }
    return Error::Ok;
  }

  // The delegate's arguments: the values input_ids and output_ids list, bound by external id
  // (ExecuTorch's runtime passes argument k to the external value of id k; the exporter lists
  // input_ids in the order it defines values, so x + y * y lists y first). Inputs take external
  // ids 0..n_in-1, outputs the ids after them; every value flagged external is listed.
  Error externals(const fb::Graph& g) {
    p_.inputs = copy(g.input_ids());
    p_.outputs = copy(g.output_ids());
    if (p_.outputs.empty()) return bad("no outputs");
    for (std::vector<uint32_t>* list : {&p_.inputs, &p_.outputs}) {
      for (const uint32_t id : *list) {
        if (id >= p_.values.size()) return bad("argument value %u is absent", id);
      }
      std::stable_sort(list->begin(), list->end(), [&](uint32_t a, uint32_t b) {
        return p_.values[a].external_id < p_.values[b].external_id;
      });
    }
    const size_t n_in = p_.inputs.size();
    std::vector<bool> listed(p_.values.size(), false);
    for (size_t k = 0; k < n_in + p_.outputs.size(); ++k) {
      const bool is_input = k < n_in;
      const uint32_t id = is_input ? p_.inputs[k] : p_.outputs[k - n_in];
      const Value& v = p_.values[id];
      const uint32_t flag = is_input ? kExternalInput : kExternalOutput;
      if (v.flags != flag || v.external_id != k) {
        return bad(
            "argument %zu is value %u, which is not external %s %zu (flags %u, "
            "external id %u)",
            k, id, is_input ? "input" : "output", k, v.flags, v.external_id);
      }
      listed[id] = true;
    }
    if (g.num_externs() != n_in + p_.outputs.size()) {
      return bad("num_externs is %u, with %zu inputs and %zu outputs", g.num_externs(), n_in,
                 p_.outputs.size());
    }
    for (const Value& v : p_.values) {
      if (v.flags != 0 && !listed[v.id]) {
        return bad("value %u has flags %u but is not among input_ids and output_ids", v.id,
                   v.flags);
      }
    }
    return Error::Ok;
  }

  // The value ids a node reads and writes, by node type; false for an unknown type.
  bool ids(const fb::Node& n, Node& out) {
    using T = fb::NodeUnion;
    const uint8_t tag = static_cast<uint8_t>(n.node_type());
    if (tag == 0 || tag > kLastNodeType || n.node() == nullptr) return false;
    out.type = static_cast<NodeType>(tag);
    auto window_of = [&](const fb::NodeConv& c) {
      out.window = {c.padding_top(),
                    c.padding_right(),
                    c.padding_bottom(),
                    c.padding_left(),
                    c.kernel_height(),
                    c.kernel_width(),
                    c.subsampling_height(),
                    c.subsampling_width(),
                    c.dilation_height(),
                    c.dilation_width(),
                    c.groups(),
                    c.group_input_channels(),
                    c.group_output_channels(),
                    c.adjustment_height(),
                    c.adjustment_width()};
      out.inputs = {c.input1_id(), c.filter_id(), c.bias_id()};
      out.outputs = {c.output_id()};
      out.flags = c.flags();
    };
    auto pool_of = [&](const fb::Pooling2D& p) {
      Window& w = out.window;
      w.pad_top = p.padding_top();
      w.pad_right = p.padding_right();
      w.pad_bottom = p.padding_bottom();
      w.pad_left = p.padding_left();
      w.kernel_h = p.pooling_height();
      w.kernel_w = p.pooling_width();
      w.stride_h = p.stride_height();
      w.stride_w = p.stride_width();
      w.dilation_h = p.dilation_height();
      w.dilation_w = p.dilation_width();
      out.inputs = {p.input_id()};
      out.outputs = {p.output_id()};
      out.flags = p.flags();
    };
    switch (n.node_type()) {
      case T::XNNFullyConnected: {
        const auto* f = n.node_as_XNNFullyConnected();
        out.inputs = {f->input1_id(), f->filter_id(), f->bias_id()};
        out.outputs = {f->output_id()};
        out.flags = f->flags();
        return true;
      }
      case T::XNNStaticTranspose: {
        const auto* t = n.node_as_XNNStaticTranspose();
        out.inputs = {t->input_id()};
        out.outputs = {t->output_id()};
        out.ints = copy(t->perm());
        out.flags = t->flags();
        return true;
      }
      case T::XNNConv2d:
        window_of(*n.node_as_XNNConv2d());
        return true;
      case T::XNNDepthwiseConv2d:
        window_of(*n.node_as_XNNDepthwiseConv2d());
        return true;
      case T::XNNConvTranspose2d:
        window_of(*n.node_as_XNNConvTranspose2d());
        return true;
      case T::XNNStaticResizeBilinear2D: {
        const auto* r = n.node_as_XNNStaticResizeBilinear2D();
        out.inputs = {r->input_id()};
        out.outputs = {r->output_id()};
        out.new_height = r->new_height();
        out.new_width = r->new_width();
        out.flags = r->flags();
        return true;
      }
      case T::XNNStaticConstantPad: {
        const auto* p = n.node_as_XNNStaticConstantPad();
        out.inputs = {p->input_id()};
        out.outputs = {p->output_id()};
        out.ints = copy(p->pre_paddings());
        out.ints2 = copy(p->post_paddings());
        out.alpha = p->padding_value();
        out.flags = p->flags();
        return true;
      }
      case T::XNNAvgPooling2d:
        pool_of(*n.node_as_XNNAvgPooling2d());
        return true;
      case T::XNNMaxPooling2d:
        pool_of(*n.node_as_XNNMaxPooling2d());
        return true;
      case T::XNNStaticReshape: {
        const auto* r = n.node_as_XNNStaticReshape();
        out.inputs = {r->input_id()};
        out.outputs = {r->output_id()};
        out.ints = copy(r->new_shape());
        out.flags = r->flags();
        return true;
      }
      case T::XNNArgMaxPooling2d: {
        const auto* p = n.node_as_XNNArgMaxPooling2d();
        Window& w = out.window;
        w.pad_top = p->padding_top();
        w.pad_right = p->padding_right();
        w.pad_bottom = p->padding_bottom();
        w.pad_left = p->padding_left();
        w.kernel_h = p->pooling_height();
        w.kernel_w = p->pooling_width();
        out.inputs = {p->input_id()};
        out.outputs = {p->output_value_id(), p->output_index_id()};
        out.flags = p->flags();
        return true;
      }
      case T::XNNLeakyReLU: {
        const auto* l = n.node_as_XNNLeakyReLU();
        out.inputs = {l->input_id()};
        out.outputs = {l->output_id()};
        out.alpha = l->negative_slope();
        out.flags = l->flags();
        return true;
      }
      case T::XNNELU: {
        const auto* e = n.node_as_XNNELU();
        out.inputs = {e->input_id()};
        out.outputs = {e->output_id()};
        out.alpha = e->alpha();
        out.flags = e->flags();
        return true;
      }
      case T::XNNConcatenate2:
      case T::XNNConcatenate3:
      case T::XNNConcatenate4:
      case T::XNNConcatenate5: {
        const auto* c = static_cast<const fb::Concatenate*>(n.node());
        const uint32_t all[5] = {c->input1_id(), c->input2_id(), c->input3_id(), c->input4_id(),
                                 c->input5_id()};
        // Concatenate5's tag is not Concatenate4's + 1.
        const int count = n.node_type() == T::XNNConcatenate5
                              ? 5
                              : 2 + (tag - static_cast<uint8_t>(T::XNNConcatenate2));
        out.inputs.assign(all, all + count);
        out.outputs = {c->output_id()};
        out.axis = c->axis();
        out.flags = c->flags();
        return true;
      }
      case T::XNNStaticSlice: {
        const auto* s = n.node_as_XNNStaticSlice();
        out.inputs = {s->input_id()};
        out.outputs = {s->output_id()};
        out.ints = copy(s->offsets());
        out.ints2 = copy(s->sizes());
        out.flags = s->flags();
        return true;
      }
      case T::XNNScaledDotProductAttention: {
        const auto* a = n.node_as_XNNScaledDotProductAttention();
        out.inputs = {a->query_id(), a->key_id(), a->value_id(), a->scale_id(), a->mask_id()};
        out.outputs = {a->output_id()};
        out.flags = a->flags();
        return true;
      }
      case T::XNNAdd:
      case T::XNNDiv:
      case T::XNNMinimum:
      case T::XNNMultiply:
      case T::XNNSubtract:
      case T::XNNMaximum:
      case T::XNNPReLU:
      case T::XNNBatchMatrixMultiply: {
        const auto* b = static_cast<const fb::Node2x1*>(n.node());
        out.inputs = {b->input1_id(), b->input2_id()};
        out.outputs = {b->output_id()};
        out.flags = b->flags();
        return true;
      }
      default: {  // every other type is a Node1x1 (the schema's union says which)
        const auto* u = static_cast<const fb::Node1x1*>(n.node());
        out.inputs = {u->input_id()};
        out.outputs = {u->output_id()};
        out.flags = u->flags();
        return true;
      }
    }
  }

  Error nodes(const fb::Graph& g) {
    const auto* nodes = g.xnodes();
    if (nodes == nullptr) return bad("no nodes");
    if (nodes->size() > kMaxNodes) return bad("%u nodes", nodes->size());
    // Defined: external inputs and constants, then each node's outputs in turn.
    std::vector<bool> defined(p_.values.size(), false);
    for (const Value& v : p_.values) defined[v.id] = v.constant != 0;
    for (const uint32_t id : p_.inputs) defined[id] = true;
    for (uint32_t i = 0; i < nodes->size(); ++i) {
      const fb::Node* n = nodes->Get(i);
      Node out;
      if (!ids(*n, out)) {
        return bad("node %u has node type %u, which this reader does not know", i,
                   static_cast<unsigned>(n->node_type()));
      }
      out.debug_handle = n->debug_handle();
      if (const fb::OutputMinMax* m = n->output_min_max()) {
        out.has_output_min_max = true;
        out.output_min = m->output_min();
        out.output_max = m->output_max();
      }
      const Window& w = out.window;
      for (const uint32_t x :
           {w.pad_top, w.pad_right, w.pad_bottom, w.pad_left, w.kernel_h, w.kernel_w, w.stride_h,
            w.stride_w, w.dilation_h, w.dilation_w, w.groups, w.group_input_channels,
            w.group_output_channels, w.adjustment_h, w.adjustment_w}) {
        if (x > kMaxWindow) {
          return bad("node %u (%s) has a window parameter of %u, past 2^24", i,
                     node_type_name(out.type), x);
        }
      }
      if (out.ints.size() > kMaxParams || out.ints2.size() > kMaxParams) {
        return bad("node %u (%s) has %zu parameters", i, node_type_name(out.type),
                   std::max(out.ints.size(), out.ints2.size()));
      }
      for (size_t k = 0; k < out.inputs.size(); ++k) {
        const uint32_t id = out.inputs[k];
        const bool optional =
            (k == 2 &&
             (out.type == NodeType::FullyConnected || out.type == NodeType::Conv2d ||
              out.type == NodeType::DepthwiseConv2d || out.type == NodeType::ConvTranspose2d)) ||
            (k == 4 && out.type == NodeType::ScaledDotProductAttention);
        if (optional && id == kNoValue) continue;
        if (id >= p_.values.size() || !defined[id]) {
          return bad("node %u (%s) reads value %u as input %zu, which %s", i,
                     node_type_name(out.type), id, k,
                     id >= p_.values.size() ? "does not exist" : "nothing has written yet");
        }
      }
      for (const uint32_t id : out.outputs) {
        if (id >= p_.values.size() || defined[id]) {
          return bad("node %u (%s) writes value %u, which %s", i, node_type_name(out.type), id,
                     id >= p_.values.size() ? "does not exist"
                                            : "is already defined (an input, a constant or "
                                              "another node's output)");
        }
        defined[id] = true;
      }
      p_.nodes.push_back(std::move(out));
    }
    for (const uint32_t id : p_.outputs) {
      if (!defined[id]) return bad("output value %u is never written", id);
    }
    return Error::Ok;
  }

  std::span<const uint8_t> blob_;
  std::span<const uint8_t> fb_;
  std::vector<uint64_t> storage_;
  Payload p_;
};

}  // namespace

const char* datatype_name(Datatype d) {
  static const char* const names[] = {"invalid", "fp32",   "fp16",    "qint8",  "quint8",
                                      "qint32",  "qcint8", "qcint32", "qcint4", "qdint8",
                                      "qbint4",  "qpint8", "int32",   "pfp32",  "bf16"};
  const auto i = static_cast<size_t>(d);
  return i < std::size(names) ? names[i] : "unknown";
}

const char* node_type_name(NodeType t) {
  const auto i = static_cast<size_t>(t);
  if (i == 0 || i > kLastNodeType) return "unknown";
  return fb::EnumNamesNodeUnion()[i];
}

int64_t numel(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (const int64_t d : dims) {
    if (d < 0 || (d > 0 && n > kMaxNumel / d)) return -1;
    n *= d;
  }
  return n;
}

Result<Payload> read_payload(std::span<const uint8_t> blob) { return Reader(blob).run(); }

}  // namespace ember::xnn
