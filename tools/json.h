// JSON text for `ember inspect`'s reports (inspect.cc, inspect_xnnpack.cc).
//
//   out << "{\"name\": " << json_string(name) << ", \"scale\": " << json_number(scale) << "}";
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace ember::tools {

// `s` as a quoted JSON string, with quotes, backslashes and control characters escaped.
inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
      continue;
    }
    out += c;
  }
  return out + "\"";
}

// A float as a JSON number (shortest round-trip form), or, as JSON has no infinities nor NaN, the
// string "inf", "-inf" or "nan".
inline std::string json_number(double v) {
  if (std::isnan(v)) return "\"nan\"";
  if (std::isinf(v)) return v > 0 ? "\"inf\"" : "\"-inf\"";
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.9g", v);
  return buf;
}

}  // namespace ember::tools
