// Writes the demo program the build bundles until the compiler's main job replaces it:
// y = (x * w + b) * x for x of shape [1, 3, 224, 224], with per-channel w and b kept as external
// weights in a .ptd. Also writes w.npy and b.npy so that the demo can compute the same function
// with eager PyTorch.
//
//   ember_make_demo OUT_DIR   ->  OUT_DIR/demo.pte, demo.ptd, w.npy, b.npy
#include <cstdio>
#include <cstring>
#include <string>

#include "compiler/emit/pte_writer.h"
#include "tools/npy.h"

using namespace ember;
using namespace ember::emit;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ember_make_demo OUT_DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  float w[3] = {0.5f, -1.25f, 2.0f}, b[3] = {0.125f, 0.25f, -0.375f};
  auto bytes = [](const float* v) {
    std::vector<uint8_t> out(12);
    std::memcpy(out.data(), v, 12);
    return out;
  };
  const std::vector<int32_t> image{1, 3, 224, 224}, channel{1, 3, 1, 1};
  const uint64_t slot = 1ull * 3 * 224 * 224 * 4;
  MethodSpec m;
  TensorSpec wt = TensorSpec::constant(ScalarType::Float, channel, bytes(w));
  wt.storage = TensorSpec::Storage::External;
  wt.fqn = "scale.weight";
  TensorSpec bt = TensorSpec::constant(ScalarType::Float, channel, bytes(b));
  bt.storage = TensorSpec::Storage::External;
  bt.fqn = "scale.bias";
  const int32_t wi = m.add(wt), bi = m.add(bt);
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, image, 0));
  const int32_t t = m.add(TensorSpec::planned(ScalarType::Float, image, slot));
  const int32_t u = m.add(TensorSpec::planned(ScalarType::Float, image, 2 * slot));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, image, slot));
  const int32_t alpha = m.add(int64_t{1});
  m.inputs = {x};
  m.outputs = {y};
  m.call("aten::mul", "out", {x, wi, t, t});
  m.call("aten::add", "out", {t, bi, alpha, u, u});
  m.call("aten::mul", "out", {u, x, y, y});
  m.arena_sizes = {static_cast<int64_t>(3 * slot)};
  Result<WrittenProgram> written = write_program(ProgramSpec{{m}});
  if (!written.ok()) {
    std::fprintf(stderr, "error: %s\n", last_error_message());
    return 1;
  }
  float wb[2][3];
  std::memcpy(wb[0], w, 12);
  std::memcpy(wb[1], b, 12);
  Tensor wv = *Tensor::make(ScalarType::Float, channel, {}, wb[0]);
  Tensor bv = *Tensor::make(ScalarType::Float, channel, {}, wb[1]);
  if (write_file(dir + "/demo.pte", written->pte) != Error::Ok ||
      write_file(dir + "/demo.ptd", written->ptd) != Error::Ok ||
      tools::write_npy(dir + "/w.npy", wv) != Error::Ok ||
      tools::write_npy(dir + "/b.npy", bv) != Error::Ok) {
    std::fprintf(stderr, "error: %s\n", last_error_message());
    return 1;
  }
  return 0;
}
