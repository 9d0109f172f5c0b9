#include "compiler/import/exported_program.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace ember::importer {
namespace {

using nlohmann::json;

// ---------------------------------------------------------------------------------------------
// Hand-built files: the format without PyTorch.

void put_u32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(std::vector<uint8_t>& b, size_t at, uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<uint8_t>(v >> (8 * i));
}

std::vector<uint8_t> make_file(const json& doc, const std::vector<uint8_t>& data) {
  std::string text = doc.dump();
  size_t data_offset = (kHeaderSize + text.size() + kAlignment - 1) / kAlignment * kAlignment;
  std::vector<uint8_t> b(data_offset + data.size(), 0);
  std::memcpy(b.data(), kMagic, sizeof(kMagic));
  put_u32(b, 8, kFormatVersion);
  put_u32(b, 12, kHeaderSize);
  put_u64(b, 16, kHeaderSize);
  put_u64(b, 24, text.size());
  put_u64(b, 32, data_offset);
  put_u64(b, 40, data.size());
  std::memcpy(b.data() + kHeaderSize, text.data(), text.size());
  if (!data.empty()) std::memcpy(b.data() + data_offset, data.data(), data.size());
  return b;
}

json tensor_def(const std::string& name, json shape) {
  json order = json::array();
  for (size_t i = 0; i < shape.size(); ++i) order.push_back(i);
  return {{"name", name},
          {"type", "tensor"},
          {"dtype", "float32"},
          {"shape", shape},
          {"dim_order", order}};
}

// x + w, with w a parameter stored as [1, 2].
json small_doc() {
  return {
      {"format", "ember.exported_program"},
      {"version", 1},
      {"symbols", json::array()},
      {"signature",
       {{"inputs",
         {{{"kind", "parameter"}, {"value", "p_w"}, {"target", "w"}},
          {{"kind", "user_input"}, {"value", "x"}}}},
        {"outputs", {{{"kind", "user_output"}, {"value", "add"}}}},
        {"mutated_buffers", json::array()}}},
      {"operators", json::object()},
      {"graph",
       {{"inputs", {tensor_def("p_w", {2}), tensor_def("x", {2})}},
        {"nodes",
         {{{"name", "add"},
           {"op", "aten::add"},
           {"overload", "Tensor"},
           {"args",
            {{{"name", "self"}, {"value", {{"value", "x"}}}},
             {{"name", "other"}, {"value", {{"value", "p_w"}}}},
             {{"name", "alpha"}, {"value", {{"int", 1}}}}}},
           {"outputs", {tensor_def("add", {2})}},
           {"module_stack", {{{"path", "inner"}, {"type", "Adder"}}}}}}},
        {"outputs", {"add"}}}},
      {"tensors",
       {{{"name", "w"}, {"dtype", "float32"}, {"shape", {2}}, {"offset", 0}, {"nbytes", 8}}}},
  };
}

std::vector<uint8_t> small_data() {
  float w[2] = {1.0f, 2.0f};
  std::vector<uint8_t> d(sizeof(w));
  std::memcpy(d.data(), w, sizeof(w));
  return d;
}

ir::StatusOr<std::unique_ptr<ir::Program>> import_bytes(std::vector<uint8_t> bytes) {
  return import_exported_program(std::make_shared<const std::vector<uint8_t>>(std::move(bytes)));
}

TEST(Import, SmallHandBuiltFile) {
  auto p = import_bytes(make_file(small_doc(), small_data()));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ir::Program& program = **p;
  EXPECT_EQ(ir::print_program(program, {.weight_data = true}),
            "weight \"w\": f32[2] = hex\"0000803f00000040\"\n"
            "graph(\n"
            "    %p_w: f32[2] parameter \"w\",\n"
            "    %x: f32[2]\n"
            ") {\n"
            "  %add: f32[2] = aten::add.Tensor(self=%x, other=%p_w, alpha=1) "
            "@[\"inner\": \"Adder\"]\n"
            "  return (%add)\n"
            "}\n");
  ASSERT_EQ(program.weights.size(), 1u);
  float w[2];
  std::memcpy(w, program.weights[0].bytes().data(), sizeof(w));
  EXPECT_EQ(w[0], 1.0f);
  EXPECT_EQ(w[1], 2.0f);
}

TEST(Import, ConstantMethods) {
  json doc = small_doc();
  doc["constant_methods"] = {{{"name", "get_max_seq_len"}, {"value", 128}},
                             {{"name", "get_eos_ids"}, {"value", {2, 7}}},
                             {{"name", "use_kv_cache"}, {"value", true}},
                             {{"name", "scale"}, {"value", 0.5}},
                             {{"name", "label"}, {"value", "tiny"}},
                             {{"name", "none_yet"}, {"value", json::array()}}};
  auto p = import_bytes(make_file(doc, small_data()));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const std::vector<ir::ConstantMethod>& m = (*p)->constant_methods;
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0].name, "get_max_seq_len");
  EXPECT_FALSE(m[0].is_list);
  EXPECT_EQ(m[0].values, (std::vector<ir::ConstantMethod::Scalar>{int64_t{128}}));
  EXPECT_TRUE(m[1].is_list);
  EXPECT_EQ(m[1].values, (std::vector<ir::ConstantMethod::Scalar>{int64_t{2}, int64_t{7}}));
  EXPECT_EQ(m[2].values, (std::vector<ir::ConstantMethod::Scalar>{true}));
  EXPECT_EQ(m[3].values, (std::vector<ir::ConstantMethod::Scalar>{0.5}));
  EXPECT_EQ(m[4].values, (std::vector<ir::ConstantMethod::Scalar>{std::string("tiny")}));
  EXPECT_TRUE(m[5].is_list);
  EXPECT_TRUE(m[5].values.empty());
  // A file without the field has none.
  auto plain = import_bytes(make_file(small_doc(), small_data()));
  ASSERT_TRUE(plain.ok());
  EXPECT_TRUE((*plain)->constant_methods.empty());
}

struct Broken {
  const char* name;
  std::function<void(json&, std::vector<uint8_t>&)> edit;
  const char* message;  // a part of the expected error
};

void PrintTo(const Broken& b, std::ostream* os) { *os << b.name; }

class Malformed : public testing::TestWithParam<Broken> {};

TEST_P(Malformed, IsRefusedWithAClearError) {
  json doc = small_doc();
  std::vector<uint8_t> data = small_data();
  GetParam().edit(doc, data);
  auto p = import_bytes(make_file(doc, data));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find(GetParam().message), std::string::npos)
      << p.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Import, Malformed,
    testing::Values(
        Broken{"WrongFormat", [](json& d, auto&) { d["format"] = "x"; }, "format"},
        Broken{"UnknownValue",
               [](json& d, auto&) { d["graph"]["nodes"][0]["args"][0]["value"]["value"] = "nope"; },
               "graph.nodes[0] (add, aten::add.Tensor).args[0]: unknown value 'nope'"},
        Broken{"WrongArgumentName",
               [](json& d, auto&) { d["graph"]["nodes"][0]["args"][1]["name"] = "y"; },
               "argument 1 is 'y', the schema says 'other'"},
        Broken{"MissingArgument", [](json& d, auto&) { d["graph"]["nodes"][0]["args"].erase(2); },
               "2 arguments, the schema"},
        Broken{"BadDType", [](json& d, auto&) { d["graph"]["inputs"][1]["dtype"] = "float33"; },
               "unknown dtype 'float33'"},
        Broken{"DimOrderNotAPermutation",
               [](json& d, auto&) { d["graph"]["inputs"][1]["dim_order"] = {3}; },
               "dim_order is not a permutation"},
        Broken{"UnknownSymbol",
               [](json& d, auto&) {
                 d["graph"]["inputs"][1]["shape"][0] = {{"expr", "b"}, {"max", 4}};
               },
               "uses 'b', which is not a symbol"},
        Broken{"TensorOutOfRange", [](json& d, auto&) { d["tensors"][0]["offset"] = 64; },
               "outside the data region"},
        Broken{"TensorSizeMismatch", [](json& d, auto&) { d["tensors"][0]["nbytes"] = 4; },
               "4 bytes for a f32[2]"},
        Broken{"MissingWeight", [](json& d, auto&) { d["tensors"] = json::array(); },
               "parameter 'w': has no data in the file"},
        Broken{"WeightShapeMismatch",
               [](json& d, auto&) { d["graph"]["inputs"][0]["shape"] = {1}; },
               "the stored tensor 'w' is f32[2]"},
        Broken{"DuplicateValue",
               [](json& d, auto&) { d["graph"]["nodes"][0]["outputs"][0]["name"] = "x"; },
               "value 'x' is defined twice"},
        Broken{"InputNotInSignature", [](json& d, auto&) { d["signature"]["inputs"].erase(1); },
               "input 'x' is not in the signature"},
        Broken{"OutputSignatureMismatch",
               [](json& d, auto&) { d["signature"]["outputs"][0]["value"] = "x"; },
               "names another value than graph.outputs[0]"},
        Broken{"IntTooLarge",
               [](json& d, auto&) {
                 d["graph"]["nodes"][0]["args"][2]["value"]["int"] = 18446744073709551615ull;
               },
               "int64 range"},
        Broken{"WrongJsonType", [](json& d, auto&) { d["graph"]["nodes"] = "none"; },
               "graph.nodes: expected an array"},
        Broken{"BadOperatorSchema",
               [](json& d, auto&) { d["operators"]["my::op.default"] = "my::op(Tensor"; },
               "operators.my::op.default"},
        Broken{"ConstantMethodNamedForward",
               [](json& d, auto&) {
                 d["constant_methods"] = {{{"name", "forward"}, {"value", 1}}};
               },
               "constant_methods[0]: method 'forward' appears twice"},
        Broken{"ConstantMethodTwice",
               [](json& d, auto&) {
                 d["constant_methods"] = {{{"name", "n"}, {"value", 1}},
                                          {{"name", "n"}, {"value", 2}}};
               },
               "constant_methods[1]: method 'n' appears twice"},
        Broken{"ConstantMethodBadName",
               [](json& d, auto&) {
                 d["constant_methods"] = {{{"name", "2x"}, {"value", 1}}};
               },
               "method name '2x' is not an identifier"},
        Broken{"ConstantMethodNestedList",
               [](json& d, auto&) {
                 d["constant_methods"] = {{{"name", "m"}, {"value", {1, {2}}}}};
               },
               "constant_methods[0].value: expected an integer, a float, a bool, a string"},
        Broken{"ConstantMethodNoValue",
               [](json& d, auto&) {
                 d["constant_methods"] = {{{"name", "m"}}};
               },
               "constant_methods[0]"},
        Broken{"SubgraphIndexOutOfRange",
               [](json& d, auto&) {
                 d["graph"]["nodes"][0]["args"][2]["value"] = {{"graph", 0}};
               },
               "refers to subgraph 0, the node has 0"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(Import, BrokenHeadersAreRefused) {
  std::vector<uint8_t> good = make_file(small_doc(), small_data());
  auto with = [&](auto edit) {
    std::vector<uint8_t> b = good;
    edit(b);
    return import_bytes(std::move(b));
  };
  auto message = [](const auto& p) { return p.ok() ? std::string("ok") : p.status().message(); };
  EXPECT_NE(message(with([](auto& b) { b[0] = 'X'; })).find("not an exported-program"),
            std::string::npos);
  EXPECT_NE(message(with([](auto& b) { put_u32(b, 8, 2); })).find("format version 2"),
            std::string::npos);
  EXPECT_NE(message(with([](auto& b) { put_u64(b, 24, ~uint64_t{0}); })).find("outside the file"),
            std::string::npos);
  EXPECT_NE(message(with([](auto& b) { put_u64(b, 32, 65); })).find("not 64-byte aligned"),
            std::string::npos);
  EXPECT_NE(message(with([](auto& b) { put_u64(b, 32, 1 << 20); })).find("outside the file"),
            std::string::npos);
  EXPECT_NE(message(with([](auto& b) { b[kHeaderSize] = '['; })).find("not valid JSON"),
            std::string::npos);
  EXPECT_NE(message(import_bytes({})).find("fewer than the 64-byte header"), std::string::npos);
}

// Never a crash (the sanitizer build checks memory too): every truncation and many corruptions of
// a valid file give a value or an error.
TEST(Import, TruncatedAndCorruptedFilesNeverCrash) {
  std::vector<uint8_t> good = make_file(small_doc(), small_data());
  for (size_t n = 0; n < good.size(); ++n) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n));
    EXPECT_FALSE(import_bytes(std::move(cut)).ok()) << n;
  }
  uint32_t state = 12345;
  for (int round = 0; round < 3000; ++round) {
    std::vector<uint8_t> bad = good;
    for (int k = 0; k < 3; ++k) {
      state = state * 1103515245u + 12345u;
      size_t at = (state >> 8) % bad.size();
      state = state * 1103515245u + 12345u;
      bad[at] = static_cast<uint8_t>(state >> 16);
    }
    auto p = import_bytes(std::move(bad));
    if (p.ok()) {
      // Whatever was accepted is a consistent program: it prints and parses back.
      std::string text = ir::print_program(**p);
      auto again = ir::parse_program(text);
      EXPECT_TRUE(again.ok()) << again.status().message() << "\n" << text;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Files written by the Python exporter, checked against PyTorch's own view of each model.

class Exported : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    // EMBER_PYTHON is the venv scripts/setup makes: without its torch the test fails, never skips.
    if (std::system(EMBER_PYTHON " -c 'import torch' >/dev/null 2>&1") != 0) {
      export_failed_ = true;
      std::fprintf(stderr, "no PyTorch for %s: run scripts/setup\n", EMBER_PYTHON);
      return;
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("ember-import-test-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
    std::string command =
        "PYTHONPATH=" EMBER_PYTHON_DIR " " EMBER_PYTHON " " EMBER_EXPORT_MODELS " " + dir_.string();
    if (std::system(command.c_str()) != 0) {
      export_failed_ = true;
      return;
    }
    std::ifstream in(dir_ / "expected.json");
    expected_ = json::parse(in, nullptr, false);
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  void SetUp() override {
    ASSERT_FALSE(export_failed_) << "the exporter failed; see the output above";
    ASSERT_FALSE(expected_.is_discarded());
  }

  std::unique_ptr<ir::Program> load(const std::string& model) {
    auto p = import_exported_program_file((dir_ / (model + ".ep")).string());
    EXPECT_TRUE(p.ok()) << p.status().message();
    return p.ok() ? std::move(*p) : nullptr;
  }

  // Every state_dict entry is a weight of PyTorch's dtype, shape and (where given) bytes.
  void expect_state(const ir::Program& p, const json& state) {
    size_t count = 0;
    for (auto it = state.begin(); it != state.end(); ++it, ++count) {
      const ir::Weight* w = p.find_weight(it.key());
      ASSERT_NE(w, nullptr) << it.key();
      EXPECT_EQ(ir::dtype_name(w->type.dtype), it.value()["dtype"].get<std::string>()) << it.key();
      std::vector<int64_t> shape;
      for (const ir::Dim& d : w->type.shape) shape.push_back(d.value);
      EXPECT_EQ(shape, it.value()["shape"].get<std::vector<int64_t>>()) << it.key();
      if (it.value().contains("hex")) {
        static const char kHex[] = "0123456789abcdef";
        std::string hex;
        for (uint8_t b : w->bytes()) {
          hex += kHex[b >> 4];
          hex += kHex[b & 15];
        }
        EXPECT_EQ(hex, it.value()["hex"].get<std::string>()) << it.key();
      }
    }
    EXPECT_EQ(p.weights.size(), count);
  }

  // The imported program's text form is stable: parse(print(p)) prints the same.
  static void expect_text_round_trip(const ir::Program& p) {
    std::string text = ir::print_program(p);
    auto again = ir::parse_program(text);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(ir::print_program(**again), text);
  }

  static inline std::filesystem::path dir_;
  static inline bool export_failed_ = false;
  static inline json expected_;
};

TEST_F(Exported, Mlp) {
  auto p = load("mlp");
  ASSERT_NE(p, nullptr);
  expect_state(*p, expected_["mlp"]["state"]);
  std::vector<std::string> targets;
  for (size_t i = 0; i < p->graph().inputs().size(); ++i) {
    if (p->input_spec(i).kind == ir::InputKind::Parameter)
      targets.push_back(p->input_spec(i).target);
  }
  EXPECT_EQ(targets,
            (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}));
  size_t addmm = 0;
  for (const ir::Node* n : p->graph().nodes()) {
    ASSERT_NE(n->schema(), nullptr) << n->describe();
    if (n->qualified_op() == "aten::addmm.default") {
      ++addmm;
      EXPECT_EQ(n->module_path(), addmm == 1 ? "fc1" : "fc2");
    }
  }
  EXPECT_EQ(addmm, 2u);
  ASSERT_EQ(p->graph().outputs().size(), 1u);
  std::vector<int64_t> shape;
  for (const ir::Dim& d : p->graph().outputs()[0]->tensor_type().shape) shape.push_back(d.value);
  EXPECT_EQ(shape, expected_["mlp"]["output_shapes"][0].get<std::vector<int64_t>>());
  expect_text_round_trip(*p);
}

// torch.export's graph is functional: a write through a view of a buffer is the buffer's new
// value, an output of kind buffer_mutation, computed by a scatter of the written slice.
TEST_F(Exported, WriteThroughAViewOfABufferIsABufferMutation) {
  auto p = load("buffer_view");
  ASSERT_NE(p, nullptr);
  expect_state(*p, expected_["buffer_view"]["state"]);  // still zeros: not the traced result
  EXPECT_EQ(p->mutated_buffers, std::vector<std::string>{"buf"});
  std::vector<std::string> written;
  for (size_t i = 0; i < p->graph().outputs().size(); ++i) {
    if (p->output_spec(i).kind == ir::OutputKind::BufferMutation) {
      written.push_back(p->output_spec(i).target);
      EXPECT_NE(p->graph().outputs()[i]->producer(), nullptr);  // a computed value
    }
  }
  EXPECT_EQ(written, std::vector<std::string>{"buf"});
  for (const ir::Node* n : p->graph().nodes()) {
    ASSERT_NE(n->schema(), nullptr) << n->describe();
    EXPECT_FALSE(n->schema()->is_mutating()) << n->describe();
  }
  expect_text_round_trip(*p);
}

TEST_F(Exported, DynamicBatch) {
  auto p = load("dynamic_mlp");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->symbols.size(), 1u);
  EXPECT_EQ(p->symbols[0], (ir::Symbol{"batch", 1, 8}));
  const ir::Value* x = nullptr;
  for (size_t i = 0; i < p->graph().inputs().size(); ++i) {
    if (p->input_spec(i).kind == ir::InputKind::UserInput)
      x = p->graph().inputs()[i];
    else
      EXPECT_TRUE(p->graph().inputs()[i]->tensor_type().is_static());  // C2
  }
  ASSERT_NE(x, nullptr);
  EXPECT_EQ(ir::to_string(x->type()), "f32[batch<=8, 4]");
  EXPECT_EQ(ir::to_string(p->graph().outputs()[0]->type()), "f32[batch<=8, 3]");
  expect_text_round_trip(*p);
}

TEST_F(Exported, ResNet18) {
  ASSERT_TRUE(expected_.contains("resnet18")) << "the exporter wrote no ResNet-18 (torchvision)";
  auto p = load("resnet18");
  ASSERT_NE(p, nullptr);
  expect_state(*p, expected_["resnet18"]["state"]);
  size_t convolutions = 0;
  for (const ir::Node* n : p->graph().nodes()) {
    if (n->op() == "aten::convolution") ++convolutions;
  }
  EXPECT_EQ(convolutions, 20u);
  std::vector<int64_t> shape;
  for (const ir::Dim& d : p->graph().outputs()[0]->tensor_type().shape) shape.push_back(d.value);
  EXPECT_EQ(shape, expected_["resnet18"]["output_shapes"][0].get<std::vector<int64_t>>());
  expect_text_round_trip(*p);
}

}  // namespace
}  // namespace ember::importer
