// The Python runtime's native half: the `_ember_runtime` extension module that `ember.runtime`
// (runtime.py) wraps. It holds an ember::Module and converts between Python buffers and tensors.
//
//   import _ember_runtime as rt
//   p = rt.Program("m.pte", "m.ptd", "mmap", 0)
//   outs = p.execute("forward", [(numpy_array, "float32")])   # a list of numpy arrays / scalars
//
// Inputs are read in place: a buffer of the declared dtype laid out in the method input's dim order
// (C order, or channels-last for a channels-last input) becomes the tensor's storage without a
// copy (the method copies it into its planned input, as from C++); one in another dense order is
// first copied into the method's. Outputs are
// copied out, because the method overwrites them on its next call. Every runtime error raises
// EmberRuntimeError carrying the runtime's message; nothing here aborts on a caller's input.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backends/builtin_runtime.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/executor/module.h"
#include "runtime/kernels/cortex_m/cortex_m.h"
#include "runtime/kernels/llm/llm.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/kernels/portable/util/copy.h"
#if EMBER_HAVE_LLM
#include "runtime/llm/generator.h"
#include "runtime/llm/tokenizer.h"
#endif
#include "runtime/platform/thread_pool.h"
#include "tools/profile.h"

namespace py = pybind11;

namespace ember::python {
namespace {

// The error type every failure raises: the runtime's message, prefixed with the error's name.
class RuntimeFailure : public std::exception {
 public:
  explicit RuntimeFailure(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

[[noreturn]] void raise(Error e, const std::string& context) {
  throw RuntimeFailure(context + ": " + to_string(e) + ": " + last_error_message());
}

template <typename T>
T value_or_raise(Result<T> r, const std::string& context) {
  if (!r.ok()) raise(r.error(), context);
  return std::move(*r);
}

// PyTorch's dtype names, as ember::to_string(ScalarType) writes them.
ScalarType parse_dtype(const std::string& name) {
  for (ScalarType t : {ScalarType::Byte, ScalarType::Char, ScalarType::Short, ScalarType::Int,
                       ScalarType::Long, ScalarType::Half, ScalarType::Float, ScalarType::Double,
                       ScalarType::Bool, ScalarType::BFloat16}) {
    if (name == to_string(t)) return t;
  }
  throw RuntimeFailure("InvalidArgument: dtype '" + name + "' is not one Ember computes with");
}

// The numpy dtype that holds `t`'s bytes (bfloat16: uint16, which runtime.py reinterprets).
py::dtype numpy_dtype(ScalarType t) {
  switch (t) {
    case ScalarType::Byte:
      return py::dtype::of<uint8_t>();
    case ScalarType::Char:
      return py::dtype::of<int8_t>();
    case ScalarType::Short:
      return py::dtype::of<int16_t>();
    case ScalarType::Int:
      return py::dtype::of<int32_t>();
    case ScalarType::Long:
      return py::dtype::of<int64_t>();
    case ScalarType::Half:
      return py::dtype("float16");
    case ScalarType::Float:
      return py::dtype::of<float>();
    case ScalarType::Double:
      return py::dtype::of<double>();
    case ScalarType::Bool:
      return py::dtype::of<bool>();
    case ScalarType::BFloat16:
      return py::dtype::of<uint16_t>();
    default:
      throw RuntimeFailure(std::string("NotSupported: an output of dtype ") + to_string(t));
  }
}

py::dict tensor_info_dict(const TensorInfo& info) {
  py::dict d;
  d["dtype"] = to_string(info.dtype);
  d["sizes"] = std::vector<int32_t>(info.sizes.begin(), info.sizes.end());
  d["dim_order"] = std::vector<int>(info.dim_order.begin(), info.dim_order.end());
  d["dynamic"] = info.dynamism != ShapeDynamism::Static;
  d["nbytes"] = info.nbytes;
  return d;
}

py::list values_info(const MethodMeta& meta, bool inputs) {
  py::list out;
  const size_t n = inputs ? meta.num_inputs() : meta.num_outputs();
  for (size_t i = 0; i < n; ++i) {
    const std::string what = std::string(inputs ? "input " : "output ") + std::to_string(i);
    const Tag tag = value_or_raise(inputs ? meta.input_tag(i) : meta.output_tag(i), what);
    py::dict d;
    if (tag == Tag::Tensor) {
      d = tensor_info_dict(
          value_or_raise(inputs ? meta.input_tensor_info(i) : meta.output_tensor_info(i), what));
    }
    d["kind"] = to_string(tag);
    out.append(d);
  }
  return out;
}

// One input's tensor and the sizes it points to, alive for one execute call; `owned` holds a
// copy laid out in the method's dim order where the caller's buffer has another.
struct InputTensor {
  std::vector<int32_t> sizes;
  Tensor tensor;
  std::optional<OwnedTensor> owned;
};

// Whether a buffer of `shape` with byte `strides` is dense in dim order `order` (dims of size 1
// may have any stride).
bool dense_in(const py::buffer_info& b, const std::vector<uint8_t>& order) {
  int64_t expected = b.itemsize;
  for (size_t i = order.size(); i-- > 0;) {
    const size_t d = order[i];
    if (b.shape[d] > 1 && b.strides[d] != expected) return false;
    expected *= b.shape[d];
  }
  return true;
}

// A tensor over the buffer of `pair` = (buffer, dtype name), dense in some dim order (runtime.py
// copies other layouts): read in place where that order is the method's input's (`want`, empty
// for an input the method does not describe as a tensor), else copied into the method's order,
// as the `ember` command lays out an .npy input. `holder` keeps its sizes (and any copy);
// `buffer` keeps the buffer's view alive.
Tensor* tensor_over(py::handle item, InputTensor& holder, py::buffer_info& buffer,
                    const std::vector<uint8_t>& want, const std::string& what) {
  py::tuple pair = item.cast<py::tuple>();
  const ScalarType dtype = parse_dtype(pair[1].cast<std::string>());
  buffer = pair[0].cast<py::buffer>().request();
  const py::buffer_info& b = buffer;
  if (static_cast<size_t>(b.itemsize) != element_size(dtype)) {
    throw RuntimeFailure("InvalidArgument: " + what + ": items of " + std::to_string(b.itemsize) +
                         " bytes for dtype " + to_string(dtype));
  }
  holder.sizes.clear();
  for (py::ssize_t s : b.shape) {
    if (s > INT32_MAX) throw RuntimeFailure("InvalidArgument: " + what + " is too large");
    holder.sizes.push_back(static_cast<int32_t>(s));
  }
  const auto rank = static_cast<size_t>(b.ndim);
  // The buffer's own order: the method's where it fits, else C order, else its dims by
  // decreasing stride.
  std::vector<uint8_t> order(rank);
  for (size_t d = 0; d < rank; ++d) order[d] = static_cast<uint8_t>(d);
  const bool method_order = want.size() == rank && dense_in(b, want);
  if (method_order) {
    order = want;
  } else if (!dense_in(b, order)) {
    std::stable_sort(order.begin(), order.end(),
                     [&](uint8_t x, uint8_t y) { return b.strides[x] > b.strides[y]; });
    if (!dense_in(b, order)) {
      throw RuntimeFailure("InvalidArgument: " + what + " is not dense in any dim order");
    }
  }
  holder.tensor = value_or_raise(Tensor::make(dtype, holder.sizes, order, b.ptr), what);
  if (method_order || want.size() != rank) return &holder.tensor;  // the method names a rank error
  holder.owned = value_or_raise(OwnedTensor::zeros(dtype, holder.sizes, want), what);
  copy_tensor(holder.tensor, holder.owned->tensor());
  return &holder.owned->tensor();
}

bool is_tensor_item(py::handle item) {
  return py::isinstance<py::tuple>(item) && py::len(item) == 2;
}

// One call of a registered kernel, for tests of single kernels against PyTorch's reference
// implementations (ember.runtime.call_kernel). `args` are the kernel's arguments in the
// out-variant order (the out tensors and their repeat included): (buffer, dtype) for a tensor,
// written in place when the kernel writes it; an int, float, bool, str or None; a list of ints,
// floats or bools; a list of (buffer, dtype) or None for a tensor list. The signature of the
// registered kernel is checked first, as a method does at load.
class KernelCallArgs {
 public:
  explicit KernelCallArgs(const py::list& args) {
    for (size_t i = 0; i < args.size(); ++i) argv_.push_back(convert(args[i], i));
  }

  void call(const std::string& name) {
    const Kernel* k = find_kernel(name);
    if (k == nullptr) throw RuntimeFailure("OperatorMissing: no kernel is registered as " + name);
    if (k->signature != nullptr) {
      const size_t n = std::strlen(k->signature);
      if (n != argv_.size()) {
        throw RuntimeFailure("InvalidArgument: " + name + " takes " + std::to_string(n) +
                             " arguments (its signature '" + k->signature + "'), not " +
                             std::to_string(argv_.size()));
      }
      for (size_t i = 0; i < n; ++i) {
        if (!signature_admits(k->signature[i], *argv_[i])) {
          throw RuntimeFailure("InvalidArgument: " + name + ": argument " + std::to_string(i) +
                               " is a " + to_string(argv_[i]->tag()) +
                               ", which signature letter '" + k->signature[i] + "' does not admit");
        }
      }
    }
    // Scratch as a method's temp allocator gives it; untouched pages cost nothing.
    constexpr size_t kTempBytes = size_t{256} << 20;
    std::unique_ptr<uint8_t[]> temp_storage(new uint8_t[kTempBytes]);
    MemoryAllocator temp(temp_storage.get(), kTempBytes);
    KernelContext context{&temp, &ThreadPool::global()};
    Error e;
    {
      py::gil_scoped_release release;
      e = k->fn(context, {argv_.data(), argv_.size()});
    }
    if (e != Error::Ok) raise(e, name);
  }

 private:
  EValue* push(EValue v) { return &values_.emplace_back(v); }

  EValue* tensor(py::handle item, const std::string& what) {
    return push(EValue::from_tensor(
        tensor_over(item, tensors_.emplace_back(), buffers_.emplace_back(), {}, what)));
  }

  EValue* convert(py::handle item, size_t index) {
    const std::string what = "argument " + std::to_string(index);
    // bool before int: Python's bool is an int.
    if (item.is_none()) return push(EValue());
    if (py::isinstance<py::bool_>(item)) return push(EValue::from_bool(item.cast<bool>()));
    if (py::isinstance<py::int_>(item)) return push(EValue::from_int(item.cast<int64_t>()));
    if (py::isinstance<py::float_>(item)) return push(EValue::from_double(item.cast<double>()));
    if (py::isinstance<py::str>(item)) {
      return push(EValue::from_string(strings_.emplace_back(item.cast<std::string>())));
    }
    if (is_tensor_item(item)) return tensor(item, what);
    if (!py::isinstance<py::list>(item)) {
      throw RuntimeFailure("InvalidArgument: " + what + " is a " +
                           std::string(py::str(item.get_type().attr("__name__"))));
    }
    const py::list list = item.cast<py::list>();
    bool tensors = false, all_bool = !list.empty(), any_float = false, any_none = false;
    for (py::handle x : list) {
      tensors |= is_tensor_item(x);
      any_none |= x.is_none();
      all_bool &= py::isinstance<py::bool_>(x);
      any_float |= py::isinstance<py::float_>(x);
    }
    if (tensors || any_none) {
      auto& boxes = boxes_.emplace_back();
      for (py::handle x : list) {
        boxes.push_back(x.is_none() ? nullptr : tensor(x, what + " (an item)"));
      }
      auto& scratch = tensor_scratch_.emplace_back(list.size());
      const BoxedTensorList boxed{boxes.data(), scratch.data(), list.size()};
      return push(any_none ? EValue::from_optional_tensor_list(boxed)
                           : EValue::from_tensor_list(boxed));
    }
    if (all_bool) {
      auto& stored = bool_lists_.emplace_back(new bool[list.size()]);
      for (size_t i = 0; i < list.size(); ++i) stored[i] = list[i].cast<bool>();
      return push(EValue::from_bool_list({stored.get(), list.size()}));
    }
    if (any_float) {
      auto& stored = double_lists_.emplace_back();
      for (py::handle x : list) stored.push_back(x.cast<double>());
      return push(EValue::from_double_list(stored));
    }
    auto& boxes = boxes_.emplace_back();
    for (py::handle x : list) boxes.push_back(push(EValue::from_int(x.cast<int64_t>())));
    auto& scratch = int_scratch_.emplace_back(list.size());
    return push(EValue::from_int_list({boxes.data(), scratch.data(), list.size()}));
  }

  std::deque<EValue> values_;
  std::deque<InputTensor> tensors_;
  std::deque<py::buffer_info> buffers_;
  std::deque<std::string> strings_;
  std::deque<std::vector<EValue*>> boxes_;
  std::deque<std::vector<Tensor*>> tensor_scratch_;
  std::deque<std::vector<int64_t>> int_scratch_;
  std::deque<std::vector<double>> double_lists_;
  std::deque<std::unique_ptr<bool[]>> bool_lists_;
  std::vector<EValue*> argv_;
};

void call_kernel(const std::string& name, const py::list& args) {
  if (register_portable_kernels() != Error::Ok || register_cortex_m_kernels() != Error::Ok ||
      register_llm_kernels() != Error::Ok) {
    raise(Error::Internal, "registering the kernels");
  }
  KernelCallArgs(args).call(name);
}

// The backends, and the cortex_m:: kernels of ExecuTorch's Cortex-M programs (Module registers
// the portable ones).
Error register_backends() {
  EMBER_TRY(register_cortex_m_kernels());
  return backends::register_builtin_runtime_backends();
}

class PyProgram {
 public:
  PyProgram(const std::string& path, const std::string& data_path, const std::string& load_mode,
            int num_threads) {
    if (register_backends() != Error::Ok) raise(Error::Internal, "registering the backends");
    ModuleOptions options;
    options.data_path = data_path;
    options.num_threads = num_threads;
    if (load_mode == "mmap") {
      options.load_mode = LoadMode::Mmap;
    } else if (load_mode == "file") {
      options.load_mode = LoadMode::File;
    } else {
      throw RuntimeFailure("InvalidArgument: load_mode must be 'mmap' or 'file', not '" +
                           load_mode + "'");
    }
    module_ = std::make_unique<Module>(path, options);
    const Error e = module_->load();
    if (e != Error::Ok) raise(e, "loading " + path);
  }

  std::vector<std::string> method_names() {
    return value_or_raise(module_->method_names(), "method names");
  }

  py::dict method_meta(const std::string& name) {
    const MethodMeta meta = value_or_raise(module_->method_meta(name), "method '" + name + "'");
    py::dict d;
    d["name"] = std::string(meta.name());
    d["inputs"] = values_info(meta, true);
    d["outputs"] = values_info(meta, false);
    d["num_instructions"] = meta.num_instructions();
    std::vector<int64_t> arenas;
    for (size_t i = 0; i < meta.num_memory_planned_buffers(); ++i) {
      arenas.push_back(value_or_raise(meta.memory_planned_buffer_size(i), "arena size"));
    }
    d["planned_buffer_bytes"] = arenas;
    return d;
  }

  void load_method(const std::string& name) {
    const Error e = module_->load_method(name);
    if (e != Error::Ok) raise(e, "loading method '" + name + "'");
  }

  // `inputs`: per input either (buffer, dtype name) for a tensor, or an int, float or bool.
  py::list execute(const std::string& name, const py::list& inputs) {
    load_method(name);
    const MethodMeta meta = value_or_raise(module_->method_meta(name), "method '" + name + "'");
    std::vector<InputTensor> tensors(inputs.size());
    std::vector<py::buffer_info> buffers(inputs.size());
    std::vector<EValue> values(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string what = "method '" + name + "', input " + std::to_string(i);
      py::handle item = inputs[i];
      // bool before int: Python's bool is an int.
      if (py::isinstance<py::bool_>(item)) {
        values[i] = EValue::from_bool(item.cast<bool>());
      } else if (py::isinstance<py::int_>(item)) {
        values[i] = EValue::from_int(item.cast<int64_t>());
      } else if (py::isinstance<py::float_>(item)) {
        values[i] = EValue::from_double(item.cast<double>());
      } else if (is_tensor_item(item)) {
        std::vector<uint8_t> want;
        if (i < meta.num_inputs() && value_or_raise(meta.input_tag(i), what) == Tag::Tensor) {
          const TensorInfo info = value_or_raise(meta.input_tensor_info(i), what);
          want.assign(info.dim_order.begin(), info.dim_order.end());
        }
        values[i] = EValue::from_tensor(tensor_over(item, tensors[i], buffers[i], want, what));
      } else {
        throw RuntimeFailure("InvalidArgument: " + what + " is a " +
                             std::string(py::str(item.get_type().attr("__name__"))) +
                             "; pass an array, a tensor, an int, a float or a bool");
      }
    }
    Result<std::vector<EValue>> outs = [&] {
      py::gil_scoped_release release;
      return module_->execute(name, values);
    }();
    if (!outs.ok()) raise(outs.error(), "executing method '" + name + "'");
    if (auto it = profiles_.find(name); it != profiles_.end()) it->second->end_call();
    py::list result;
    for (const EValue& v : *outs) result.append(to_python(v));
    return result;
  }

  // Profiling of method `name` (ExecutionObserver): on records every later call until off.
  void set_profiling(const std::string& name, bool on) {
    Method* method = value_or_raise(module_->method(name), "loading method '" + name + "'");
    if (!on) {
      method->set_observer(nullptr);
      profiles_.erase(name);
      return;
    }
    std::unique_ptr<tools::Profile>& p = profiles_[name];
    if (!p) p = std::make_unique<tools::Profile>();
    method->set_observer(p.get());
  }

  tools::Profile& profile(const std::string& name) {
    auto it = profiles_.find(name);
    if (it == profiles_.end()) {
      throw RuntimeFailure("InvalidState: profiling of method '" + name + "' is off");
    }
    return *it->second;
  }

  py::list profile_events(const std::string& name) {
    py::list out;
    for (const tools::ProfileEvent& e : profile(name).events()) {
      py::dict d;
      d["name"] = e.name;
      d["backend"] = e.backend != nullptr ? py::object(py::str(e.backend)) : py::none();
      d["pc"] = e.pc;
      d["delegate"] = e.delegate;
      d["start_ns"] = e.start_ns;
      d["end_ns"] = e.end_ns;
      out.append(d);
    }
    return out;
  }

  std::string profile_table(const std::string& name) {
    char* text = nullptr;
    size_t size = 0;
    std::FILE* f = open_memstream(&text, &size);
    if (f == nullptr) throw RuntimeFailure("MemoryAllocationFailed: the profile table");
    profile(name).print_table(f);
    std::fclose(f);
    std::string table(text, size);
    std::free(text);
    return table;
  }

  size_t profile_calls(const std::string& name) { return profile(name).calls(); }
  void clear_profile(const std::string& name) { profile(name).clear(); }

  void write_chrome_trace(const std::string& name, const std::string& path) {
    const Error e = profile(name).write_chrome_trace(path);
    if (e != Error::Ok) raise(e, "the trace");
  }

 private:
  static py::object to_python(const EValue& v) {
    if (v.is_int()) return py::int_(v.to_int());
    if (v.is_double()) return py::float_(v.to_double());
    if (v.is_bool()) return py::bool_(v.to_bool());
    if (v.is_none()) return py::none();
    if (v.is_string()) return py::str(v.to_string().data(), v.to_string().size());
    if (!v.is_tensor()) throw RuntimeFailure("NotSupported: an output that is a list");
    const Tensor& t = v.to_tensor();
    // The tensor's own strides (a dense permutation: its dim order), so the bytes copy as stored.
    std::vector<py::ssize_t> shape(t.sizes().begin(), t.sizes().end());
    std::vector<py::ssize_t> strides;
    for (int64_t s : t.strides()) strides.push_back(static_cast<py::ssize_t>(s * t.element_size()));
    py::array out(numpy_dtype(t.dtype()), shape, strides);
    if (t.nbytes() > 0) std::memcpy(out.mutable_data(), t.data(), t.nbytes());
    return py::make_tuple(out, to_string(t.dtype()));
  }

  // Declared before module_: destroyed after it, so no method keeps a dangling observer.
  std::map<std::string, std::unique_ptr<tools::Profile>> profiles_;
  std::unique_ptr<Module> module_;
};

#if EMBER_HAVE_LLM
// The generation loop (runtime/llm/generator.h) on its own Module, and its tokenizer.
class PyTextGenerator {
 public:
  PyTextGenerator(const std::string& path, const std::string& tokenizer,
                  const std::string& data_path, int num_threads) {
    if (register_backends() != Error::Ok) raise(Error::Internal, "registering the backends");
    tokenizer_ = value_or_raise(llm::Tokenizer::load(tokenizer), "loading " + tokenizer);
    ModuleOptions options;
    options.data_path = data_path;
    options.num_threads = num_threads;
    module_ = std::make_unique<Module>(path, options);
    if (const Error e = module_->load(); e != Error::Ok) raise(e, "loading " + path);
    generator_ = value_or_raise(llm::TextGenerator::load(*module_, *tokenizer_), path);
  }

  // {"text", "tokens" (the new ones), and the statistics}; on_text(str) gets each piece as it
  // completes when given.
  py::dict generate(const std::string& prompt, int max_new_tokens, float temperature, int top_k,
                    float top_p, uint64_t seed, bool chat, bool ignore_eos,
                    const py::object& on_text) {
    llm::GenerationOptions o;
    o.max_new_tokens = max_new_tokens;
    o.sampling = {.temperature = temperature, .top_k = top_k, .top_p = top_p, .seed = seed};
    o.chat = chat;
    o.ignore_eos = ignore_eos;
    std::string text;
    const llm::GenerationStats stats =
        value_or_raise(generator_->generate(prompt, o,
                                            [&](std::string_view piece) {
                                              text.append(piece);
                                              if (!on_text.is_none())
                                                on_text(py::str(piece.data(), piece.size()));
                                            }),
                       "generating");
    const std::vector<int32_t>& all = generator_->tokens();
    py::dict d;
    d["text"] = py::str(text);
    d["tokens"] = std::vector<int32_t>(all.begin() + stats.prompt_tokens, all.end());
    d["prompt_tokens"] = stats.prompt_tokens;
    d["generated_tokens"] = stats.generated_tokens;
    d["prefill_ms"] = stats.prefill_ms;
    d["first_token_ms"] = stats.first_token_ms;
    d["decode_ms"] = stats.decode_ms;
    d["prefill_tokens_per_s"] = stats.prefill_tokens_per_s();
    d["decode_tokens_per_s"] = stats.decode_tokens_per_s();
    d["stop_reason"] = stats.stop_reason;
    return d;
  }

  py::dict metadata() const {
    const llm::LlmMetadata& m = generator_->metadata();
    py::dict d;
    d["max_seq_len"] = m.max_seq_len;
    d["max_context_len"] = m.max_context_len;
    d["vocab_size"] = m.vocab_size;
    d["bos_id"] = m.bos_id ? py::object(py::int_(*m.bos_id)) : py::object(py::none());
    d["eos_ids"] = m.eos_ids;
    d["enable_dynamic_shape"] = m.enable_dynamic_shape;
    d["has_chat_template"] = m.chat.has_value();
    return d;
  }

  std::vector<int32_t> encode(const std::string& text, bool add_special_tokens) const {
    return value_or_raise(tokenizer_->encode(text, add_special_tokens), "encoding");
  }

  py::str decode(const std::vector<int32_t>& ids, bool skip_special_tokens) const {
    const std::string s = value_or_raise(tokenizer_->decode(ids, skip_special_tokens), "decoding");
    return py::str(s.data(), s.size());
  }

 private:
  std::unique_ptr<llm::Tokenizer> tokenizer_;
  std::unique_ptr<Module> module_;
  std::unique_ptr<llm::TextGenerator> generator_;  // reads module_ and tokenizer_
};
#endif

}  // namespace
}  // namespace ember::python

PYBIND11_MODULE(_ember_runtime, m) {
  using ember::python::PyProgram;
  m.doc() = "Ember's runtime (native half of ember.runtime)";
  static py::exception<ember::python::RuntimeFailure> error(m, "EmberRuntimeError",
                                                            PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const ember::python::RuntimeFailure& e) {
      error(e.what());
    }
  });
  m.def("call_kernel", &ember::python::call_kernel, py::arg("name"), py::arg("args"));
  py::class_<PyProgram>(m, "Program")
      .def(py::init<const std::string&, const std::string&, const std::string&, int>(),
           py::arg("path"), py::arg("data") = "", py::arg("load_mode") = "mmap",
           py::arg("num_threads") = 0)
      .def("method_names", &PyProgram::method_names)
      .def("method_meta", &PyProgram::method_meta)
      .def("load_method", &PyProgram::load_method)
      .def("execute", &PyProgram::execute)
      .def("set_profiling", &PyProgram::set_profiling)
      .def("profile_events", &PyProgram::profile_events)
      .def("profile_table", &PyProgram::profile_table)
      .def("profile_calls", &PyProgram::profile_calls)
      .def("clear_profile", &PyProgram::clear_profile)
      .def("write_chrome_trace", &PyProgram::write_chrome_trace);
#if EMBER_HAVE_LLM
  using ember::python::PyTextGenerator;
  py::class_<PyTextGenerator>(m, "TextGenerator")
      .def(py::init<const std::string&, const std::string&, const std::string&, int>(),
           py::arg("path"), py::arg("tokenizer"), py::arg("data") = "", py::arg("num_threads") = 0)
      .def("generate", &PyTextGenerator::generate, py::arg("prompt"), py::arg("max_new_tokens"),
           py::arg("temperature"), py::arg("top_k"), py::arg("top_p"), py::arg("seed"),
           py::arg("chat"), py::arg("ignore_eos"), py::arg("on_text"))
      .def("metadata", &PyTextGenerator::metadata)
      .def("encode", &PyTextGenerator::encode)
      .def("decode", &PyTextGenerator::decode);
#endif
}
