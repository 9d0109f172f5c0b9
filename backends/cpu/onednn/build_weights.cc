// The build's hold on weights: where a weight's bytes are read from (in place from the named
// data, or a buffer of the build on huge pages), and when that storage is handed back (once no
// step reads it as stored).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "backends/cpu/onednn/build.h"
#include "runtime/executor/memory.h"

namespace ember::cpu::delegate {

namespace {
// A weight is read in place only at a cache line's alignment: what the heap's buffers have, and
// what kernels that load whole vectors of a weight may assume.
constexpr uintptr_t kWeightInPlaceAlignment = 64;
}  // namespace

Error Build::load_weight(int32_t id) try {
  const TensorDesc& t = graph_.tensors[id];
  const WeightRef& w = graph_.weights[t.index];
  if (named_ == nullptr)
    return refused("no named data for weight '" + w.key + "'", Error::NotFound);
  std::vector<int64_t> stored = t.dims;  // an int4 weight: two elements a byte
  if (t.storage == WeightStorage::Int4 && !stored.empty()) stored.back() /= 2;
  md_[id] = plain_md(to_dims(stored),
                     t.storage == WeightStorage::Bool ? dt::u8 : (t.integer() ? dt::s8 : dt::f32),
                     t.dim_order);
  if (md_[id].get_size() != w.nbytes) return refused("weight '" + w.key + "' has the wrong size");
  // In place where the storage allows: no copy, no page of the heap touched. Steps only read
  // weights (a mapped file is read-only: a write would fault, never change the program).
  if (Result<FreeableBuffer> data = named_->get_data(w.key);
      data.ok() && data->size() >= w.nbytes &&
      reinterpret_cast<uintptr_t>(data->data()) % kWeightInPlaceAlignment == 0) {
    mem_[id] = memory(md_[id], engine_, const_cast<void*>(data->data()));
    mapped_.emplace(id, std::move(*data));
    return Error::Ok;
  }
  EMBER_ASSIGN_OR_RETURN(mem_[id], weight_buffer(id, md_[id]));
  const Error e = named_->load_data_into(w.key, mem_[id].get_data_handle(), w.nbytes);
  if (e != Error::Ok) {
    return refused("weight '" + w.key + "': " + last_error_message(), Error::NotFound);
  }
  return Error::Ok;
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

Result<memory> Build::weight_buffer(int32_t id, const memory::desc& md) try {
  const size_t bytes = md.get_size();
  if (bytes < HeapAllocator::kHugePage / 2) return memory(md, engine_);
  FreeableBuffer b = huge_page_buffer(bytes);
  if (b.data() == nullptr) return memory(md, engine_);  // the heap may still have room
  memory m(md, engine_, const_cast<void*>(b.data()));
  mapped_.emplace(id, std::move(b));
  return m;
} catch (const dnnl::error& e) {
  return onednn_error(e);
}

void Build::release_weights(size_t begin, size_t end) {
  for (size_t i = begin; i < end; ++i) {
    for (int32_t t : graph_.ops[i].inputs) {
      if (t >= 0 && graph_.tensors[t].kind == TensorKind::Weight &&
          last_use_[t] < static_cast<int>(end)) {
        mem_[t] = memory();
        auto [first, last] = mapped_.equal_range(t);
        for (auto m = first; m != last; ++m) {
          if (step_reads(m->second.bytes(), m->second.size())) {
            mapped_kept_.push_back(std::move(m->second));
          }
        }
        mapped_.erase(first, last);
      }
    }
  }
}

bool Build::step_reads(const uint8_t* data, size_t size) {
  if (steps_scanned_ < steps_.size()) {
    const auto sorted = static_cast<std::ptrdiff_t>(step_handles_.size());
    for (; steps_scanned_ < steps_.size(); ++steps_scanned_) {
      steps_[steps_scanned_]->handles(&step_handles_);
    }
    std::sort(step_handles_.begin() + sorted, step_handles_.end());
    std::inplace_merge(step_handles_.begin(), step_handles_.begin() + sorted, step_handles_.end());
  }
  // Any handle inside the storage: a view at an offset reads it too.
  auto at =
      std::lower_bound(step_handles_.begin(), step_handles_.end(), static_cast<const void*>(data));
  return at != step_handles_.end() && static_cast<const uint8_t*>(*at) < data + size;
}

}  // namespace ember::cpu::delegate
