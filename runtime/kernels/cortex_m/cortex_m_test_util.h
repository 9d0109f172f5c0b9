// The cortex_m kernels' test harness: tests/support/kernel_call.h with the portable and cortex_m
// kernels registered, and the helpers their tests share.
//
//   Call c;
//   std::vector<int8_t> x = {1, 2}, y(2);
//   EXPECT_EQ(c.run("cortex_m::quantized_activation.out",
//                   {c.tensor(ScalarType::Char, {2}, x), c.tensor(...lut...), c.out(...)}),
//                   Error::Ok);
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "runtime/executor/kernel_registry.h"
#include "runtime/kernels/cortex_m/cortex_m.h"
#include "runtime/kernels/portable/portable.h"
#include "runtime/platform/thread_pool.h"
#include "tests/support/kernel_call.h"

namespace ember::cortex_m_test {

inline constexpr uint8_t kNhwc[] = {0, 2, 3, 1};

class Call : public testing::KernelCall {
 public:
  Call() {
    EXPECT_EQ(register_portable_kernels(), Error::Ok);
    EXPECT_EQ(register_cortex_m_kernels(), Error::Ok);
  }
  // An empty uint8 scratch tensor, as exports for DSP targets write it.
  EValue* scratch() { return tensor(ScalarType::Byte, {0}, empty_); }

 private:
  std::vector<uint8_t> empty_;
};

// Expects `e` to be InvalidArgument with `fragment` in the message.
inline void expect_invalid(Error e, const char* fragment) {
  EXPECT_EQ(e, Error::InvalidArgument);
  EXPECT_NE(std::strstr(last_error_message(), fragment), nullptr)
      << "message: " << last_error_message() << "\nexpected to contain: " << fragment;
}

}  // namespace ember::cortex_m_test
