#include "runtime/executor/named_data_map.h"

namespace ember {
namespace {
template <typename F>
auto first_found(const NamedDataMap* a, const NamedDataMap* b, std::string_view key, F&& f)
    -> decltype(f(a)) {
  if (a != nullptr) {
    auto r = f(a);
    if (r.ok() || r.error() != Error::NotFound || b == nullptr) return r;
  }
  if (b != nullptr) return f(b);
  return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
              key.data());
}
}  // namespace

Result<TensorLayout> MergedNamedDataMap::get_tensor_layout(std::string_view key) const {
  return first_found(first_, second_, key,
                     [&](const NamedDataMap* m) { return m->get_tensor_layout(key); });
}

Result<FreeableBuffer> MergedNamedDataMap::get_data(std::string_view key) const {
  return first_found(first_, second_, key, [&](const NamedDataMap* m) { return m->get_data(key); });
}

Error MergedNamedDataMap::load_data_into(std::string_view key, void* buffer, size_t size) const {
  if (first_ != nullptr) {
    const Error e = first_->load_data_into(key, buffer, size);
    if (e != Error::NotFound || second_ == nullptr) return e;
  }
  if (second_ != nullptr) return second_->load_data_into(key, buffer, size);
  return fail(Error::NotFound, "'%.*s' is missing from named data", static_cast<int>(key.size()),
              key.data());
}

size_t MergedNamedDataMap::num_keys() const {
  return (first_ ? first_->num_keys() : 0) + (second_ ? second_->num_keys() : 0);
}

Result<std::string_view> MergedNamedDataMap::key(size_t index) const {
  const size_t n_first = first_ ? first_->num_keys() : 0;
  if (index < n_first) return first_->key(index);
  EMBER_CHECK(second_ != nullptr, Error::InvalidArgument, "key index %zu of %zu", index,
              num_keys());
  return second_->key(index - n_first);
}

}  // namespace ember
