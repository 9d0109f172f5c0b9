// The .pt2 reader: the graph signature and the stored tensors (weights and constants).
#include <cstring>

#include "compiler/import/exported_program.h"
#include "compiler/import/pt2_internal.h"

namespace ember::importer::pt2_internal {

json Translator::read_signature(const json& sig) {
  const json& specs = as_array(field(sig, "input_specs", "signature"), "signature.input_specs");
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string w = at("signature.input_specs", i);
    auto [kind, v] = union_of(specs[i], w);
    InputSpec s;
    if (kind == "user_input") {
      auto [k, a] = union_of(field(*v, "arg", w), w + ".arg");
      if (k != "as_tensor") fail(w, "a user input of kind '" + k + "'; Ember takes tensors only");
      s.value = as_string(field(*a, "name", w), w);
      s.kind = "user_input";
    } else if (kind == "parameter" || kind == "buffer" || kind == "tensor_constant") {
      s.value = as_string(field(field(*v, "arg", w), "name", w), w);
      s.kind = kind == "tensor_constant" ? "constant" : kind;
      const char* key = kind == "parameter" ? "parameter_name"
                        : kind == "buffer"  ? "buffer_name"
                                            : "tensor_constant_name";
      s.target = as_string(field(*v, key, w), w + "." + key);
      if (kind == "buffer") {
        const json* p = optional_field(*v, "persistent");
        s.persistent = p == nullptr || !p->is_boolean() || p->get<bool>();
      }
    } else {
      fail(w, "input of kind '" + kind +
                  "' is not supported (Ember reads parameters, "
                  "buffers, tensor constants and tensor user inputs)");
    }
    if (input_specs_.count(s.value) != 0) fail(w, "value '" + s.value + "' appears twice");
    order_.push_back(s.value);
    input_specs_[s.value] = s;
  }
  output_specs_ = &as_array(field(sig, "output_specs", "signature"), "signature.output_specs");
  return json::object();
}

void Translator::finish_signature(const Scope& scope, const json& outputs, json* signature) {
  json inputs = json::array();
  std::set<std::string> stored;
  for (const std::string& torch_name : order_) {
    const InputSpec& s = input_specs_[torch_name];
    json spec = {{"kind", s.kind}, {"value", lookup(scope, torch_name, "signature")}};
    if (s.kind != "user_input") {
      spec["target"] = s.target;
      if (stored.insert(s.target).second) add_tensor(s.target);
    }
    if (s.kind == "buffer") spec["persistent"] = s.persistent;
    inputs.push_back(spec);
  }
  const json& specs = *output_specs_;
  if (specs.size() != outputs.size()) {
    fail("signature.output_specs", std::to_string(specs.size()) + " entries for " +
                                       std::to_string(outputs.size()) + " graph outputs");
  }
  json jout = json::array();
  json mutated_buffers = json::array(), mutated_inputs = json::array();
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string w = at("signature.output_specs", i);
    auto [kind, v] = union_of(specs[i], w);
    json spec = {{"value", outputs[i]}};
    if (kind == "user_output") {
      spec["kind"] = "user_output";
    } else if (kind == "buffer_mutation") {
      spec["kind"] = "buffer_mutation";
      spec["target"] = as_string(field(*v, "buffer_name", w), w + ".buffer_name");
      mutated_buffers.push_back(spec["target"]);
    } else if (kind == "user_input_mutation") {
      spec["kind"] = "user_input_mutation";
      const std::string input = as_string(field(*v, "user_input_name", w), w);
      spec["target"] = lookup(scope, input, w);
      mutated_inputs.push_back(spec["target"]);
    } else if (kind == "parameter_mutation") {
      fail(w,
           "the program writes a parameter; Ember's programs cannot update parameters "
           "(register the tensor as a buffer)");
    } else {
      fail(w, "output of kind '" + kind + "' is not supported (training outputs, tokens)");
    }
    jout.push_back(spec);
  }
  *signature = {{"inputs", inputs},
                {"outputs", jout},
                {"mutated_buffers", mutated_buffers},
                {"mutated_parameters", json::array()},
                {"mutated_user_inputs", mutated_inputs}};
}

void Translator::add_tensor(const std::string& fqn) {
  const std::string w = "tensor '" + fqn + "'";
  auto it = configs_.find(fqn);
  if (it == configs_.end()) {
    fail(w,
         "not in data/weights/model_weights_config.json nor in "
         "data/constants/model_constants_config.json");
  }
  const json& entry = it->second.second;
  const std::string path = it->second.first + as_string(field(entry, "path_name", w), w);
  if (const json* pickle = optional_field(entry, "use_pickle");
      pickle != nullptr && pickle->is_boolean() && pickle->get<bool>()) {
    fail(w, "stored with pickle; Ember reads raw tensor files only");
  }
  const json& meta = field(entry, "tensor_meta", w);
  const std::string dtype =
      dtype_of_code(as_int(field(meta, "dtype", w), w + ".dtype"), w + ".dtype");
  const size_t element = ir::dtype_size(*ir::dtype_from_name(dtype));
  const json& sizes = as_array(field(meta, "sizes", w), w + ".sizes");
  const json& strides = as_array(field(meta, "strides", w), w + ".strides");
  if (sizes.size() != strides.size()) fail(w, "strides and sizes differ in rank");
  std::vector<int64_t> shape, stride;
  uint64_t numel = 1;
  uint64_t last = 0;  // the largest element index the tensor reads, from storage_offset
  for (size_t d = 0; d < sizes.size(); ++d) {
    auto [sk, sv] = union_of(sizes[d], at(w + ".sizes", d));
    auto [tk, tv] = union_of(strides[d], at(w + ".strides", d));
    if (sk != "as_int" || tk != "as_int") fail(w, "a stored tensor with a symbolic size");
    shape.push_back(as_int(*sv, w));
    stride.push_back(as_int(*tv, w));
    if (shape.back() < 0 || stride.back() < 0) fail(w, "negative size or stride");
    uint64_t span = 0;
    if (__builtin_mul_overflow(numel, static_cast<uint64_t>(shape.back()), &numel) ||
        (shape.back() > 0 && (__builtin_mul_overflow(static_cast<uint64_t>(shape.back() - 1),
                                                     static_cast<uint64_t>(stride.back()), &span) ||
                              __builtin_add_overflow(last, span, &last)))) {
      fail(w, "sizes overflow");
    }
  }
  uint64_t offset = 0;
  if (const json* so = optional_field(meta, "storage_offset")) {
    auto [k, v] = union_of(*so, w + ".storage_offset");
    if (k != "as_int") fail(w, "a symbolic storage offset");
    const int64_t o = as_int(*v, w);
    if (o < 0) fail(w, "negative storage offset");
    offset = static_cast<uint64_t>(o);
  }
  const ZipEntry* file = zip_.find(path);
  if (file == nullptr) fail(w, "its data file '" + path + "' is missing from the archive");
  uint64_t nbytes = 0, needed = 0;
  if (__builtin_mul_overflow(numel, element, &nbytes) ||
      __builtin_add_overflow(offset, last, &needed) || __builtin_add_overflow(needed, 1, &needed) ||
      __builtin_mul_overflow(needed, element, &needed)) {
    fail(w, "sizes overflow");
  }
  if (numel > 0 && needed > file->data.size()) {
    fail(w, "its data file '" + path + "' has " + std::to_string(file->data.size()) +
                " bytes; the tensor reads " + std::to_string(needed));
  }
  bool dense = true;
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] != 1 && stride[d] != expected) dense = false;
    expected *= shape[d];
  }
  Blob blob;
  blob.offset = data_size_;
  if (numel == 0) {
    blob.bytes = {};
  } else if (dense) {
    blob.bytes = file->data.subspan(offset * element, nbytes);
  } else {
    // A view of a larger storage, or a non-contiguous layout: gather it row-major.
    owned_.emplace_back(nbytes);
    std::vector<uint8_t>& dst = owned_.back();
    std::vector<int64_t> index(shape.size(), 0);
    for (uint64_t i = 0; i < numel; ++i) {
      uint64_t src = offset;
      for (size_t d = 0; d < shape.size(); ++d) src += index[d] * stride[d];
      std::memcpy(dst.data() + i * element, file->data.data() + src * element, element);
      for (size_t d = shape.size(); d-- > 0;) {
        if (++index[d] < shape[d]) break;
        index[d] = 0;
      }
    }
    blob.bytes = dst;
  }
  blobs_.push_back(blob);
  data_size_ = (data_size_ + nbytes + kAlignment - 1) / kAlignment * kAlignment;
  tensors_.push_back({{"name", fqn},
                      {"dtype", dtype},
                      {"shape", shape},
                      {"offset", blob.offset},
                      {"nbytes", nbytes}});
}

}  // namespace ember::importer::pt2_internal
