// What payload_test.cc and payload_graph_test.cc share: read_payload with the error message
// cleared, and the check of a refusal (InvalidProgram, its message naming why).
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "backends/xnnpack/payload.h"
#include "backends/xnnpack/payload_test_util.h"
#include "runtime/core/error.h"

namespace ember::xnn::testing {

inline Result<Payload> read(const std::vector<uint8_t>& blob) {
  clear_error_message();
  return read_payload(blob);
}

// Refused as InvalidProgram, the message containing `why`.
inline void expect_refused(const std::vector<uint8_t>& blob, const std::string& why) {
  Result<Payload> p = read(blob);
  ASSERT_FALSE(p.ok()) << "accepted; expected a refusal with '" << why << "'";
  EXPECT_EQ(p.error(), Error::InvalidProgram);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("XNNPACK payload: "), std::string::npos) << message;
  EXPECT_NE(message.find(why), std::string::npos) << message;
}

inline void expect_refused(const GraphSpec& g, const std::string& why) {
  expect_refused(build(g), why);
}

}  // namespace ember::xnn::testing
