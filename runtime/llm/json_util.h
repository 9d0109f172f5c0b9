// Typed access to tokenizer.json for the loader (internal to runtime/llm): each accessor checks the
// type it reads and throws LoadError with the field's path ("model.merges[3]: expected a string"),
// which Tokenizer::load catches and turns into an Error and a message. Nothing here is used after
// load, and no exception leaves the library.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace ember::llm {

using json = nlohmann::json;

struct LoadError {
  std::string message;
  bool unsupported = false;  // a component Ember does not implement (Error::NotSupported)
};

[[noreturn]] inline void load_fail(const std::string& where, const std::string& what) {
  throw LoadError{where + ": " + what};
}

[[noreturn]] inline void load_unsupported(const std::string& where, const std::string& what) {
  throw LoadError{where + ": " + what, true};
}

// The field, or null when it is absent or JSON null.
inline const json* optional_field(const json& object, const char* key) {
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

inline const json& field(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) load_fail(where, "expected an object");
  const json* value = optional_field(object, key);
  if (value == nullptr) load_fail(where, std::string("missing field '") + key + "'");
  return *value;
}

inline std::string as_string(const json& j, const std::string& where) {
  if (!j.is_string()) load_fail(where, "expected a string");
  return j.get<std::string>();
}

inline bool as_bool(const json& j, const std::string& where) {
  if (!j.is_boolean()) load_fail(where, "expected true or false");
  return j.get<bool>();
}

// A token id: an integer in [0, INT32_MAX].
inline int32_t as_id(const json& j, const std::string& where) {
  if (!j.is_number_integer() || (!j.is_number_unsigned() && j.get<int64_t>() < 0) ||
      j.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
    load_fail(where, "expected a token id (an integer in [0, 2^31))");
  }
  return static_cast<int32_t>(j.get<int64_t>());
}

inline size_t as_count(const json& j, const std::string& where) {
  if (!j.is_number_integer() || (!j.is_number_unsigned() && j.get<int64_t>() < 0)) {
    load_fail(where, "expected an integer >= 0");
  }
  return static_cast<size_t>(j.get<uint64_t>());
}

inline const json& as_array(const json& j, const std::string& where) {
  if (!j.is_array()) load_fail(where, "expected an array");
  return j;
}

inline std::string at(const std::string& where, size_t index) {
  return where + "[" + std::to_string(index) + "]";
}

inline std::string dot(const std::string& where, const char* key) { return where + "." + key; }

// The optional boolean field, or `fallback`.
inline bool bool_or(const json& object, const char* key, bool fallback, const std::string& where) {
  const json* value = optional_field(object, key);
  return value == nullptr ? fallback : as_bool(*value, dot(where, key));
}

}  // namespace ember::llm
