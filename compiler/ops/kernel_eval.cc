#include "compiler/ops/kernel_eval.h"

#include <cstring>
#include <deque>
#include <memory>

#include "compiler/ops/op_table.h"
#include "runtime/core/evalue.h"
#include "runtime/core/tensor.h"
#include "runtime/executor/kernel_registry.h"
#include "runtime/platform/thread_pool.h"

namespace ember::ops {

ScalarType to_scalar_type(ir::DType dtype) {
  switch (dtype) {
    case ir::DType::Float32:
      return ScalarType::Float;
    case ir::DType::Float16:
      return ScalarType::Half;
    case ir::DType::BFloat16:
      return ScalarType::BFloat16;
    case ir::DType::Float64:
      return ScalarType::Double;
    case ir::DType::Int8:
      return ScalarType::Char;
    case ir::DType::Int16:
      return ScalarType::Short;
    case ir::DType::Int32:
      return ScalarType::Int;
    case ir::DType::Int64:
      return ScalarType::Long;
    case ir::DType::UInt8:
      return ScalarType::Byte;
    case ir::DType::Bool:
      return ScalarType::Bool;
    case ir::DType::Complex64:
      return ScalarType::ComplexFloat;
    case ir::DType::Complex128:
      return ScalarType::ComplexDouble;
  }
  return ScalarType::Float;
}

int64_t memory_format_code(const std::string& name) {
  if (name == "preserve_format") return 1;
  if (name == "channels_last") return 2;
  if (name == "channels_last_3d") return 3;
  return 0;
}

namespace {

// Owns everything the EValues point at for one call.
struct Frame {
  std::deque<EValue> values;
  std::deque<Tensor> tensors;
  std::deque<Bytes> buffers;
  std::deque<std::string> strings;
  std::deque<std::vector<EValue*>> item_lists;
  std::deque<std::vector<int64_t>> int_scratch;
  std::deque<std::vector<Tensor*>> tensor_scratch;
  std::deque<std::unique_ptr<bool[]>> bool_lists;
  std::deque<std::vector<double>> double_lists;

  EValue* add(EValue v) {
    values.push_back(v);
    return &values.back();
  }
  ir::StatusOr<EValue*> tensor(const ir::TensorType& type, Bytes bytes) {
    std::vector<int32_t> sizes;
    for (const ir::Dim& d : type.shape) sizes.push_back(static_cast<int32_t>(d.value));
    buffers.push_back(std::move(bytes));
    Result<Tensor> t = Tensor::make(to_scalar_type(type.dtype), sizes, {}, buffers.back().data());
    if (!t.ok()) return ir::Status::error("cannot make a tensor of type " + ir::to_string(type));
    tensors.push_back(*t);
    return add(EValue::from_tensor(&tensors.back()));
  }
};

// `optional_list`: a list of tensors is a Tensor?[] (signature letter 'o', index.Tensor's
// indices) even when no item is None.
ir::StatusOr<EValue*> convert(Frame& f, const ir::Arg& a,
                              const std::function<const Bytes*(ir::Value*)>& data,
                              bool optional_list = false) {
  switch (a.kind()) {
    case ir::ArgKind::None:
      return f.add(EValue());
    case ir::ArgKind::Bool:
      return f.add(EValue::from_bool(a.as_bool()));
    case ir::ArgKind::Int:
      return f.add(EValue::from_int(a.as_int()));
    case ir::ArgKind::Float:
      return f.add(EValue::from_double(a.as_float()));
    case ir::ArgKind::String:
      f.strings.push_back(a.as_text());
      return f.add(EValue::from_string(f.strings.back()));
    case ir::ArgKind::DType:
      return f.add(EValue::from_int(static_cast<int64_t>(to_scalar_type(a.as_dtype()))));
    case ir::ArgKind::Layout:
    case ir::ArgKind::Device:
      return f.add(EValue::from_int(0));
    case ir::ArgKind::MemoryFormat:
      return f.add(EValue::from_int(memory_format_code(a.as_text())));
    case ir::ArgKind::Value: {
      ir::Value* v = a.as_value();
      const Bytes* bytes = v->is_tensor() ? data(v) : nullptr;
      if (bytes == nullptr) return ir::Status::error("value %" + v->name() + " is not constant");
      return f.tensor(v->tensor_type(), *bytes);
    }
    case ir::ArgKind::List: {
      const auto& items = a.as_list();
      bool ints = true, floats = true, bools = true;
      for (const ir::Arg& i : items) {
        ints = ints && i.kind() == ir::ArgKind::Int;
        floats = floats && i.kind() == ir::ArgKind::Float;
        bools = bools && i.kind() == ir::ArgKind::Bool;
      }
      if (ints || items.empty()) {
        std::vector<EValue*> ptrs;
        for (const ir::Arg& i : items) ptrs.push_back(f.add(EValue::from_int(i.as_int())));
        f.item_lists.push_back(std::move(ptrs));
        f.int_scratch.emplace_back(items.size());
        return f.add(EValue::from_int_list(
            {f.item_lists.back().data(), f.int_scratch.back().data(), items.size()}));
      }
      if (floats) {
        f.double_lists.emplace_back();
        for (const ir::Arg& i : items) f.double_lists.back().push_back(i.as_float());
        return f.add(EValue::from_double_list(f.double_lists.back()));
      }
      if (bools) {
        f.bool_lists.push_back(std::make_unique<bool[]>(items.size()));
        for (size_t i = 0; i < items.size(); ++i) f.bool_lists.back()[i] = items[i].as_bool();
        return f.add(EValue::from_bool_list({f.bool_lists.back().get(), items.size()}));
      }
      bool optional = optional_list;
      std::vector<EValue*> ptrs;
      for (const ir::Arg& i : items) {
        if (i.is_none()) {
          optional = true;
          ptrs.push_back(nullptr);
          continue;
        }
        if (i.kind() != ir::ArgKind::Value) return ir::Status::error("a mixed list");
        ir::StatusOr<EValue*> t = convert(f, i, data);
        if (!t.ok()) return t;
        ptrs.push_back(*t);
      }
      f.item_lists.push_back(std::move(ptrs));
      f.tensor_scratch.emplace_back(items.size());
      BoxedTensorList list{f.item_lists.back().data(), f.tensor_scratch.back().data(),
                           items.size()};
      return f.add(optional ? EValue::from_optional_tensor_list(list)
                            : EValue::from_tensor_list(list));
    }
    case ir::ArgKind::Graph:
      return ir::Status::error("a subgraph argument");
  }
  return ir::Status::error("an unknown argument kind");
}

}  // namespace

ir::StatusOr<std::vector<Bytes>> eval_kernel(const std::string& name,
                                             const std::vector<ir::NamedArg>& args,
                                             const std::vector<ir::TensorType>& out_types,
                                             const std::function<const Bytes*(ir::Value*)>& data) {
  // The kernels of this process's registry (whoever embeds the compiler registers a library:
  // the ember tool registers the portable kernels); the compiler links none of its own.
  const Kernel* kernel = find_kernel(name);
  if (kernel == nullptr) {
    return ir::Status::error("kernel " + name +
                             " is not registered in this process (register_portable_kernels())");
  }
  Frame f;
  std::vector<EValue*> stack;
  const size_t letters = kernel->signature != nullptr ? std::strlen(kernel->signature) : 0;
  for (const ir::NamedArg& a : args) {
    const size_t i = stack.size();
    ir::StatusOr<EValue*> e = convert(f, a.value, data, i < letters && kernel->signature[i] == 'o');
    if (!e.ok()) return e.status();
    stack.push_back(*e);
  }
  std::vector<EValue*> outs;
  const bool list_out = is_list_out_kernel(name);
  for (const ir::TensorType& t : out_types) {
    std::optional<int64_t> numel = t.numel_upper_bound();
    if (!t.is_static() || !numel) return ir::Status::error("a dynamic output");
    ir::StatusOr<EValue*> e =
        f.tensor(t, Bytes(static_cast<size_t>(*numel) * ir::dtype_size(t.dtype)));
    if (!e.ok()) return e.status();
    outs.push_back(*e);
    if (!list_out) stack.push_back(*e);
  }
  if (list_out) {
    f.item_lists.push_back(outs);
    f.tensor_scratch.emplace_back(outs.size());
    EValue* list = f.add(EValue::from_tensor_list(
        {f.item_lists.back().data(), f.tensor_scratch.back().data(), outs.size()}));
    stack.push_back(list);
    stack.push_back(list);
  } else if (outs.size() == 1) {
    stack.push_back(outs[0]);
  } else {
    f.item_lists.push_back(outs);
    f.tensor_scratch.emplace_back(outs.size());
    stack.push_back(f.add(EValue::from_tensor_list(
        {f.item_lists.back().data(), f.tensor_scratch.back().data(), outs.size()})));
  }
  if (kernel->signature != nullptr) {
    const std::string sig(kernel->signature);
    if (sig.size() != stack.size()) return ir::Status::error("argument count mismatch for " + name);
    for (size_t i = 0; i < sig.size(); ++i) {
      if (!signature_admits(sig[i], *stack[i])) {
        return ir::Status::error("argument " + std::to_string(i) + " of " + name +
                                 " does not match its signature");
      }
    }
  }
  KernelContext ctx;
  ctx.threads = &ThreadPool::global();
  if (kernel->fn(ctx, stack) != Error::Ok)
    return ir::Status::error(name + " failed at compile time");
  std::vector<Bytes> result;
  for (size_t i = 0; i < outs.size(); ++i) {
    const Tensor& t = outs[i]->to_tensor();
    const uint8_t* p = static_cast<const uint8_t*>(t.data());
    result.emplace_back(p, p + t.nbytes());
  }
  return result;
}

}  // namespace ember::ops
