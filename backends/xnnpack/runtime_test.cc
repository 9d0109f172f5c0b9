// XnnpackBackend's boundary (xnnpack_runtime.h): what ExecuTorch's XNNPACK delegate reads and
// writes, through init and execute of small payloads (payload_test_util.h). Expected values are
// computed here from the definitions (double arithmetic, IEEE rounding worked by hand), not by
// Ember's code.
#include "backends/xnnpack/xnnpack_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "backends/xnnpack/payload_test_util.h"
#include "runtime/core/error.h"
#include "runtime/core/tensor.h"

namespace ember::xnn {
namespace {

using namespace ember::xnn::testing;

// A delegate built from a payload; runs calls on caller tensors.
class Delegate {
 public:
  explicit Delegate(const GraphSpec& g) : blob_(build(g)) {
    FreeableBuffer buf(blob_.data(), blob_.size(), nullptr, nullptr);
    BackendInitContext ctx{nullptr, "forward", nullptr};
    Result<DelegateHandle*> h = runtime_backend()->init(ctx, &buf, {});
    if (!h.ok()) {
      ADD_FAILURE() << "init: " << last_error_message();
      return;
    }
    handle_ = *h;
  }
  ~Delegate() {
    if (handle_ != nullptr) runtime_backend()->destroy(handle_);
  }
  Delegate(const Delegate&) = delete;
  Delegate& operator=(const Delegate&) = delete;

  bool ok() const { return handle_ != nullptr; }

  Error run(std::vector<Tensor*> tensors) {
    std::vector<EValue> values;
    for (Tensor* t : tensors) values.push_back(EValue::from_tensor(t));
    std::vector<EValue*> args;
    for (EValue& v : values) args.push_back(&v);
    BackendExecuteContext ctx{nullptr};
    clear_error_message();
    return runtime_backend()->execute(ctx, handle_, args);
  }

 private:
  std::vector<uint8_t> blob_;
  DelegateHandle* handle_ = nullptr;
};

Tensor make(ScalarType dtype, std::vector<int32_t> sizes, std::vector<uint8_t> dim_order,
            void* data) {
  Result<Tensor> t = Tensor::make(dtype, sizes, dim_order, data);
  EXPECT_TRUE(t.ok()) << last_error_message();
  return t.ok() ? *t : Tensor();
}

template <typename T>
void append(std::vector<uint8_t>& bytes, const std::vector<T>& v) {
  const size_t at = bytes.size();
  bytes.resize(at + v.size() * sizeof(T));
  std::memcpy(bytes.data() + at, v.data(), v.size() * sizeof(T));
}

// --- Channels-last arguments ---------------------------------------------------------------------

// A 1x1 convolution: x [1, 3, 4, 2] NHWC (value 0) by filter OHWI [3, 1, 1, 2] (value 1) plus bias
// [3] (value 2) into y [1, 3, 4, 3] NHWC (value 3): what the exporter writes for a channels-last
// model, whose delegate values are NHWC and have no transposes around the convolution.
constexpr int kH = 3, kW = 4, kC = 2, kO = 3;
const std::vector<float> kFilter = {1, -2, 3, 0.5f, -1, 4};  // [o][c]
const std::vector<float> kBias = {0.25f, -1, 2};

GraphSpec nhwc_conv_graph() {
  GraphSpec g;
  g.values = {input(0, 0, {1, kH, kW, kC}), constant(1, 1, {kO, 1, 1, kC}), constant(2, 2, {kO}),
              output(3, 1, {1, kH, kW, kO})};
  append(g.constant_data, kFilter);
  append(g.constant_data, kBias);
  g.constants = {{0, kFilter.size() * 4, ""}, {kFilter.size() * 4, kBias.size() * 4, ""}};
  ConvSpec c;
  c.gi = kC;
  c.go = kO;
  g.nodes = {conv(fb::NodeUnion::XNNConv2d, c, 0, 1, 2, 3)};
  g.input_ids = {0};
  g.output_ids = {3};
  return g;
}

// NHWC input bytes and the NHWC output the convolution defines.
std::vector<float> nhwc_input() {
  std::vector<float> x(kH * kW * kC);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 7) - 3);
  return x;
}
std::vector<float> nhwc_want(const std::vector<float>& x) {
  std::vector<float> y(kH * kW * kO);
  for (int p = 0; p < kH * kW; ++p) {
    for (int o = 0; o < kO; ++o) {
      double s = kBias[o];
      for (int c = 0; c < kC; ++c) s += double{kFilter[o * kC + c]} * x[p * kC + c];
      y[p * kO + o] = static_cast<float>(s);
    }
  }
  return y;
}

// ExecuTorch hands XNNPACK a channels-last tensor's storage with its sizes in memory order: a
// logical [1, C, H, W] tensor of dim order (0, 2, 3, 1) is the payload's NHWC value, unmoved.
TEST(XnnBoundary, AChannelsLastTensorIsReadAndWrittenInMemoryOrder) {
  Delegate d(nhwc_conv_graph());
  ASSERT_TRUE(d.ok());
  std::vector<float> x = nhwc_input(), y(kH * kW * kO, -99);
  Tensor tx = make(ScalarType::Float, {1, kC, kH, kW}, {0, 2, 3, 1}, x.data());
  Tensor ty = make(ScalarType::Float, {1, kO, kH, kW}, {0, 2, 3, 1}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  EXPECT_EQ(y, nhwc_want(x));
  // The tensor's element (0, o, h, w) is y's NHWC element (h, w, o): its logical value.
  EXPECT_EQ(y[(2 * kW + 1) * kO + 1],
            static_cast<float>(kBias[1] + kFilter[2] * x[(2 * kW + 1) * kC] +
                               kFilter[3] * x[(2 * kW + 1) * kC + 1]));
}

// A contiguous tensor whose sizes are the payload's dims is the same memory.
TEST(XnnBoundary, AContiguousTensorOfThePayloadsDimsIsReadAsIs) {
  Delegate d(nhwc_conv_graph());
  ASSERT_TRUE(d.ok());
  std::vector<float> x = nhwc_input(), y(kH * kW * kO, -99);
  Tensor tx = make(ScalarType::Float, {1, kH, kW, kC}, {}, x.data());
  Tensor ty = make(ScalarType::Float, {1, kH, kW, kO}, {}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  EXPECT_EQ(y, nhwc_want(x));
}

// Any other layout is refused, naming the argument and the value, never read in another order.
TEST(XnnBoundary, OtherLayoutsAreRefused) {
  Delegate d(nhwc_conv_graph());
  ASSERT_TRUE(d.ok());
  std::vector<float> x = nhwc_input(), y(kH * kW * kO, -99);
  Tensor ty = make(ScalarType::Float, {1, kO, kH, kW}, {0, 2, 3, 1}, y.data());
  // The logical NCHW sizes, contiguous: XNNPACK's dims would be [1, 2, 3, 4].
  Tensor nchw = make(ScalarType::Float, {1, kC, kH, kW}, {}, x.data());
  EXPECT_EQ(d.run({&nchw, &ty}), Error::InvalidArgument);
  EXPECT_STREQ(last_error_message(),
               "XNNPACK delegate: argument 0 (input value 0) is a float32 tensor of sizes "
               "[1, 2, 3, 4], dim order [0, 1, 2, 3]: other sizes; it takes float32 [1, 3, 4, 2] "
               "in memory order (contiguous, or 4-D channels-last whose sizes in dim order are "
               "these)");
  // A dim order that is neither contiguous nor channels-last.
  Tensor odd = make(ScalarType::Float, {1, kW, kC, kH}, {0, 3, 1, 2}, x.data());
  EXPECT_EQ(d.run({&odd, &ty}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("a dim order XNNPACK does not read"),
            std::string::npos)
      << last_error_message();
  // The output too.
  Tensor tx = make(ScalarType::Float, {1, kC, kH, kW}, {0, 2, 3, 1}, x.data());
  Tensor y_nchw = make(ScalarType::Float, {1, kO, kH, kW}, {}, y.data());
  EXPECT_EQ(d.run({&tx, &y_nchw}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("argument 1 (output value 3)"),
            std::string::npos)
      << last_error_message();
  EXPECT_EQ(y, std::vector<float>(y.size(), -99));
}

// --- Rows: leading dims up to their upper bounds ----------------------------------------------

// y [L..., 3] = x [L..., 4] (value 0) times fc_graph's filter [3, 4] plus its bias, leading dims
// `lead` at their upper bounds: what ExecuTorch writes for an LLM's linear, [1, S, K] with S
// dynamic.
GraphSpec rows_fc_graph(std::vector<uint32_t> lead) {
  GraphSpec g = fc_graph();
  std::vector<uint32_t> in = lead, out = lead;
  in.push_back(4);
  out.push_back(3);
  g.values[0] = input(0, 0, in);
  g.values[3] = output(3, 1, out);
  return g;
}

// x's rows by fc_graph's filter (floats 1..12, [3][4]) and bias (0.5, 1.5, 2.5), in double.
std::vector<float> rows_fc_want(const std::vector<float>& x) {
  std::vector<float> y;
  for (size_t r = 0; r < x.size() / 4; ++r) {
    for (int o = 0; o < 3; ++o) {
      double s = 0.5 + o;
      for (int c = 0; c < 4; ++c) s += double{x[r * 4 + c]} * (o * 4 + c + 1);
      y.push_back(static_cast<float>(s));
    }
  }
  return y;
}

Tensor dynamic(std::vector<int32_t> sizes, void* data) {
  Result<Tensor> t = Tensor::make(ScalarType::Float, sizes, {}, data, ShapeDynamism::DynamicBound);
  EXPECT_TRUE(t.ok()) << last_error_message();
  return t.ok() ? *t : Tensor();
}

// A payload that computes row by row runs at any number of rows up to its bound: the call's
// leading dims, the output resized to them, each call equal to the definition (a new size built
// once, then reused).
TEST(XnnRows, FewerRowsThanTheBound) {
  Delegate d(rows_fc_graph({1, 4}));
  ASSERT_TRUE(d.ok());
  for (const int32_t s : {2, 4, 1, 2, 3}) {
    std::vector<float> x(static_cast<size_t>(s) * 4), y(4 * 3, -99);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = static_cast<float>(i % 5) - 1.5f * static_cast<float>(s);
    Tensor tx = dynamic({1, s, 4}, x.data());
    Tensor ty = dynamic({1, 4, 3}, y.data());
    ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << s << ": " << last_error_message();
    ASSERT_EQ(ty.dim(), 3);
    EXPECT_EQ(ty.size(1), s);
    const std::vector<float> want = rows_fc_want(x);
    EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + s * 3), want) << s;
    EXPECT_EQ(std::vector<float>(y.begin() + s * 3, y.end()),
              std::vector<float>(y.size() - static_cast<size_t>(s) * 3, -99))
        << "past the call's rows";
  }
}

// The rows are the product of the leading dims: [2, 3] at most 6 rows, so [1, 5] runs.
TEST(XnnRows, LeadingDimsOfAnyShapeUpToTheRows) {
  Delegate d(rows_fc_graph({2, 3}));
  ASSERT_TRUE(d.ok());
  std::vector<float> x(5 * 4), y(6 * 3, -99);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) * 0.25f - 2;
  Tensor tx = dynamic({1, 5, 4}, x.data());
  Tensor ty = dynamic({2, 3, 3}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  EXPECT_EQ((std::vector<int32_t>(ty.sizes().begin(), ty.sizes().end())),
            (std::vector<int32_t>{1, 5, 3}));
  EXPECT_EQ(std::vector<float>(y.begin(), y.begin() + 15), rows_fc_want(x));
}

TEST(XnnRows, Refusals) {
  Delegate d(rows_fc_graph({1, 4}));
  ASSERT_TRUE(d.ok());
  std::vector<float> x(5 * 4, 1), y(5 * 3, -99);
  Tensor ty = dynamic({1, 4, 3}, y.data());
  auto refused = [&](Tensor& tx, Tensor& out, const char* why) {
    EXPECT_EQ(d.run({&tx, &out}), Error::InvalidArgument) << why;
    EXPECT_NE(std::string(last_error_message()).find(why), std::string::npos)
        << last_error_message();
  };
  Tensor more = dynamic({1, 5, 4}, x.data());
  refused(more, ty, "more rows than the program's upper bound");
  Tensor wide = dynamic({1, 2, 5}, x.data());
  refused(wide, ty, "another last dim");
  Tensor flat = dynamic({2, 4}, x.data());
  refused(flat, ty, "another rank");
  // An output planned at static sizes cannot take other leading dims.
  Tensor two = dynamic({1, 2, 4}, x.data());
  Tensor fixed = make(ScalarType::Float, {1, 4, 3}, {}, y.data());
  refused(two, fixed, "an output that cannot take the call's leading dims");
  EXPECT_EQ(y, std::vector<float>(y.size(), -99));
  // Two inputs must bring the same leading dims.
  GraphSpec g = add_graph();  // x0 [2, 3] + x1 [2, 3]
  Delegate add(g);
  ASSERT_TRUE(add.ok());
  std::vector<float> a(6, 1), b(6, 2), c(6, -99);
  Tensor ta = dynamic({2, 3}, a.data()), tb = dynamic({1, 3}, b.data());
  Tensor tc = dynamic({2, 3}, c.data());
  EXPECT_EQ(add.run({&ta, &tb, &tc}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("leading dims other than argument 0's"),
            std::string::npos)
      << last_error_message();
  Tensor tb2 = dynamic({2, 3}, b.data());
  ASSERT_EQ(add.run({&ta, &tb2, &tc}), Error::Ok) << last_error_message();
  EXPECT_EQ(c, std::vector<float>(6, 3));
}

// A row-wise payload over NHWC values (a lone activation between convolutions) still reads a
// channels-last tensor in memory order, as at its fixed sizes.
TEST(XnnRows, ChannelsLastInMemoryOrder) {
  GraphSpec g;
  g.values = {input(0, 0, {1, 2, 2, 3}), output(1, 1, {1, 2, 2, 3})};
  g.nodes = {node1x1(fb::NodeUnion::XNNNegate, 0, 1)};
  g.input_ids = {0};
  g.output_ids = {1};
  Delegate d(g);
  ASSERT_TRUE(d.ok());
  std::vector<float> x(12), y(12, -99);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i) - 5;
  // Logical NCHW [1, 3, 2, 2] in channels-last memory: NHWC [1, 2, 2, 3].
  Tensor tx = make(ScalarType::Float, {1, 3, 2, 2}, {0, 2, 3, 1}, x.data());
  Tensor ty = make(ScalarType::Float, {1, 3, 2, 2}, {0, 2, 3, 1}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], -x[i]) << i;
}

// A payload that does not compute row by row (a transpose) keeps its sizes: others are refused.
TEST(XnnRows, OtherPayloadsKeepTheirSizes) {
  GraphSpec g;
  g.values = {input(0, 0, {2, 3}), output(1, 1, {3, 2})};
  g.nodes = {transpose({1, 0}, 0, 1)};
  g.input_ids = {0};
  g.output_ids = {1};
  Delegate d(g);
  ASSERT_TRUE(d.ok());
  std::vector<float> x(6, 1), y(6, -99);
  Tensor tx = dynamic({1, 3}, x.data()), ty = dynamic({3, 2}, y.data());
  EXPECT_EQ(d.run({&tx, &ty}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("other sizes"), std::string::npos)
      << last_error_message();
}

// The exporter passes an fp16 graph's scalar constants as delegate inputs: a 0-dim tensor for a
// payload value of dims [1] (XNNPACK's scalar), broadcast by the add.
TEST(XnnBoundary, AZeroDimTensorIsAOneElementValue) {
  for (const bool half : {false, true}) {
    SCOPED_TRACE(half);
    GraphSpec g;
    g.values = {input(0, 0, {3}), input(1, 1, {1}), output(2, 2, {3})};
    if (half) {
      for (ValueSpec& v : g.values) v.dtype = fb::Datatype::fp16;
    }
    g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 2)};
    g.input_ids = {0, 1};
    g.output_ids = {2};
    Delegate d(g);
    ASSERT_TRUE(d.ok());
    const ScalarType type = half ? ScalarType::Half : ScalarType::Float;
    // 1, 2, -4 plus 0.5 (fp16 0x3C00, 0x4000, 0xC400, 0x3800; sums 0x3E00, 0x4100, 0xC300).
    std::vector<float> xf = {1, 2, -4}, sf = {0.5f}, yf(3);
    std::vector<uint16_t> xh = {0x3C00, 0x4000, 0xC400}, sh = {0x3800}, yh(3);
    Tensor tx = make(type, {3}, {}, half ? static_cast<void*>(xh.data()) : xf.data());
    Tensor ts = make(type, {}, {}, half ? static_cast<void*>(sh.data()) : sf.data());
    Tensor ty = make(type, {3}, {}, half ? static_cast<void*>(yh.data()) : yf.data());
    ASSERT_EQ(d.run({&tx, &ts, &ty}), Error::Ok) << last_error_message();
    if (half) {
      EXPECT_EQ(yh, (std::vector<uint16_t>{0x3E00, 0x4100, 0xC300}));
    } else {
      EXPECT_EQ(yf, (std::vector<float>{1.5f, 2.5f, -3.5f}));
    }
  }
}

// --- int8 arguments ------------------------------------------------------------------------------

void set_q8(ValueSpec& v, float scale, int32_t zero_point) {
  v.dtype = fb::Datatype::qint8;
  v.quantized = true;
  v.quant = fb::QuantParams::PerTensorQuant;
  v.scale = scale;
  v.zero_point = zero_point;
}

// Every int8 value in and out through a transpose on one grid: dequantized into the engine and
// quantized back, each integer recovered exactly (an awkward scale, a zero point).
TEST(XnnBoundary, Int8ArgumentsRoundTripEveryInteger) {
  for (const float scale : {0.0123f, 1e-3f, 0.3f, 7.77f}) {
    SCOPED_TRACE(scale);
    GraphSpec g;
    g.values = {input(0, 0, {16, 16}), output(1, 1, {16, 16})};
    set_q8(g.values[0], scale, 5);
    set_q8(g.values[1], scale, 5);
    g.nodes = {transpose({1, 0}, 0, 1)};
    g.input_ids = {0};
    g.output_ids = {1};
    Delegate d(g);
    ASSERT_TRUE(d.ok());
    std::vector<int8_t> x(256), y(256, 0);
    for (int i = 0; i < 256; ++i) x[i] = static_cast<int8_t>(i - 128);
    Tensor tx = make(ScalarType::Char, {16, 16}, {}, x.data());
    Tensor ty = make(ScalarType::Char, {16, 16}, {}, y.data());
    ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
    for (int i = 0; i < 16; ++i) {
      for (int j = 0; j < 16; ++j) ASSERT_EQ(y[i * 16 + j], x[j * 16 + i]) << i << ", " << j;
    }
  }
}

// An add of two int8 inputs on their grids into a third: the real values' sum, rounded to the
// output's grid (to nearest: a + 3 + 0.4 (b - 7) is never a half step) and saturated.
TEST(XnnBoundary, Int8AddOfThreeGrids) {
  GraphSpec g = add_graph();
  g.values[0].dims = g.values[1].dims = g.values[2].dims = {16, 16};
  set_q8(g.values[0], 0.05f, -3);
  set_q8(g.values[1], 0.02f, 7);
  set_q8(g.values[2], 0.05f, 1);
  Delegate d(g);
  ASSERT_TRUE(d.ok());
  std::vector<int8_t> a(256), b(256), y(256, 0);
  for (int i = 0; i < 256; ++i) {
    a[i] = static_cast<int8_t>(i - 128);
    b[i] = static_cast<int8_t>((i * 37) % 256 - 128);
  }
  Tensor ta = make(ScalarType::Char, {16, 16}, {}, a.data());
  Tensor tb = make(ScalarType::Char, {16, 16}, {}, b.data());
  Tensor ty = make(ScalarType::Char, {16, 16}, {}, y.data());
  ASSERT_EQ(d.run({&ta, &tb, &ty}), Error::Ok) << last_error_message();
  int saturated = 0;
  for (int i = 0; i < 256; ++i) {
    const double real = (a[i] + 3) * 0.05 + (b[i] - 7) * 0.02;
    const double q = std::nearbyint(real / 0.05) + 1;
    saturated += q < -128 || q > 127;
    ASSERT_EQ(y[i], static_cast<int8_t>(std::clamp(q, -128.0, 127.0))) << i;
  }
  EXPECT_GT(saturated, 0);  // the clamp is exercised
}

// ExecuTorch passes int8 (torch.int8, Char) tensors for qint8 values: a uint8 one is refused.
TEST(XnnBoundary, Int8ArgumentsMustBeChar) {
  GraphSpec g = add_graph();
  for (ValueSpec& v : g.values) set_q8(v, 0.5f, 0);
  Delegate d(g);
  ASSERT_TRUE(d.ok());
  std::vector<uint8_t> a(6), b(6), y(6);
  Tensor ta = make(ScalarType::Byte, {2, 3}, {}, a.data());
  Tensor tb = make(ScalarType::Char, {2, 3}, {}, b.data());
  Tensor ty = make(ScalarType::Char, {2, 3}, {}, y.data());
  EXPECT_EQ(d.run({&ta, &tb, &ty}), Error::InvalidArgument);
  EXPECT_STREQ(last_error_message(),
               "XNNPACK delegate: argument 0 (input value 0) is a uint8 tensor of sizes [2, 3], "
               "dim order [0, 1]: another dtype; it takes int8 [2, 3] in memory order "
               "(contiguous, or 4-D channels-last whose sizes in dim order are these)");
}

// --- fp16 and bf16 arguments ---------------------------------------------------------------------

// x + c, all of `dtype`, c a constant: the engine adds in float32 and the output is rounded to
// the dtype, to nearest with ties to even.
GraphSpec half_add_graph(fb::Datatype dtype, const std::vector<uint16_t>& c) {
  GraphSpec g;
  const uint32_t n = static_cast<uint32_t>(c.size());
  g.values = {input(0, 0, {n}), constant(1, 1, {n}), output(2, 1, {n})};
  for (ValueSpec& v : g.values) v.dtype = dtype;
  append(g.constant_data, c);
  g.constants = {{0, c.size() * 2, ""}};
  g.nodes = {node2x1(fb::NodeUnion::XNNAdd, 0, 1, 2)};
  g.input_ids = {0};
  g.output_ids = {2};
  return g;
}

TEST(XnnBoundary, Fp16ArgumentsRoundToNearestEven) {
  // 1 + 2^-11: halfway between 1 and 1 + 2^-10, to 1 (even). (1 + 2^-10) + 2^-11: halfway, to
  // 1 + 2^-9 (even). 2048 + 1: halfway between 2048 and 2050, to 2048. 65504 + 16 = 65520:
  // halfway between the largest half and 65536, to infinity (IEEE's overflow rule). 3 + 0.25:
  // exact.
  const std::vector<uint16_t> x = {0x3C00, 0x3C01, 0x6800, 0x7BFF, 0x4200};
  const std::vector<uint16_t> c = {0x1000, 0x1000, 0x3C00, 0x4C00, 0x3400};
  const std::vector<uint16_t> want = {0x3C00, 0x3C02, 0x6800, 0x7C00, 0x4280};
  Delegate d(half_add_graph(fb::Datatype::fp16, c));
  ASSERT_TRUE(d.ok());
  std::vector<uint16_t> in = x, y(x.size(), 0);
  const int32_t n = static_cast<int32_t>(x.size());
  Tensor tx = make(ScalarType::Half, {n}, {}, in.data());
  Tensor ty = make(ScalarType::Half, {n}, {}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  EXPECT_EQ(y, want);
  // A float32 tensor for an fp16 value is refused.
  std::vector<float> f(x.size());
  Tensor tf = make(ScalarType::Float, {n}, {}, f.data());
  EXPECT_EQ(d.run({&tf, &ty}), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("is a float32 tensor"), std::string::npos)
      << last_error_message();
}

TEST(XnnBoundary, Bf16ArgumentsRoundToNearestEven) {
  // 1 + 2^-8: halfway between 1 and 1 + 2^-7, to 1. (1 + 2^-7) + 2^-8: to 1 + 2^-6. 256 + 1:
  // halfway between 256 and 258, to 256. 3 + 0.25: exact.
  const std::vector<uint16_t> x = {0x3F80, 0x3F81, 0x4380, 0x4040};
  const std::vector<uint16_t> c = {0x3B80, 0x3B80, 0x3F80, 0x3E80};
  const std::vector<uint16_t> want = {0x3F80, 0x3F82, 0x4380, 0x4050};
  Delegate d(half_add_graph(fb::Datatype::bf16, c));
  ASSERT_TRUE(d.ok());
  std::vector<uint16_t> in = x, y(x.size(), 0);
  const int32_t n = static_cast<int32_t>(x.size());
  Tensor tx = make(ScalarType::BFloat16, {n}, {}, in.data());
  Tensor ty = make(ScalarType::BFloat16, {n}, {}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  EXPECT_EQ(y, want);
}

// An fp16 linear layer (fp16 weights and bias, widened at init): values whose products and sums
// are exact in float32 and in fp16, so the result is exact.
TEST(XnnBoundary, Fp16FullyConnected) {
  GraphSpec g = fc_graph();  // y [2, 3] = x [2, 4] W^T [3, 4] + b [3]
  for (ValueSpec& v : g.values) v.dtype = fb::Datatype::fp16;
  std::vector<uint16_t> w(12), b = {0x3800, 0x3E00, 0x4100};  // 0.5, 1.5, 2.5
  for (int i = 0; i < 12; ++i) {
    // 1..12 as fp16: exponent and mantissa of small integers.
    const float f = static_cast<float>(i + 1);
    const int e = static_cast<int>(std::floor(std::log2(f)));
    const int mant = static_cast<int>((f / std::ldexp(1.0f, e) - 1) * 1024);
    w[i] = static_cast<uint16_t>(((e + 15) << 10) | mant);
  }
  g.constant_data.clear();
  append(g.constant_data, w);
  append(g.constant_data, b);
  g.constants = {{0, 24, ""}, {24, 6, ""}};
  Delegate d(g);
  ASSERT_TRUE(d.ok());
  // x = [[1, 2, 0.5, -1], [0, -2, 4, 0.25]]
  std::vector<uint16_t> x = {0x3C00, 0x4000, 0x3800, 0xBC00, 0x0000, 0xC000, 0x4400, 0x3400};
  std::vector<uint16_t> y(6, 0);
  Tensor tx = make(ScalarType::Half, {2, 4}, {}, x.data());
  Tensor ty = make(ScalarType::Half, {2, 3}, {}, y.data());
  ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
  const double xs[2][4] = {{1, 2, 0.5, -1}, {0, -2, 4, 0.25}};
  const double bs[3] = {0.5, 1.5, 2.5};
  for (int r = 0; r < 2; ++r) {
    for (int o = 0; o < 3; ++o) {
      double s = bs[o];
      for (int k = 0; k < 4; ++k) s += xs[r][k] * (o * 4 + k + 1);
      // Decode the fp16 result (normal values only here).
      const uint16_t h = y[r * 3 + o];
      const double mag =
          h & 0x7FFF ? std::ldexp(1.0 + (h & 0x3FF) / 1024.0, ((h >> 10) & 0x1F) - 15) : 0.0;
      EXPECT_EQ((h & 0x8000) ? -mag : mag, s) << r << ", " << o;
    }
  }
}

// --- ConvTranspose2d against PyTorch ------------------------------------------------------------

// A case of testdata/deconv_reference.txt: PyTorch's conv_transpose2d (deconv_reference.py wrote
// it; Ember computed none of it).
struct DeconvCase {
  std::string name;
  int n = 0, c = 0, h = 0, w = 0, o = 0, kh = 0, kw = 0, groups = 0;
  int stride[2] = {}, pad[2] = {}, out_pad[2] = {}, dil[2] = {};
  int relu = 0, oh = 0, ow = 0;
  std::vector<float> x, wt, b, y;  // NCHW, [C, O / groups, kh, kw], [O] or empty, NCHW
};

std::vector<DeconvCase> read_deconv_cases() {
  std::ifstream in(EMBER_XNNPACK_TESTDATA "/deconv_reference.txt");
  std::vector<DeconvCase> cases;
  std::string line;
  auto floats = [](const std::string& text, char tag) {
    std::istringstream s(text);
    std::string t;
    s >> t;
    EXPECT_EQ(t, std::string(1, tag));
    std::vector<float> v;
    while (s >> t) v.push_back(std::strtof(t.c_str(), nullptr));
    return v;
  };
  while (std::getline(in, line)) {
    DeconvCase k;
    std::istringstream s(line);
    std::string tag;
    s >> tag >> k.name >> k.n >> k.c >> k.h >> k.w >> k.o >> k.kh >> k.kw >> k.groups >>
        k.stride[0] >> k.stride[1] >> k.pad[0] >> k.pad[1] >> k.out_pad[0] >> k.out_pad[1] >>
        k.dil[0] >> k.dil[1] >> k.relu >> k.oh >> k.ow;
    if (tag != "case") break;
    std::string x, w, b, y;
    std::getline(in, x);
    std::getline(in, w);
    std::getline(in, b);
    std::getline(in, y);
    k.x = floats(x, 'x');
    k.wt = floats(w, 'w');
    k.b = floats(b, 'b');
    k.y = floats(y, 'y');
    cases.push_back(std::move(k));
  }
  return cases;
}

// What the exporter writes for an NHWC value's ConvTranspose2d: filter [O, kh, kw, C / groups]
// (group g's output channel j and input channel i are PyTorch's [g * C / groups + i][j]), the
// adjustment PyTorch's output_padding, the padding on both sides.
TEST(XnnDeconv, MatchesPyTorchConvTranspose2d) {
  const std::vector<DeconvCase> cases = read_deconv_cases();
  ASSERT_EQ(cases.size(), 3u);
  for (const DeconvCase& k : cases) {
    SCOPED_TRACE(k.name);
    const int gi = k.c / k.groups, go = k.o / k.groups;
    std::vector<float> filter(k.wt.size());
    for (int g = 0; g < k.groups; ++g) {
      for (int j = 0; j < go; ++j) {
        for (int p = 0; p < k.kh; ++p) {
          for (int q = 0; q < k.kw; ++q) {
            for (int i = 0; i < gi; ++i) {
              filter[(((g * go + j) * k.kh + p) * k.kw + q) * gi + i] =
                  k.wt[(((g * gi + i) * go + j) * k.kh + p) * k.kw + q];
            }
          }
        }
      }
    }
    const uint32_t n = k.n, h = k.h, w = k.w, c = k.c, o = k.o, oh = k.oh, ow = k.ow;
    GraphSpec gs;
    append(gs.constant_data, filter);
    gs.constants = {{0, filter.size() * 4, ""}};
    // Value 2 is the bias, or where there is none a value nothing reads.
    ValueSpec bias = internal(2, {1});
    if (!k.b.empty()) {
      bias = constant(2, 2, {o});
      gs.constants.push_back({filter.size() * 4, k.b.size() * 4, ""});
      append(gs.constant_data, k.b);
    }
    gs.values = {input(0, 0, {n, h, w, c}),
                 constant(1, 1, {o, uint32_t(k.kh), uint32_t(k.kw), uint32_t(gi)}), bias,
                 output(3, 1, {n, oh, ow, o})};
    NodeConvSpec s;
    s.kh = k.kh;
    s.kw = k.kw;
    s.groups = k.groups;
    s.gi = gi;
    s.go = go;
    s.stride_h = k.stride[0];
    s.stride_w = k.stride[1];
    s.pad_top = s.pad_bottom = k.pad[0];
    s.pad_left = s.pad_right = k.pad[1];
    s.adjustment_h = k.out_pad[0];
    s.adjustment_w = k.out_pad[1];
    s.dilation_h = k.dil[0];
    s.dilation_w = k.dil[1];
    if (k.relu) {
      s.clamp = true;
      s.output_min = 0;
      s.output_max = std::numeric_limits<float>::infinity();
    }
    gs.nodes = {conv_node(fb::NodeUnion::XNNConvTranspose2d, s, 0, 1, k.b.empty() ? kNone : 2, 3)};
    gs.input_ids = {0};
    gs.output_ids = {3};
    Delegate d(gs);
    ASSERT_TRUE(d.ok());
    std::vector<float> x(k.x.size()), y(k.y.size(), 0);
    for (int b = 0; b < k.n; ++b) {
      for (int i = 0; i < k.c; ++i) {
        for (int p = 0; p < k.h * k.w; ++p)
          x[(b * k.h * k.w + p) * k.c + i] = k.x[(b * k.c + i) * k.h * k.w + p];
      }
    }
    Tensor tx = make(ScalarType::Float, {k.n, k.h, k.w, k.c}, {}, x.data());
    Tensor ty = make(ScalarType::Float, {k.n, k.oh, k.ow, k.o}, {}, y.data());
    ASSERT_EQ(d.run({&tx, &ty}), Error::Ok) << last_error_message();
    // float32 sums in another order than ATen's: a few roundings of the output's magnitude.
    float scale = 0;
    for (const float v : k.y) scale = std::max(scale, std::fabs(v));
    for (int b = 0; b < k.n; ++b) {
      for (int j = 0; j < k.o; ++j) {
        for (int p = 0; p < k.oh * k.ow; ++p) {
          EXPECT_NEAR(y[(b * k.oh * k.ow + p) * k.o + j], k.y[(b * k.o + j) * k.oh * k.ow + p],
                      1e-5f * scale)
              << "batch " << b << ", channel " << j << ", position " << p;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ember::xnn
