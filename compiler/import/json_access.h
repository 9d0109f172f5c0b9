// Typed access to a JSON document for the importers (exported_program.cc, pt2.cc): each accessor
// checks the type it reads and fails with the field's path, so no malformed document reaches
// nlohmann's own exceptions.
//
//   const json& nodes = as_array(field(graph, "nodes", "graph"), "graph.nodes");
//   int64_t n = as_int(field(nodes[0], "size", at("graph.nodes", 0)), ...);
//
// Failures throw ImportError, which the importers' public functions catch and turn into a
// Status; nothing here lets an exception out of the compiler's API.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <string>

namespace ember::importer {

using json = nlohmann::json;

// A malformed document, with the path of what is wrong ("graph.nodes[3].op: expected a string").
struct ImportError {
  std::string message;
};

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw ImportError{where + ": " + what};
}

inline const json& field(const json& object, const char* key, const std::string& where) {
  if (!object.is_object()) fail(where, "expected an object");
  auto it = object.find(key);
  if (it == object.end()) fail(where, std::string("missing field '") + key + "'");
  return *it;
}

// The field, or null when it is absent or JSON null (or `object` is not an object).
inline const json* optional_field(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

inline std::string as_string(const json& j, const std::string& where) {
  if (!j.is_string()) fail(where, "expected a string");
  return j.get<std::string>();
}

inline int64_t as_int(const json& j, const std::string& where) {
  if (j.is_number_integer() && !j.is_number_unsigned()) return j.get<int64_t>();
  if (j.is_number_unsigned() &&
      j.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return static_cast<int64_t>(j.get<uint64_t>());
  }
  fail(where, "expected an integer in the int64 range");
}

inline uint64_t as_size(const json& j, const std::string& where) {
  const int64_t v = as_int(j, where);
  if (v < 0) fail(where, "expected a size >= 0");
  return static_cast<uint64_t>(v);
}

inline const json& as_array(const json& j, const std::string& where) {
  if (!j.is_array()) fail(where, "expected an array");
  return j;
}

// "where[index]", the path of an array element.
inline std::string at(const std::string& where, size_t index) {
  return where + "[" + std::to_string(index) + "]";
}

}  // namespace ember::importer
