// The ZIP reader and the .pt2 translation on archives built here: what they accept, what they
// refuse and with which message, and that no truncation or flipped byte crashes them.
// compiler/import/pt2_test.py checks real archives from torch.export.save against eager PyTorch.
#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler/import/pt2.h"
#include "compiler/import/zip.h"

namespace ember::importer {
namespace {

using json = nlohmann::json;
using Bytes = std::vector<uint8_t>;

void put(Bytes& out, uint64_t v, int width) {
  for (int i = 0; i < width; ++i) out.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

struct Entry {
  std::string name;
  std::string data;
  uint16_t method = 0;
};

// A ZIP as torch.export.save writes one (stored entries, a padded local extra field); with
// `zip64`, the end record is saturated and a ZIP64 record and locator carry the real values.
Bytes make_zip(const std::vector<Entry>& entries, bool zip64 = false) {
  Bytes out;
  std::vector<uint64_t> offsets;
  for (const Entry& e : entries) {
    offsets.push_back(out.size());
    const std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(e.data.data()),
                                        e.data.size());
    put(out, 0x04034b50, 4);
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, e.method, 2);
    put(out, 0, 4);
    put(out, crc32(data), 4);
    put(out, e.data.size(), 4);
    put(out, e.data.size(), 4);
    put(out, e.name.size(), 2);
    put(out, 4, 2);  // extra: an unknown 0-byte field, as alignment padding
    out.insert(out.end(), e.name.begin(), e.name.end());
    put(out, 0x4246, 2);
    put(out, 0, 2);
    out.insert(out.end(), data.begin(), data.end());
  }
  const uint64_t cd = out.size();
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const std::span<const uint8_t> data(reinterpret_cast<const uint8_t*>(e.data.data()),
                                        e.data.size());
    put(out, 0x02014b50, 4);
    put(out, 20, 2);
    put(out, 20, 2);
    put(out, 0, 2);
    put(out, e.method, 2);
    put(out, 0, 4);
    put(out, crc32(data), 4);
    put(out, e.data.size(), 4);
    put(out, e.data.size(), 4);
    put(out, e.name.size(), 2);
    put(out, zip64 ? 12 : 0, 2);
    put(out, 0, 2);
    put(out, 0, 2);
    put(out, 0, 2);
    put(out, 0, 4);
    put(out, zip64 ? 0xFFFFFFFF : offsets[i], 4);
    out.insert(out.end(), e.name.begin(), e.name.end());
    if (zip64) {
      put(out, 0x0001, 2);
      put(out, 8, 2);
      put(out, offsets[i], 8);
    }
  }
  const uint64_t cd_size = out.size() - cd;
  if (zip64) {
    const uint64_t record = out.size();
    put(out, 0x06064b50, 4);
    put(out, 44, 8);
    put(out, 45, 2);
    put(out, 45, 2);
    put(out, 0, 4);
    put(out, 0, 4);
    put(out, entries.size(), 8);
    put(out, entries.size(), 8);
    put(out, cd_size, 8);
    put(out, cd, 8);
    put(out, 0x07064b50, 4);
    put(out, 0, 4);
    put(out, record, 8);
    put(out, 1, 4);
  }
  put(out, 0x06054b50, 4);
  put(out, 0, 2);
  put(out, 0, 2);
  put(out, zip64 ? 0xFFFF : entries.size(), 2);
  put(out, zip64 ? 0xFFFF : entries.size(), 2);
  put(out, zip64 ? 0xFFFFFFFF : cd_size, 4);
  put(out, zip64 ? 0xFFFFFFFF : cd, 4);
  put(out, 0, 2);
  return out;
}

std::shared_ptr<const Bytes> share(Bytes b) { return std::make_shared<const Bytes>(std::move(b)); }

std::string text_of(std::span<const uint8_t> s) {
  return std::string(reinterpret_cast<const char*>(s.data()), s.size());
}

TEST(Zip, ReadsStoredEntries) {
  for (bool zip64 : {false, true}) {
    auto z = ZipArchive::open(share(make_zip({{"m/a.txt", "hello"}, {"m/b", ""}}, zip64)));
    ASSERT_TRUE(z.ok()) << z.status().message();
    ASSERT_EQ(z->entries().size(), 2u);
    ASSERT_NE(z->find("m/a.txt"), nullptr);
    EXPECT_EQ(text_of(z->find("m/a.txt")->data), "hello");
    EXPECT_TRUE(z->find("m/b")->data.empty());
    EXPECT_EQ(z->find("m/c"), nullptr);
  }
}

TEST(Zip, Crc32OfKnownText) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32({reinterpret_cast<const uint8_t*>(s.data()), s.size()}), 0xCBF43926u);
}

TEST(Zip, RefusesACompressedEntryNamingIt) {
  auto z = ZipArchive::open(share(make_zip({{"m/ok", "x"}, {"m/deflated", "abc", 8}})));
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("'m/deflated' is compressed (method 8)"), std::string::npos)
      << z.status().message();
}

TEST(Zip, RefusesABadCrcNamingTheEntry) {
  Bytes zip = make_zip({{"m/data", "payload"}});
  // The payload follows the local header (30 bytes), the name and the 4-byte extra field.
  zip[30 + 6 + 4] ^= 0x01;
  auto z = ZipArchive::open(share(zip));
  ASSERT_FALSE(z.ok());
  EXPECT_NE(z.status().message().find("'m/data': CRC-32 mismatch"), std::string::npos)
      << z.status().message();
}

TEST(Zip, RefusesDuplicateNamesAndNonZipData) {
  auto dup = ZipArchive::open(share(make_zip({{"m/a", "1"}, {"m/a", "2"}})));
  ASSERT_FALSE(dup.ok());
  EXPECT_NE(dup.status().message().find("appears twice"), std::string::npos);
  auto junk = ZipArchive::open(share(Bytes(100, 7)));
  ASSERT_FALSE(junk.ok());
  EXPECT_NE(junk.status().message().find("not a ZIP archive"), std::string::npos);
}

TEST(Zip, TruncatedAtEveryLengthIsAnErrorNotACrash) {
  const Bytes zip = make_zip({{"m/a", "some bytes"}, {"m/b", "more bytes here"}});
  for (size_t n = 0; n < zip.size(); ++n) {
    auto z = ZipArchive::open(share(Bytes(zip.begin(), zip.begin() + static_cast<long>(n))));
    EXPECT_FALSE(z.ok()) << "length " << n;
  }
}

TEST(Zip, FlippedCentralDirectoryBytesNeverCrash) {
  for (bool zip64 : {false, true}) {
    const Bytes zip = make_zip({{"m/a", "some bytes"}, {"m/b", "more"}}, zip64);
    const size_t cd = 2 * 30 + 2 * 3 + 2 * 4 + 10 + 4;  // after both local entries
    for (size_t i = cd; i < zip.size(); ++i) {
      for (int mask : {0x01, 0x80, 0xFF}) {
        Bytes bad = zip;
        bad[i] = static_cast<uint8_t>(bad[i] ^ mask);
        auto z = ZipArchive::open(share(bad));
        // Either refused, or every entry still lies inside the buffer.
        if (!z.ok()) continue;
        for (const ZipEntry& e : z->entries()) {
          EXPECT_GE(e.data.data(), z->bytes()->data());
          EXPECT_LE(e.data.data() + e.data.size(), z->bytes()->data() + z->bytes()->size());
        }
      }
    }
  }
}

// ---- .pt2 -----------------------------------------------------------------------------------

json meta(std::vector<int64_t> sizes) {
  json s = json::array(), st = json::array();
  int64_t stride = 1;
  std::vector<int64_t> strides(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= sizes[d];
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    s.push_back({{"as_int", sizes[d]}});
    st.push_back({{"as_int", strides[d]}});
  }
  return {{"dtype", 7},
          {"sizes", s},
          {"requires_grad", false},
          {"device", {{"type", "cpu"}, {"index", nullptr}}},
          {"strides", st},
          {"storage_offset", {{"as_int", 0}}},
          {"layout", 7}};
}

json tensor_arg(const std::string& name) { return {{"as_tensor", {{"name", name}}}}; }

// relu(x) + w, with w a parameter stored in data/weights/weight_0.
json model_json() {
  json nodes = json::array();
  nodes.push_back({{"target", "torch.ops.aten.relu.default"},
                   {"inputs", {{{"name", "self"}, {"arg", tensor_arg("x")}, {"kind", 1}}}},
                   {"outputs", {tensor_arg("relu")}},
                   {"metadata", {{"nn_module_stack", "L__self__,,m.M"}}},
                   {"name", "relu"}});
  nodes.push_back({{"target", "torch.ops.aten.add.Tensor"},
                   {"inputs",
                    {{{"name", "self"}, {"arg", tensor_arg("relu")}, {"kind", 1}},
                     {{"name", "other"}, {"arg", tensor_arg("p_w")}, {"kind", 1}}}},
                   {"outputs", {tensor_arg("add")}},
                   {"metadata", json::object()},
                   {"name", "add"}});
  json graph = {{"inputs", {tensor_arg("p_w"), tensor_arg("x")}},
                {"outputs", {tensor_arg("add")}},
                {"nodes", nodes},
                {"tensor_values",
                 {{"p_w", meta({4})}, {"x", meta({4})}, {"relu", meta({4})}, {"add", meta({4})}}},
                {"sym_int_values", json::object()},
                {"sym_bool_values", json::object()}};
  json signature = {{"input_specs",
                     {{{"parameter", {{"arg", {{"name", "p_w"}}}, {"parameter_name", "w"}}}},
                      {{"user_input", {{"arg", tensor_arg("x")}}}}}},
                    {"output_specs", {{{"user_output", {{"arg", tensor_arg("add")}}}}}}};
  return {{"graph_module",
           {{"graph", graph}, {"signature", signature}, {"module_call_graph", json::array()}}},
          {"opset_version", {{"aten", 10}}},
          {"range_constraints", json::object()},
          {"schema_version", {{"major", 8}, {"minor", 20}}},
          {"verifiers", {"ATEN"}},
          {"torch_version", "2.15.0"}};
}

std::string weight_bytes() {
  const float w[4] = {1.0f, -2.0f, 3.5f, 0.25f};
  return std::string(reinterpret_cast<const char*>(w), sizeof(w));
}

std::vector<Entry> archive_entries(const json& model, const std::string& version = "0") {
  json weights = {{"config",
                   {{"w",
                     {{"path_name", "weight_0"},
                      {"is_param", true},
                      {"use_pickle", false},
                      {"tensor_meta", meta({4})}}}}}};
  return {{"m/data/weights/weight_0", weight_bytes()},
          {"m/data/weights/model_weights_config.json", weights.dump()},
          {"m/data/constants/model_constants_config.json", R"({"config": {}})"},
          {"m/models/model.json", model.dump()},
          {"m/archive_format", "pt2"},
          {"m/archive_version", version},
          {"m/byteorder", "little"}};
}

ir::StatusOr<std::unique_ptr<ir::Program>> import_entries(const std::vector<Entry>& entries) {
  return import_pt2(share(make_zip(entries)));
}

TEST(Pt2, ImportsAProgramWithItsWeights) {
  auto p = import_entries(archive_entries(model_json()));
  ASSERT_TRUE(p.ok()) << p.status().message();
  const ir::Program& program = **p;
  ASSERT_EQ(program.graph().inputs().size(), 2u);
  EXPECT_EQ(program.input_spec(0).kind, ir::InputKind::Parameter);
  EXPECT_EQ(program.input_spec(0).target, "w");
  EXPECT_EQ(program.input_spec(1).kind, ir::InputKind::UserInput);
  size_t nodes = 0;
  for (const ir::Node* n : program.graph().nodes()) {
    ++nodes;
    if (n->op() == "aten::relu") {
      EXPECT_TRUE(n->module_stack().empty());
    }
  }
  EXPECT_EQ(nodes, 2u);
  const ir::Weight* w = program.find_weight("w");
  ASSERT_NE(w, nullptr);
  ASSERT_EQ(w->nbytes, 16u);
  EXPECT_EQ(std::memcmp(w->storage->data() + w->offset, weight_bytes().data(), 16), 0);
}

TEST(Pt2, RefusesAnotherSchemaMajorNamingBothVersions) {
  json model = model_json();
  model["schema_version"]["major"] = 9;
  auto p = import_entries(archive_entries(model));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("schema version 9.20"), std::string::npos)
      << p.status().message();
  EXPECT_NE(p.status().message().find("schema major version 8"), std::string::npos);
}

TEST(Pt2, RefusesAnotherArchiveVersion) {
  auto p = import_entries(archive_entries(model_json(), "7"));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("archive version '7'"), std::string::npos)
      << p.status().message();
}

TEST(Pt2, ListsEveryOpWithoutASchemaAndSuggestsDecomposing) {
  json model = model_json();
  auto& nodes = model["graph_module"]["graph"]["nodes"];
  nodes[0]["target"] = "torch.ops.aten.frobnicate.default";
  nodes[1]["target"] = "torch.ops.mylib.custom.default";
  auto p = import_entries(archive_entries(model));
  ASSERT_FALSE(p.ok());
  const std::string m = p.status().message();
  EXPECT_NE(m.find("aten::frobnicate.default"), std::string::npos) << m;
  EXPECT_NE(m.find("torch.ops.mylib.custom.default"), std::string::npos) << m;
  EXPECT_NE(m.find("run_decompositions"), std::string::npos) << m;
}

TEST(Pt2, RefusesUnsupportedArgumentKindsAndMissingWeights) {
  json model = model_json();
  model["graph_module"]["graph"]["nodes"][0]["inputs"][0]["arg"] = {{"as_custom_obj", json{}}};
  auto p = import_entries(archive_entries(model));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("argument kind 'as_custom_obj'"), std::string::npos)
      << p.status().message();

  std::vector<Entry> entries = archive_entries(model_json());
  entries.erase(entries.begin());  // data/weights/weight_0
  auto q = import_entries(entries);
  ASSERT_FALSE(q.ok());
  EXPECT_NE(q.status().message().find("'m/data/weights/weight_0' is missing"), std::string::npos)
      << q.status().message();
}

TEST(Pt2, RefusesAnUnboundedDynamicDim) {
  json model = model_json();
  model["range_constraints"] = {{"s0", {{"min_val", 2}, {"max_val", nullptr}}}};
  auto p = import_entries(archive_entries(model));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("no upper bound"), std::string::npos);
}

TEST(Pt2, ReadsSymbolicSizes) {
  json model = model_json();
  model["range_constraints"] = {{"s0", {{"min_val", 1}, {"max_val", 8}}}};
  const json sym = {{"as_expr",
                     {{"expr_str", "Mul(Integer(2), Symbol('s0', positive=True, integer=True))"},
                      {"hint", {{"as_int", 4}}}}}};
  for (const char* v : {"x", "relu", "add"})
    model["graph_module"]["graph"]["tensor_values"][v]["sizes"][0] = sym;
  model["graph_module"]["graph"]["nodes"][1]["inputs"][1]["arg"] = tensor_arg("x");
  auto p = import_entries(archive_entries(model));
  ASSERT_TRUE(p.ok()) << p.status().message();
  ASSERT_EQ((*p)->symbols.size(), 1u);
  EXPECT_EQ((*p)->symbols[0].name, "s0");
  const ir::Dim& d = (*p)->graph().inputs()[1]->tensor_type().shape[0];
  EXPECT_EQ(d.expr, "2*s0");
  EXPECT_EQ(d.value, 16);
}

// ---- wrappers (contract C5) --------------------------------------------------------------------

json aten_node(const std::string& op, const std::string& a, const std::string& b,
               const std::string& out) {
  return {{"target", "torch.ops.aten." + op + ".Tensor"},
          {"inputs",
           {{{"name", "self"}, {"arg", tensor_arg(a)}, {"kind", 1}},
            {{"name", "other"}, {"arg", tensor_arg(b)}, {"kind", 1}}}},
          {"outputs", {tensor_arg(out)}},
          {"name", out}};
}

json positional(const json& arg) { return {{"name", ""}, {"arg", arg}, {"kind", 1}}; }

// A body graph: inputs named `names`, output sub(names[0], names[1]) (not symmetric, so a
// binding by name instead of position shows).
json sub_body(const std::vector<std::string>& names) {
  json values = {{"r", meta({4})}};
  json inputs = json::array();
  for (const std::string& n : names) {
    values[n] = meta({4});
    inputs.push_back(tensor_arg(n));
  }
  return {{"name", "submod_1"},
          {"graph",
           {{"inputs", inputs},
            {"outputs", {tensor_arg("r")}},
            {"nodes", {aten_node("sub", names[0], names[1], "r")}},
            {"tensor_values", values}}}};
}

// model_json() with inputs p_w, x, y and the nodes w = target(leading..., body, operands...)
// and add(w, p_w).
json wrapped_model(const std::string& target, const json& leading, const json& body,
                   const std::vector<std::string>& operands) {
  json model = model_json();
  json& graph = model["graph_module"]["graph"];
  json inputs = json::array();
  for (const json& a : leading) inputs.push_back(positional(a));
  inputs.push_back(positional({{"as_graph", body}}));
  for (const std::string& o : operands) inputs.push_back(positional(tensor_arg(o)));
  json wrapper = {
      {"target", target}, {"inputs", inputs}, {"outputs", {tensor_arg("w")}}, {"name", "wrap"}};
  graph["nodes"] = {wrapper, aten_node("add", "w", "p_w", "add")};
  graph["inputs"] = {tensor_arg("p_w"), tensor_arg("x"), tensor_arg("y")};
  graph["tensor_values"] = {
      {"p_w", meta({4})}, {"x", meta({4})}, {"y", meta({4})}, {"w", meta({4})}, {"add", meta({4})}};
  json& specs = model["graph_module"]["signature"]["input_specs"];
  specs.push_back({{"user_input", {{"arg", tensor_arg("y")}}}});
  return model;
}

json set_grad(bool enabled) { return json::array({{{"as_bool", enabled}}}); }

// The imported graph's sub node: its self and other as indexes of the graph's inputs.
std::pair<int, int> sub_operands(const ir::Program& program) {
  const auto& inputs = program.graph().inputs();
  auto index = [&](const ir::Arg* a) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (a != nullptr && a->kind() == ir::ArgKind::Value && a->as_value() == inputs[i])
        return static_cast<int>(i);
    return -1;
  };
  for (const ir::Node* n : program.graph().nodes()) {
    if (n->op() == "aten::sub") return {index(n->arg("self")), index(n->arg("other"))};
  }
  return {-2, -2};
}

// C5 test 1: the body's inputs are named x, y and the wrapper is called with (y, x): the body's
// x is the program's y.
TEST(Pt2Wrappers, BodyInputsBindByPositionNotName) {
  json model = wrapped_model("torch.ops.higher_order.wrap_with_set_grad_enabled", set_grad(false),
                             sub_body({"x", "y"}), {"y", "x"});
  auto p = import_entries(archive_entries(model));
  ASSERT_TRUE(p.ok()) << p.status().message();
  // Inputs: p_w 0, x 1, y 2. sub(body x, body y) = sub(y, x).
  EXPECT_EQ(sub_operands(**p), std::make_pair(2, 1));
  for (const ir::Node* n : (*p)->graph().nodes()) {
    EXPECT_EQ(n->op().find("higher_order"), std::string::npos) << "the wrapper is inlined";
    if (n->op() == "aten::add") {  // add(w, p_w): w is the body's output, sub's result
      const ir::Arg* self = n->arg("self");
      ASSERT_NE(self, nullptr);
      ASSERT_NE(self->as_value()->producer(), nullptr);
      EXPECT_EQ(self->as_value()->producer()->op(), "aten::sub");
    }
  }
  // Body inputs named unlike anything outside bind the same way.
  json renamed = wrapped_model("torch.ops.higher_order.wrap_with_set_grad_enabled", set_grad(true),
                               sub_body({"arg1_1", "arg0_1"}), {"x", "y"});
  auto q = import_entries(archive_entries(renamed));
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(sub_operands(**q), std::make_pair(1, 2));
}

// C5 test 2: the same wrapper called with (x, x).
TEST(Pt2Wrappers, OneOperandTwice) {
  json model = wrapped_model("torch.ops.higher_order.wrap_with_set_grad_enabled", set_grad(false),
                             sub_body({"x", "y"}), {"x", "x"});
  auto p = import_entries(archive_entries(model));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(sub_operands(**p), std::make_pair(1, 1));
}

json autocast_args(bool enabled) {
  return json::array({{{"as_string", "cpu"}},
                      {{"as_scalar_type", 13}},  // bfloat16
                      {{"as_bool", enabled}},
                      {{"as_bool", false}}});
}

TEST(Pt2Wrappers, DisabledAutocastIsInlinedAnEnabledOneRefused) {
  const std::string target = "torch.ops.higher_order.wrap_with_autocast";
  auto p = import_entries(archive_entries(
      wrapped_model(target, autocast_args(false), sub_body({"a", "b"}), {"y", "x"})));
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(sub_operands(**p), std::make_pair(2, 1));

  auto q = import_entries(archive_entries(
      wrapped_model(target, autocast_args(true), sub_body({"a", "b"}), {"y", "x"})));
  ASSERT_FALSE(q.ok());
  const std::string m = q.status().message();
  EXPECT_NE(m.find("node wrap (torch.ops.higher_order.wrap_with_autocast)"), std::string::npos)
      << m;
  EXPECT_NE(m.find("torch.autocast('cpu', bfloat16)"), std::string::npos) << m;
  EXPECT_NE(m.find("run_decompositions"), std::string::npos) << m;
}

TEST(Pt2Wrappers, NestedWrappersAreInlined) {
  // set_grad(false) { set_grad(true) { sub(a, b) } } called with (y, x).
  json inner = {{"target", "torch.ops.higher_order.wrap_with_set_grad_enabled"},
                {"inputs",
                 {positional({{"as_bool", true}}), positional({{"as_graph", sub_body({"b", "a"})}}),
                  positional(tensor_arg("a")), positional(tensor_arg("b"))}},
                {"outputs", {tensor_arg("inner_out")}},
                {"name", "inner"}};
  json outer_body = {
      {"name", "submod_0"},
      {"graph",
       {{"inputs", {tensor_arg("a"), tensor_arg("b")}},
        {"outputs", {tensor_arg("inner_out")}},
        {"nodes", {inner}},
        {"tensor_values", {{"a", meta({4})}, {"b", meta({4})}, {"inner_out", meta({4})}}}}}};
  auto p = import_entries(
      archive_entries(wrapped_model("torch.ops.higher_order.wrap_with_set_grad_enabled",
                                    set_grad(false), outer_body, {"y", "x"})));
  ASSERT_TRUE(p.ok()) << p.status().message();
  // Outer body: a = y, b = x; inner body (named b, a) gets (a, b) = (y, x): sub(y, x).
  EXPECT_EQ(sub_operands(**p), std::make_pair(2, 1));
}

TEST(Pt2Wrappers, MalformedWrappersAreRefused) {
  const std::string target = "torch.ops.higher_order.wrap_with_set_grad_enabled";
  auto expect_refused = [](const json& model, const std::string& needle) {
    auto p = import_entries(archive_entries(model));
    ASSERT_FALSE(p.ok());
    EXPECT_NE(p.status().message().find(needle), std::string::npos) << p.status().message();
  };
  expect_refused(wrapped_model(target, set_grad(false), sub_body({"a", "b"}), {"x"}),
                 "the body takes 2 inputs but is given 1 operands");
  expect_refused(wrapped_model(target, set_grad(false), sub_body({"a", "b"}), {"x", "nope"}),
                 "unknown value 'nope'");
  json model = wrapped_model(target, set_grad(false), sub_body({"a", "b"}), {"x", "y"});
  model["graph_module"]["graph"]["nodes"][0]["outputs"].push_back(tensor_arg("w2"));
  expect_refused(model, "the wrapper has 2 outputs but its body 1");
  json no_graph = wrapped_model(target, set_grad(false), sub_body({"a", "b"}), {"x", "y"});
  no_graph["graph_module"]["graph"]["nodes"][0]["inputs"][1]["arg"] = {{"as_int", 3}};
  expect_refused(no_graph, "expected a graph");
}

// Truncations and flipped bytes anywhere in a whole archive: an error or a program, never a crash.
TEST(Pt2, MalformedArchivesNeverCrash) {
  const Bytes zip = make_zip(archive_entries(model_json()));
  for (size_t n = 0; n < zip.size(); n += 7) {
    auto p = import_pt2(share(Bytes(zip.begin(), zip.begin() + static_cast<long>(n))));
    EXPECT_FALSE(p.ok());
  }
  for (size_t i = 0; i < zip.size(); i += 3) {
    Bytes bad = zip;
    bad[i] ^= 0x5A;
    (void)import_pt2(share(bad));
  }
  // The same for flipped bytes inside model.json, past the CRC check (recomputed here), of the
  // plain model and of one with a wrapper to inline.
  const json wrapped = wrapped_model("torch.ops.higher_order.wrap_with_autocast",
                                     autocast_args(false), sub_body({"a", "b"}), {"y", "x"});
  for (const json& model : {model_json(), wrapped}) {
    const std::string text = model.dump();
    for (size_t i = 0; i < text.size(); i += 5) {
      std::string bad = text;
      bad[i] = static_cast<char>(bad[i] ^ 0x21);
      std::vector<Entry> entries = archive_entries(model);
      entries[3].data = bad;
      (void)import_entries(entries);
    }
  }
}

}  // namespace
}  // namespace ember::importer
