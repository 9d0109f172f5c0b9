// Which oneDNN to build on: the fp32 primitives the cpu backend leans on, timed alone
// with the oneDNN a build links. The same source compiles against oneDNN 2.x (Debian's 2.6) and
// 3.x (PyPI's onednn-devel-cpu-gomp, 3.2 with GNU OpenMP); the build makes the first
// (build/release/bench/ember_onednn_versions_bench):
//
//   g++ -O2 -std=c++17 bench/onednn_versions_bench.cc -ldnnl -fopenmp -o /tmp/dnnl26
//   g++ -O2 -std=c++17 -I$D/include bench/onednn_versions_bench.cc -L$D/lib -ldnnl -fopenmp
//       -Wl,-rpath,$D/lib -o /tmp/dnnl3x        # one line; D: the unpacked wheels' data/ folders
//   OMP_NUM_THREADS=1 /tmp/dnnl26; OMP_NUM_THREADS=1 /tmp/dnnl3x
//
// Each case is a layer of the bench models (bench/models.py) as the cpu backend creates it:
// weights in the primitive's preferred layout (reordered once), activations plain (matmuls) or
// in the layout the primitive asks (convolutions). It prints the median of 50 timed runs after
// 10 warm-up runs, and the rate. Run the two builds one after the other on a quiet machine.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "oneapi/dnnl/dnnl.hpp"

namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

double median_ms(dnnl::stream& s, dnnl::primitive& p, std::unordered_map<int, memory>& args) {
  for (int i = 0; i < 10; ++i) p.execute(s, args);
  s.wait();
  std::vector<double> t;
  for (int i = 0; i < 50; ++i) {
    const auto a = std::chrono::steady_clock::now();
    p.execute(s, args);
    s.wait();
    t.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

memory filled(const memory::desc& md, dnnl::engine& e) {
  memory m(md, e);
  auto* p = static_cast<float*>(m.get_data_handle());
  for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) p[i] = float(i % 13) * 0.01f;
  return m;
}

void report(const std::string& what, const char* impl, double ms, double flops) {
  std::printf("%-44s %-28s %8.3f ms %7.1f GFLOP/s\n", what.c_str(), impl, ms, flops / ms * 1e-6);
}

// [m, k] x [k, n] + bias, as the backend's linear layers.
void matmul(dnnl::engine& e, dnnl::stream& s, int64_t m, int64_t k, int64_t n) {
  const memory::desc a_md({m, k}, dt::f32, tag::ab), b_any({k, n}, dt::f32, tag::any);
  const memory::desc bias_md({1, n}, dt::f32, tag::ab), c_md({m, n}, dt::f32, tag::ab);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(e, a_md, b_any, bias_md, c_md);
#else
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, bias_md, c_md), e);
#endif
  memory b_plain = filled(memory::desc({k, n}, dt::f32, tag::ab), e);
  memory b(pd.weights_desc(), e);
  dnnl::reorder(b_plain, b).execute(s, b_plain, b);
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, filled(a_md, e)},
                                          {DNNL_ARG_WEIGHTS, b},
                                          {DNNL_ARG_BIAS, filled(bias_md, e)},
                                          {DNNL_ARG_DST, memory(c_md, e)}};
  dnnl::primitive p = dnnl::matmul(pd);
  report("matmul " + std::to_string(m) + "x" + std::to_string(k) + "x" + std::to_string(n),
         pd.impl_info_str(), median_ms(s, p, args), 2.0 * double(m) * double(k) * double(n));
}

// A 2-D convolution of an [1, ic, h, w] image, padding (k - 1) / 2, groups g.
void conv(dnnl::engine& e, dnnl::stream& s, int64_t ic, int64_t oc, int64_t h, int64_t k,
          int64_t stride, int64_t g) {
  const int64_t pad = (k - 1) / 2, oh = (h + 2 * pad - k) / stride + 1;
  const memory::desc src_any({1, ic, h, h}, dt::f32, tag::any);
  const memory::dims wd =
      g == 1 ? memory::dims{oc, ic, k, k} : memory::dims{g, oc / g, ic / g, k, k};
  const memory::desc w_any(wd, dt::f32, tag::any), b_md({oc}, dt::f32, tag::a);
  const memory::desc dst_any({1, oc, oh, oh}, dt::f32, tag::any);
#if DNNL_VERSION_MAJOR >= 3
  dnnl::convolution_forward::primitive_desc pd(
      e, dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_any, w_any,
      b_md, dst_any, {stride, stride}, {pad, pad}, {pad, pad});
#else
  dnnl::convolution_forward::primitive_desc pd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_inference,
                                      dnnl::algorithm::convolution_direct, src_any, w_any, b_md,
                                      dst_any, {stride, stride}, {pad, pad}, {pad, pad}),
      e);
#endif
  std::unordered_map<int, memory> args = {{DNNL_ARG_SRC, filled(pd.src_desc(), e)},
                                          {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), e)},
                                          {DNNL_ARG_BIAS, filled(b_md, e)},
                                          {DNNL_ARG_DST, memory(pd.dst_desc(), e)}};
  dnnl::primitive p = dnnl::convolution_forward(pd);
  const double flops = 2.0 * double(oc * oh * oh * (ic / g) * k * k);
  report("conv ic" + std::to_string(ic) + " oc" + std::to_string(oc) + " " + std::to_string(h) +
             "x" + std::to_string(h) + " k" + std::to_string(k) + " s" + std::to_string(stride) +
             (g > 1 ? " g" + std::to_string(g) : ""),
         pd.impl_info_str(), median_ms(s, p, args), flops);
}

}  // namespace

int main() {
  dnnl::engine e(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(e);
  const dnnl::version_t* v = dnnl_version();
  std::printf("oneDNN %d.%d.%d (%s)\n", v->major, v->minor, v->patch, v->hash);
  // BERT's encoder layer (128 tokens, 768 wide, FFN 3072) and the Llama-style decoder's prefill
  // (128 tokens, 512 wide, FFN 1536).
  matmul(e, s, 128, 768, 768);
  matmul(e, s, 128, 768, 3072);
  matmul(e, s, 128, 3072, 768);
  matmul(e, s, 128, 512, 1536);
  matmul(e, s, 128, 1536, 512);
  // ResNet-18's 3x3 convolutions and MobileNetV2's pointwise and depthwise ones.
  conv(e, s, 64, 64, 56, 3, 1, 1);
  conv(e, s, 128, 128, 28, 3, 1, 1);
  conv(e, s, 256, 256, 14, 3, 1, 1);
  conv(e, s, 512, 512, 7, 3, 1, 1);
  conv(e, s, 3, 64, 224, 7, 2, 1);
  conv(e, s, 16, 96, 112, 1, 1, 1);
  conv(e, s, 144, 24, 56, 1, 1, 1);
  conv(e, s, 96, 96, 112, 3, 2, 96);
  conv(e, s, 144, 144, 56, 3, 1, 144);
  conv(e, s, 576, 576, 14, 3, 1, 576);
  return 0;
}
