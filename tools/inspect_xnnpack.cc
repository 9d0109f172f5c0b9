#include "tools/inspect_xnnpack.h"

#include <sstream>
#include <vector>

#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/translate.h"
#include "runtime/core/error.h"
#include "tools/json.h"

namespace ember::tools {
namespace {

using xnn::Payload;
using xnn::Quant;

struct Summary {
  Result<Payload> payload = Error::Internal;
  std::string read_error;  // read_payload's message, when it refuses
  bool runs = false;
  std::string reason;  // translate's refusal
};

Summary summarize(std::span<const uint8_t> blob, const NamedDataMap* named) {
  Summary s;
  clear_error_message();
  s.payload = xnn::read_payload(blob);
  if (!s.payload.ok()) {
    s.read_error = last_error_message();
    s.reason = s.read_error;
    return s;
  }
  clear_error_message();
  Result<xnn::Translation> t = xnn::translate(*s.payload, named);
  s.runs = t.ok();
  if (!t.ok()) s.reason = last_error_message();
  return s;
}

// (Streams rather than chains of std::string operator+, which gcc 12 reports as false overlaps.)
std::string dims_text(const std::vector<int64_t>& dims) {
  std::ostringstream out;
  out << "[";
  for (size_t i = 0; i < dims.size(); ++i) out << (i ? ", " : "") << dims[i];
  out << "]";
  return out.str();
}

std::string number(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

std::string quant_text(const Quant& q) {
  std::ostringstream out;
  switch (q.kind) {
    case Quant::Kind::PerTensor:
      out << "scale " << q.scale << " zero point " << q.zero_point;
      break;
    case Quant::Kind::PerChannel:
    case Quant::Kind::PerChannelGroup:
      out << (q.kind == Quant::Kind::PerChannel ? "per channel" : "per channel group") << ", dim "
          << q.channel_dim;
      if (q.kind == Quant::Kind::PerChannelGroup) out << ", group size " << q.group_size;
      out << ", " << q.num_scales << " scales";
      if (q.scale_constant != 0) out << " in constant " << q.scale_constant;
      break;
    case Quant::Kind::PerToken:
      out << "per token, " << q.num_nonbatch_dims << " non-batch dims";
      break;
    case Quant::Kind::None:
      break;
  }
  return out.str();
}

std::string value_text(const Payload& p, uint32_t id) {
  const xnn::Value& v = p.values[id];
  std::ostringstream out;
  out << "v" << id << " " << xnn::datatype_name(v.dtype) << " " << dims_text(v.dims);
  if (v.constant != 0) out << " const";
  if (v.quantized()) out << " (" << quant_text(v.quant) << ")";
  return out.str();
}

std::string quant_json(const Quant& q) {
  std::ostringstream out;
  switch (q.kind) {
    case Quant::Kind::None:
      return "null";
    case Quant::Kind::PerTensor:
      out << "{\"kind\": \"per_tensor\", \"scale\": " << json_number(q.scale)
          << ", \"zero_point\": " << q.zero_point << "}";
      break;
    case Quant::Kind::PerChannel:
    case Quant::Kind::PerChannelGroup:
      out << "{\"kind\": "
          << (q.kind == Quant::Kind::PerChannel ? "\"per_channel\"" : "\"per_channel_group\"")
          << ", \"channel_dim\": " << q.channel_dim << ", \"num_scales\": " << q.num_scales
          << ", \"scale_constant\": " << q.scale_constant;
      if (q.kind == Quant::Kind::PerChannelGroup) out << ", \"group_size\": " << q.group_size;
      out << "}";
      break;
    case Quant::Kind::PerToken:
      out << "{\"kind\": \"per_token\", \"num_nonbatch_dims\": " << q.num_nonbatch_dims << "}";
      break;
  }
  return out.str();
}

std::string value_json(const Payload& p, uint32_t id) {
  const xnn::Value& v = p.values[id];
  std::ostringstream out;
  out << "{\"id\": " << id << ", \"dtype\": " << json_string(xnn::datatype_name(v.dtype))
      << ", \"shape\": [";
  for (size_t i = 0; i < v.dims.size(); ++i) out << (i ? ", " : "") << v.dims[i];
  out << "], \"constant\": " << (v.constant != 0 ? "true" : "false")
      << ", \"quant\": " << quant_json(v.quant) << "}";
  return out.str();
}

// The ids a node reads, absent optional inputs (a bias) left out.
std::vector<uint32_t> present(const std::vector<uint32_t>& ids) {
  std::vector<uint32_t> out;
  for (const uint32_t id : ids) {
    if (id != xnn::kNoValue) out.push_back(id);
  }
  return out;
}

}  // namespace

std::string xnnpack_delegate_text(std::span<const uint8_t> blob, const NamedDataMap* named,
                                  const std::string& indent) {
  const Summary s = summarize(blob, named);
  std::ostringstream out;
  if (!s.payload.ok()) {
    out << indent << "XNNPACK payload unreadable: " << s.read_error << "\n";
    return out.str();
  }
  const Payload& p = *s.payload;
  out << indent << "XNNPACK payload " << p.identifier << ", " << p.values.size() << " value(s), "
      << p.nodes.size() << " node(s):\n";
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const xnn::Node& n = p.nodes[i];
    out << indent << "  " << i << ": " << xnn::node_type_name(n.type) << " (debug handle "
        << n.debug_handle << ")";
    const std::vector<uint32_t> ins = present(n.inputs);
    for (size_t k = 0; k < ins.size(); ++k) out << (k ? ", " : " ") << value_text(p, ins[k]);
    out << " ->";
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      out << (k ? ", " : " ") << value_text(p, n.outputs[k]);
    }
    if (n.has_output_min_max) {
      out << "; output clamped to [" << number(n.output_min) << ", " << number(n.output_max) << "]";
    }
    out << "\n";
  }
  out << indent << "Ember: " << (s.runs ? "runs it" : "cannot run it: ") << s.reason << "\n";
  return out.str();
}

std::string xnnpack_delegate_json(std::span<const uint8_t> blob, const NamedDataMap* named) {
  const Summary s = summarize(blob, named);
  std::ostringstream out;
  if (!s.payload.ok()) {
    out << "{\"identifier\": null, \"version\": null, \"read_error\": " << json_string(s.read_error)
        << ", \"nodes\": [], \"ember\": {\"runs\": false, \"reason\": " << json_string(s.reason)
        << "}}";
    return out.str();
  }
  const Payload& p = *s.payload;
  out << "{\"identifier\": " << json_string(p.identifier)
      << ", \"version\": " << json_string(p.version) << ", \"read_error\": null, \"nodes\": [";
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const xnn::Node& n = p.nodes[i];
    out << (i ? ", " : "") << "{\"index\": " << i
        << ", \"type\": " << json_string(xnn::node_type_name(n.type))
        << ", \"debug_handle\": " << n.debug_handle << ", \"inputs\": [";
    const std::vector<uint32_t> ins = present(n.inputs);
    for (size_t k = 0; k < ins.size(); ++k) out << (k ? ", " : "") << value_json(p, ins[k]);
    out << "], \"outputs\": [";
    for (size_t k = 0; k < n.outputs.size(); ++k) {
      out << (k ? ", " : "") << value_json(p, n.outputs[k]);
    }
    out << "], \"output_min_max\": ";
    if (n.has_output_min_max) {
      out << "[" << json_number(n.output_min) << ", " << json_number(n.output_max) << "]";
    } else {
      out << "null";
    }
    out << "}";
  }
  out << "], \"ember\": {\"runs\": " << (s.runs ? "true" : "false")
      << ", \"reason\": " << json_string(s.reason) << "}}";
  return out.str();
}

}  // namespace ember::tools
