// The runtime's rules, as the cpu backend keeps them: what a delegate may and may not change of
// its caller's process.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <omp.h>

#include <string>

#include "backends/cpu/cpu_test_util.h"

namespace ember::cpu {
namespace {

// A delegate runs oneDNN on its own thread count ("num_threads"), and leaves the calling
// thread's OpenMP thread count as it found it: no process state of the caller's changes.
TEST(CpuRuntimeRules, CallersOpenMpThreadsLeftAsFound) {
  at::Tensor x = at::randn({4, 8}), w = at::randn({8, 8});
  const at::Tensor want = at::relu(at::mm(x, w));
  Prog p;
  auto xi = p.input("x", x);
  auto mm = p.node("mm", want, "aten::mm.default(self=" + xi + ", mat2=" + p.weight("w", w) + ")");
  p.outputs = {p.node("y", want, "aten::relu.default(self=" + mm + ")")};
  auto program = parse_text(p.text());
  ASSERT_TRUE(program);
  const Compiled c = compile(*program);
  static const std::string two = "2";
  const CompileSpec threads{"num_threads", {reinterpret_cast<const uint8_t*>(two.data()), 1}};
  const int before = omp_get_max_threads();
  omp_set_num_threads(3);
  auto out = run(c, {x}, {want}, {threads});
  EXPECT_EQ(omp_get_max_threads(), 3);
  omp_set_num_threads(before);
  ASSERT_EQ(out.size(), 1u);
  expect_close(out[0], want, 1e-5, 1e-5);
}

}  // namespace
}  // namespace ember::cpu
