// Method behaviour on programs built with Ember's writer: inputs and outputs (C23), external
// weights in a .ptd, operator and argument checks at load, control instructions, delegates,
// mutable state, several methods per program.
#include <cstring>

#include "compiler/emit/pte_writer.h"
#include "runtime/executor/flat_tensor_data_map.h"
#include "runtime/executor/module.h"
#include "runtime/platform/clock.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

using emit::IntListSpec;
using emit::MethodSpec;
using emit::ProgramSpec;
using emit::TensorSpec;

std::vector<uint8_t> float_bytes(std::vector<float> v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TensorSpec unplanned(std::vector<int32_t> sizes, ShapeDynamism d = ShapeDynamism::Static) {
  TensorSpec t;
  t.sizes = std::move(sizes);
  t.dynamism = d;
  return t;
}

// A program over owned bytes, loaded.
struct Loaded {
  explicit Loaded(std::vector<uint8_t> file) : bytes(file), loader(bytes.data.get(), bytes.size) {
    program = std::make_unique<Result<Program>>(Program::load(&loader));
  }
  Program& operator*() { return **program; }
  AlignedBytes bytes;
  BufferDataLoader loader;
  std::unique_ptr<Result<Program>> program;
};

std::vector<uint8_t> write(const ProgramSpec& spec) {
  Result<emit::WrittenProgram> w = emit::write_program(spec);
  EXPECT_TRUE(w.ok()) << last_error_message();
  return w.ok() ? w->pte : std::vector<uint8_t>();
}

// out = x + x for a dynamic x with upper bound [10], neither planned: the setup of contract C23.
ProgramSpec dynamic_double() {
  MethodSpec m;
  const int32_t x = m.add(unplanned({10}, ShapeDynamism::DynamicBound));
  const int32_t alpha = m.add(int64_t{1});
  const int32_t out = m.add(unplanned({10}, ShapeDynamism::DynamicBound));
  m.inputs = {x};
  m.outputs = {out};
  m.call("aten::add", "out", {x, x, alpha, out, out});
  return ProgramSpec{{m}};
}

TEST(Method, C23_OutputBufferIsCheckedAgainstTheUpperBound) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  Loaded program(write(dynamic_double()));
  ASSERT_TRUE(program.program->ok()) << last_error_message();
  MethodMemory memory(*(*program).method_meta("forward"));
  Result<Method> method = (*program).load_method("forward", &memory.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();

  std::vector<float> small{1.5f, -2.0f};
  Tensor x2 = float_tensor(small, {2});
  ASSERT_EQ(method->set_input(x2, 0), Error::Ok) << last_error_message();
  float too_small[2];
  EXPECT_EQ(method->set_output_data_ptr(too_small, sizeof(too_small), 0), Error::InvalidArgument);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("8 bytes"), std::string::npos) << message;
  EXPECT_NE(message.find("40"), std::string::npos) << message;

  // Exactly the upper bound, allocated so that ASan flags any write past it.
  auto buffer = std::make_unique<float[]>(10);
  ASSERT_EQ(method->set_output_data_ptr(buffer.get(), 40, 0), Error::Ok) << last_error_message();
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  Tensor out = method->get_output(0)->to_tensor();
  ASSERT_EQ(out.numel(), 2);
  EXPECT_EQ(buffer[0], 3.0f);
  EXPECT_EQ(buffer[1], -4.0f);

  std::vector<float> full(10);
  for (int i = 0; i < 10; ++i) full[i] = static_cast<float>(i);
  Tensor x10 = float_tensor(full, {10});
  ASSERT_EQ(method->set_input(x10, 0), Error::Ok) << last_error_message();
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  EXPECT_EQ(method->get_output(0)->to_tensor().numel(), 10);
  EXPECT_EQ(buffer[9], 18.0f);

  std::vector<float> big(11);
  Tensor x11 = float_tensor(big, {11});
  EXPECT_EQ(method->set_input(x11, 0), Error::InvalidArgument);
  EXPECT_NE(std::string(last_error_message()).find("above its upper bound of 10"),
            std::string::npos)
      << last_error_message();
}

TEST(Method, PlannedOutputRefusesACallerBuffer) {
  EMBER_REQUIRE_FIXTURES();
  Module module(fixture_dir() + "/add.pte");
  Result<Method*> method = module.method("forward");
  ASSERT_TRUE(method.ok());
  float buffer[4];
  EXPECT_EQ((*method)->set_output_data_ptr(buffer, sizeof(buffer), 0), Error::InvalidState);
}

// y = x * w + b with w and b external (in a .ptd).
ProgramSpec external_linear(float w_value, const std::string& w_key) {
  MethodSpec m;
  TensorSpec w =
      TensorSpec::constant(ScalarType::Float, {3}, float_bytes({w_value, w_value, w_value}));
  w.storage = TensorSpec::Storage::External;
  w.fqn = w_key;
  TensorSpec b = TensorSpec::constant(ScalarType::Float, {3}, float_bytes({1, 2, 3}));
  b.storage = TensorSpec::Storage::External;
  b.fqn = "linear.bias";
  const int32_t wi = m.add(w), bi = m.add(b);
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {3}, 0));
  const int32_t t = m.add(TensorSpec::planned(ScalarType::Float, {3}, 16));
  const int32_t alpha = m.add(int64_t{1});
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {3}, 32));
  m.inputs = {x};
  m.outputs = {y};
  m.call("aten::mul", "out", {x, wi, t, t});
  m.call("aten::add", "out", {t, bi, alpha, y, y});
  m.arena_sizes = {48};
  return ProgramSpec{{m}};
}

struct PtdCase {
  std::vector<uint8_t> pte, ptd;
};

PtdCase written(const ProgramSpec& spec) {
  Result<emit::WrittenProgram> w = emit::write_program(spec);
  EXPECT_TRUE(w.ok()) << last_error_message();
  return {w->pte, w->ptd};
}

Error run_with_ptd(const PtdCase& program, const std::vector<uint8_t>* ptd, std::vector<float>* y) {
  Loaded loaded(program.pte);
  if (!loaded.program->ok()) return loaded.program->error();
  std::unique_ptr<AlignedBytes> ptd_bytes;
  std::unique_ptr<BufferDataLoader> ptd_loader;
  std::unique_ptr<Result<FlatTensorDataMap>> map;
  const NamedDataMap* data = nullptr;
  if (ptd != nullptr) {
    ptd_bytes = std::make_unique<AlignedBytes>(*ptd);
    ptd_loader = std::make_unique<BufferDataLoader>(ptd_bytes->data.get(), ptd_bytes->size);
    map = std::make_unique<Result<FlatTensorDataMap>>(FlatTensorDataMap::load(ptd_loader.get()));
    if (!map->ok()) return map->error();
    data = &**map;
  }
  MethodMemory memory(*(*loaded).method_meta("forward"));
  Result<Method> method = (*loaded).load_method("forward", &memory.manager, data);
  if (!method.ok()) return method.error();
  std::vector<float> x{1, 2, 3};
  Tensor tx = float_tensor(x, {3});
  EMBER_TRY(method->set_input(tx, 0));
  EMBER_TRY(method->execute());
  const float* p = method->get_output(0)->to_tensor().data<float>();
  y->assign(p, p + 3);
  return Error::Ok;
}

TEST(Method, ExternalWeightsComeFromThePtd) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  const PtdCase a = written(external_linear(2.0f, "linear.weight"));
  ASSERT_FALSE(a.ptd.empty());
  std::vector<float> y;
  ASSERT_EQ(run_with_ptd(a, &a.ptd, &y), Error::Ok) << last_error_message();
  EXPECT_EQ(y, (std::vector<float>{3, 6, 9}));

  EXPECT_EQ(run_with_ptd(a, nullptr, &y), Error::NotFound);
  EXPECT_NE(std::string(last_error_message()).find("is missing from named data"), std::string::npos)
      << last_error_message();

  // Another program's weights file (other key): refused at load, naming the key.
  const PtdCase b = written(external_linear(5.0f, "linear.weight.other"));
  EXPECT_EQ(run_with_ptd(a, &b.ptd, &y), Error::NotFound);
  EXPECT_NE(std::string(last_error_message()).find("'linear.weight' is missing from named data"),
            std::string::npos)
      << last_error_message();
}

TEST(Method, MissingOperatorsAreAllListed) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {2}, 16));
  m.inputs = {x};
  m.outputs = {y};
  m.call("aten::frobnicate", "out", {x, y, y});
  m.call("aten::mul", "out", {x, x, y, y});
  m.call("custom::twiddle", "", {x, y, y});
  m.arena_sizes = {32};
  Loaded program(write(ProgramSpec{{m}}));
  ASSERT_TRUE(program.program->ok());
  MethodMemory memory(*(*program).method_meta("forward"));
  EXPECT_EQ((*program).load_method("forward", &memory.manager).error(), Error::OperatorMissing);
  const std::string message = last_error_message();
  EXPECT_NE(message.find("aten::frobnicate.out (instruction 0)"), std::string::npos) << message;
  EXPECT_NE(message.find("custom::twiddle (instruction 2)"), std::string::npos) << message;
  EXPECT_EQ(message.find("aten::mul"), std::string::npos) << message;
}

TEST(Method, ArgumentsAreCheckedAgainstTheKernelSignatureAtLoad) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {2}, 16));
  const int32_t d = m.add(2.5);
  m.inputs = {x};
  m.outputs = {y};
  m.call("aten::add", "out", {x, x, y, y});  // alpha missing
  m.arena_sizes = {32};
  Loaded short_args(write(ProgramSpec{{m}}));
  MethodMemory memory(*(*short_args).method_meta("forward"));
  EXPECT_EQ((*short_args).load_method("forward", &memory.manager).error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("takes 5 arguments"), std::string::npos)
      << last_error_message();

  m.instructions.clear();
  m.call("aten::add", "out", {x, d, d, y, y});  // a Double where a Tensor goes
  Loaded wrong_kind(write(ProgramSpec{{m}}));
  MethodMemory memory2(*(*wrong_kind).method_meta("forward"));
  EXPECT_EQ((*wrong_kind).load_method("forward", &memory2.manager).error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("argument 1 is a Double"), std::string::npos)
      << last_error_message();
}

TEST(Method, AKernelMayNotWriteIntoAConstant) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  MethodSpec m;
  const int32_t c = m.add(TensorSpec::constant(ScalarType::Float, {2}, float_bytes({1, 2})));
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
  m.inputs = {x};
  m.outputs = {c};
  m.call("aten::mul", "out", {x, x, c, c});
  m.arena_sizes = {16};
  Loaded program(write(ProgramSpec{{m}}));
  ASSERT_TRUE(program.program->ok()) << last_error_message();
  MethodMemory memory(*(*program).method_meta("forward"));
  EXPECT_EQ((*program).load_method("forward", &memory.manager).error(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("writes its output into a constant"),
            std::string::npos);
}

// et_view: the result shares its operand's storage (no storage of its own, no copy). A program
// that reads the result before its et_view ran, or jumps over the et_view, gets an error at
// execute, not a read through a null pointer; a result with no et_view at all is refused at load.
ProgramSpec view_then_mul(bool read_before_view) {
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2, 3}, 0));
  const int32_t two = m.add(TensorSpec::constant(ScalarType::Float, {}, float_bytes({2})));
  TensorSpec view_spec;
  view_spec.dtype = ScalarType::Float;
  view_spec.sizes = {6};
  const int32_t v = m.add(view_spec);  // unplanned: storage from the et_view
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {6}, 32));
  const int32_t size = m.add(IntListSpec{{m.add(int64_t{6})}});
  m.inputs = {x};
  m.outputs = {y};
  if (read_before_view) m.call("aten::mul", "out", {v, two, y, y});
  m.call("executorch_prim::et_view", "default", {x, size, v});
  m.call("aten::mul", "out", {v, two, y, y});
  m.arena_sizes = {64};
  return ProgramSpec{{m}};
}

TEST(Method, EtViewSharesStorageAndIsCheckedBeforeItIsRead) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  for (bool read_before_view : {false, true}) {
    SCOPED_TRACE(read_before_view ? "read before the et_view" : "in order");
    Loaded program(write(view_then_mul(read_before_view)));
    ASSERT_TRUE(program.program->ok()) << last_error_message();
    MethodMemory memory(*(*program).method_meta("forward"));
    Result<Method> method = (*program).load_method("forward", &memory.manager);
    ASSERT_TRUE(method.ok()) << last_error_message();
    std::vector<float> in{1, 2, 3, 4, 5, 6};
    Tensor x = float_tensor(in, {2, 3});
    ASSERT_EQ(method->set_input(x, 0), Error::Ok) << last_error_message();
    if (read_before_view) {
      EXPECT_EQ(method->execute(), Error::InvalidProgram);
      EXPECT_NE(std::string(last_error_message()).find("before its et_view ran"), std::string::npos)
          << last_error_message();
      continue;
    }
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    const Tensor out = method->get_output(0)->to_tensor();
    ASSERT_EQ(out.numel(), 6);
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out.data<float>()[i], 2.0f * in[i]);
    // Again with new input values: the view reads them (it is re-pointed at every execute).
    std::vector<float> in2{-1, -2, -3, -4, -5, -6};
    Tensor x2 = float_tensor(in2, {2, 3});
    ASSERT_EQ(method->set_input(x2, 0), Error::Ok) << last_error_message();
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    for (int i = 0; i < 6; ++i) EXPECT_EQ(out.data<float>()[i], 2.0f * in2[i]);
  }
  // Without the et_view, the unplanned tensor has no storage at all: refused at load.
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
  TensorSpec bare;
  bare.sizes = {2};
  const int32_t v = m.add(bare);
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {2}, 16));
  m.inputs = {x};
  m.outputs = {y};
  m.call("aten::mul", "out", {x, v, y, y});
  m.arena_sizes = {32};
  Loaded bad(write(ProgramSpec{{m}}));
  ASSERT_TRUE(bad.program->ok()) << last_error_message();
  MethodMemory memory(*(*bad).method_meta("forward"));
  EXPECT_EQ((*bad).load_method("forward", &memory.manager).error(), Error::InvalidProgram);
}

// An et_view that ran on one execute and is jumped over on the next: the reader gets an error,
// not the previous execute's pointer (execute clears et_view results first, also in a Method
// that was moved, as load_method's result is).
TEST(Method, AnEtViewJumpedOverOnALaterExecuteIsCaught) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2, 3}, 0));
  const int32_t flag = m.add(TensorSpec::planned(ScalarType::Bool, {1}, 32));
  const int32_t two = m.add(TensorSpec::constant(ScalarType::Float, {}, float_bytes({2})));
  TensorSpec view_spec;
  view_spec.dtype = ScalarType::Float;
  view_spec.sizes = {6};
  const int32_t v = m.add(view_spec);
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {6}, 64));
  const int32_t size = m.add(IntListSpec{{m.add(int64_t{6})}});
  m.inputs = {x, flag};
  m.outputs = {y};
  m.append<emit::JumpFalseSpec>(flag, 2);                       // 0: if (!flag) goto 2
  m.call("executorch_prim::et_view", "default", {x, size, v});  // 1
  m.call("aten::mul", "out", {v, two, y, y});                   // 2
  m.arena_sizes = {96};
  Loaded program(write(ProgramSpec{{m}}));
  ASSERT_TRUE(program.program->ok()) << last_error_message();
  MethodMemory memory(*(*program).method_meta("forward"));
  Result<Method> loaded = (*program).load_method("forward", &memory.manager);
  ASSERT_TRUE(loaded.ok()) << last_error_message();
  Method method = std::move(*loaded);
  std::vector<float> in{1, 2, 3, 4, 5, 6};
  Tensor xt = float_tensor(in, {2, 3});
  uint8_t on = 1, off = 0;
  const std::vector<int32_t> one = {1};
  Result<Tensor> yes = Tensor::make(ScalarType::Bool, one, {}, &on);
  Result<Tensor> no = Tensor::make(ScalarType::Bool, one, {}, &off);
  ASSERT_TRUE(yes.ok() && no.ok());
  ASSERT_EQ(method.set_input(xt, 0), Error::Ok) << last_error_message();
  ASSERT_EQ(method.set_input(*yes, 1), Error::Ok) << last_error_message();
  ASSERT_EQ(method.execute(), Error::Ok) << last_error_message();
  EXPECT_EQ(method.get_output(0)->to_tensor().data<float>()[5], 12.0f);
  ASSERT_EQ(method.set_input(*no, 1), Error::Ok) << last_error_message();
  EXPECT_EQ(method.execute(), Error::InvalidProgram);
  EXPECT_NE(std::string(last_error_message()).find("before its et_view ran"), std::string::npos)
      << last_error_message();
}

TEST(Method, SeveralMethodsAndMutableStatePersistAcrossExecutions) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  // "accumulate": state += x, returns state (initial value 10). "scale": y = x * 3.
  MethodSpec acc;
  acc.name = "accumulate";
  TensorSpec state = TensorSpec::planned(ScalarType::Float, {2}, 0);
  state.storage = TensorSpec::Storage::Mutable;
  state.data = float_bytes({10, 10});
  const int32_t s = acc.add(state);
  const int32_t x = acc.add(TensorSpec::planned(ScalarType::Float, {2}, 16));
  const int32_t alpha = acc.add(int64_t{1});
  acc.inputs = {x};
  acc.outputs = {s};
  acc.call("aten::add", "out", {s, x, alpha, s, s});
  acc.arena_sizes = {32};
  MethodSpec scale;
  scale.name = "scale";
  const int32_t three = scale.add(TensorSpec::constant(ScalarType::Float, {}, float_bytes({3})));
  const int32_t sx = scale.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
  const int32_t sy = scale.add(TensorSpec::planned(ScalarType::Float, {2}, 16));
  scale.inputs = {sx};
  scale.outputs = {sy};
  scale.call("aten::mul", "out", {sx, three, sy, sy});
  scale.arena_sizes = {32};
  Loaded program(write(ProgramSpec{{acc, scale}}));
  ASSERT_TRUE(program.program->ok()) << last_error_message();
  ASSERT_EQ((*program).num_methods(), 2u);

  MethodMemory acc_memory(*(*program).method_meta("accumulate"));
  MethodMemory scale_memory(*(*program).method_meta("scale"));
  Result<Method> a = (*program).load_method("accumulate", &acc_memory.manager);
  Result<Method> b = (*program).load_method("scale", &scale_memory.manager);
  ASSERT_TRUE(a.ok() && b.ok()) << last_error_message();
  std::vector<float> in{1, 2};
  Tensor t = float_tensor(in, {2});
  for (float expected0 : {11.0f, 12.0f, 13.0f}) {
    ASSERT_EQ(a->set_input(t, 0), Error::Ok);
    ASSERT_EQ(a->execute(), Error::Ok) << last_error_message();
    EXPECT_EQ(a->get_output(0)->to_tensor().data<float>()[0], expected0);
  }
  ASSERT_EQ(b->set_input(t, 0), Error::Ok);
  ASSERT_EQ(b->execute(), Error::Ok) << last_error_message();
  EXPECT_EQ(b->get_output(0)->to_tensor().data<float>()[1], 6.0f);
  EXPECT_EQ((*program).method_meta("missing").error(), Error::NotFound);
}

TEST(Method, JumpFalseAndMoveFollowTheirConditions) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  // if (!flag) skip the doubling: y = x, then y = y + y only when flag is true.
  for (bool flag : {true, false}) {
    MethodSpec m;
    const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
    const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {2}, 16));
    const int32_t cond = m.add(flag);
    const int32_t alpha = m.add(int64_t{1});
    const int32_t zero = m.add(TensorSpec::constant(ScalarType::Float, {}, float_bytes({0})));
    m.inputs = {x};
    m.outputs = {y};
    m.call("aten::add", "out", {x, zero, alpha, y, y});  // 0: y = x
    m.append<emit::JumpFalseSpec>(cond, 3);              // 1
    m.call("aten::add", "out", {y, y, alpha, y, y});     // 2: y = 2y
    m.arena_sizes = {32};
    Loaded program(write(ProgramSpec{{m}}));
    MethodMemory memory(*(*program).method_meta("forward"));
    Result<Method> method = (*program).load_method("forward", &memory.manager);
    ASSERT_TRUE(method.ok()) << last_error_message();
    std::vector<float> in{1, 2};
    Tensor t = float_tensor(in, {2});
    ASSERT_EQ(method->set_input(t, 0), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    EXPECT_EQ(method->get_output(0)->to_tensor().data<float>()[1], flag ? 4.0f : 2.0f);
  }
}

TEST(Method, AJumpThatLoopsForeverIsStopped) {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  MethodSpec m;
  const int32_t cond = m.add(false);
  m.append<emit::JumpFalseSpec>(cond, 0);
  Loaded program(write(ProgramSpec{{m}}));
  MethodMemory memory(*(*program).method_meta("forward"));
  Result<Method> method = (*program).load_method("forward", &memory.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  EXPECT_EQ(method->execute(), Error::InvalidState);
}

// A test backend that adds its compile spec "bias" (one float) to its single input.
struct AddBiasHandle {
  float bias;
};
class AddBiasBackend final : public Backend {
 public:
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext& context, FreeableBuffer* processed,
                               std::span<const CompileSpec> specs) const override {
    EMBER_CHECK(processed->size() == 4, Error::InvalidProgram, "blob of %zu bytes",
                processed->size());
    auto* h = static_cast<AddBiasHandle*>(context.allocator->allocate(sizeof(AddBiasHandle), 8));
    std::memcpy(&h->bias, processed->data(), 4);
    processed->free();  // copied what it needs
    (void)specs;
    return reinterpret_cast<DelegateHandle*>(h);
  }
  Error execute(BackendExecuteContext& context, DelegateHandle* handle,
                std::span<EValue*> args) const override {
    const uint64_t start = now_ns();
    const float bias = reinterpret_cast<AddBiasHandle*>(handle)->bias;
    const Tensor& in = args[0]->to_tensor();
    Tensor& out = args[1]->to_tensor();
    for (int64_t i = 0; i < in.numel(); ++i) out.data<float>()[i] = in.data<float>()[i] + bias;
    if (context.observer != nullptr) {
      context.observer->on_delegate_step("AddBiasBackend", "add bias", start, now_ns());
    }
    return Error::Ok;
  }
  void destroy(DelegateHandle*) const override { ++destroyed; }
  mutable int destroyed = 0;
};

TEST(Method, DelegateCallsRunTheRegisteredBackend) {
  static AddBiasBackend backend;
  static const bool registered = register_backend("AddBiasBackend", &backend) == Error::Ok;
  ASSERT_TRUE(registered);
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {3}, 0));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {3}, 16));
  m.inputs = {x};
  m.outputs = {y};
  m.delegates.push_back({"AddBiasBackend", float_bytes({0.5f}), {{"note", {1, 2}}}});
  m.append<emit::DelegateCallSpec>(0, std::vector<int32_t>{x, y});
  m.arena_sizes = {32};
  {
    Loaded program(write(ProgramSpec{{m}}));
    ASSERT_TRUE(program.program->ok()) << last_error_message();
    MethodMemory memory(*(*program).method_meta("forward"));
    Result<Method> method = (*program).load_method("forward", &memory.manager);
    ASSERT_TRUE(method.ok()) << last_error_message();
    std::vector<float> in{1, 2, 3};
    Tensor t = float_tensor(in, {3});
    ASSERT_EQ(method->set_input(t, 0), Error::Ok);
    ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
    EXPECT_EQ(method->get_output(0)->to_tensor().data<float>()[2], 3.5f);
  }
  EXPECT_EQ(backend.destroyed, 1);

  m.delegates[0].id = "NoSuchBackend";
  Loaded missing(write(ProgramSpec{{m}}));
  MethodMemory memory(*(*missing).method_meta("forward"));
  EXPECT_EQ((*missing).load_method("forward", &memory.manager).error(), Error::NotFound);
  EXPECT_NE(std::string(last_error_message()).find("backend 'NoSuchBackend' is not registered"),
            std::string::npos)
      << last_error_message();
}

// Records what an ExecutionObserver is told, in order.
struct Recorder final : ExecutionObserver {
  struct Event {
    std::string name;
    int64_t pc;  // -1 for a delegate step
    int delegate;
    uint64_t start, end;
  };
  void on_instruction(size_t pc, const char* name, int delegate, uint64_t start,
                      uint64_t end) override {
    events.push_back({name, static_cast<int64_t>(pc), delegate, start, end});
  }
  void on_delegate_step(const char* backend, const char* step, uint64_t start,
                        uint64_t end) override {
    events.push_back({std::string(backend) + "/" + step, -1, -1, start, end});
  }
  std::vector<Event> events;
};

TEST(Method, AnObserverSeesEveryKernelAndDelegateCallAndTheDelegatesSteps) {
  static AddBiasBackend backend;
  static const bool registered = register_backend("ObservedAddBias", &backend) == Error::Ok;
  ASSERT_TRUE(registered);
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  // y = x + x (pc 0); jump over nothing (pc 1, not reported); z = y + 0.5 in the delegate (pc 2).
  MethodSpec m;
  const int32_t x = m.add(TensorSpec::planned(ScalarType::Float, {3}, 0));
  const int32_t y = m.add(TensorSpec::planned(ScalarType::Float, {3}, 16));
  const int32_t z = m.add(TensorSpec::planned(ScalarType::Float, {3}, 32));
  const int32_t alpha = m.add(int64_t{1});
  const int32_t flag = m.add(true);
  m.inputs = {x};
  m.outputs = {z};
  m.delegates.push_back({"ObservedAddBias", float_bytes({0.5f}), {}});
  m.call("aten::add", "out", {x, x, alpha, y, y});
  m.append<emit::JumpFalseSpec>(flag, 2);
  m.append<emit::DelegateCallSpec>(0, std::vector<int32_t>{y, z});
  m.arena_sizes = {48};
  Loaded program(write(ProgramSpec{{m}}));
  MethodMemory memory(*(*program).method_meta("forward"));
  Result<Method> method = (*program).load_method("forward", &memory.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  std::vector<float> in{1, 2, 3};
  Tensor t = float_tensor(in, {3});
  ASSERT_EQ(method->set_input(t, 0), Error::Ok);

  Recorder recorder;
  method->set_observer(&recorder);
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  ASSERT_EQ(recorder.events.size(), 3u);
  EXPECT_EQ(recorder.events[0].name, "aten::add.out");
  EXPECT_EQ(recorder.events[0].pc, 0);
  EXPECT_EQ(recorder.events[0].delegate, -1);
  EXPECT_EQ(recorder.events[1].name, "AddBiasBackend/add bias");  // before its instruction
  EXPECT_EQ(recorder.events[2].name, "ObservedAddBias");  // the program's id for the backend
  EXPECT_EQ(recorder.events[2].pc, 2);
  EXPECT_EQ(recorder.events[2].delegate, 0);
  for (const Recorder::Event& e : recorder.events) EXPECT_LE(e.start, e.end) << e.name;
  EXPECT_LE(recorder.events[0].end, recorder.events[2].start);
  EXPECT_LE(recorder.events[2].start, recorder.events[1].start);  // the step is inside the call
  EXPECT_LE(recorder.events[1].end, recorder.events[2].end);
  EXPECT_EQ(method->get_output(0)->to_tensor().data<float>()[2], 6.5f);

  method->set_observer(nullptr);  // off: nothing more is reported
  ASSERT_EQ(method->execute(), Error::Ok) << last_error_message();
  EXPECT_EQ(recorder.events.size(), 3u);
}

}  // namespace
}  // namespace ember::testing
