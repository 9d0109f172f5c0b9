// The Python runtime's native half: the `_ember_runtime` extension module that `ember.runtime`
// (runtime.py) wraps. It holds an ember::Module and converts between Python buffers and tensors.
//
//   import _ember_runtime as rt
//   p = rt.Program("m.pte", "m.ptd", "mmap", 0)
//   outs = p.execute("forward", [(numpy_array, "float32")])   # a list of numpy arrays / scalars
//
// Inputs are read in place: a C-contiguous buffer of the declared dtype becomes the tensor's
// storage without a copy (the method copies it into its planned input, as from C++). Outputs are
// copied out, because the method overwrites them on its next call. Every runtime error raises
// EmberRuntimeError carrying the runtime's message; nothing here aborts on a caller's input.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/builtin_runtime.h"
#include "runtime/executor/module.h"
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

// One input's tensor and the sizes it points to, alive for one execute call.
struct InputTensor {
  std::vector<int32_t> sizes;
  Tensor tensor;
};

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
      } else if (py::isinstance<py::tuple>(item) && py::len(item) == 2) {
        py::tuple pair = item.cast<py::tuple>();
        const ScalarType dtype = parse_dtype(pair[1].cast<std::string>());
        buffers[i] = pair[0].cast<py::buffer>().request();
        const py::buffer_info& b = buffers[i];
        if (static_cast<size_t>(b.itemsize) != element_size(dtype)) {
          throw RuntimeFailure("InvalidArgument: " + what + ": items of " +
                               std::to_string(b.itemsize) + " bytes for dtype " + to_string(dtype));
        }
        // C-contiguous only (runtime.py makes a copy otherwise).
        int64_t expected = b.itemsize;
        for (py::ssize_t d = b.ndim - 1; d >= 0; --d) {
          if (b.shape[d] > 1 && b.strides[d] != expected) {
            throw RuntimeFailure("InvalidArgument: " + what + " is not C-contiguous");
          }
          expected *= b.shape[d];
        }
        for (py::ssize_t s : b.shape) {
          if (s > INT32_MAX) throw RuntimeFailure("InvalidArgument: " + what + " is too large");
          tensors[i].sizes.push_back(static_cast<int32_t>(s));
        }
        tensors[i].tensor = value_or_raise(Tensor::make(dtype, tensors[i].sizes, {}, b.ptr), what);
        values[i] = EValue::from_tensor(&tensors[i].tensor);
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
  static Error register_backends() { return backends::register_builtin_runtime_backends(); }

  static py::object to_python(const EValue& v) {
    if (v.is_int()) return py::int_(v.to_int());
    if (v.is_double()) return py::float_(v.to_double());
    if (v.is_bool()) return py::bool_(v.to_bool());
    if (v.is_none()) return py::none();
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
}
