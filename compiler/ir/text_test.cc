#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "compiler/ir/parser.h"
#include "compiler/ir/printer.h"

namespace ember::ir {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Golden files are written in the printer's canonical form (comments aside), so text in equals
// text out.
std::string strip_comments(const std::string& text) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] == '#') continue;
    out += line + "\n";
  }
  return out;
}

class Golden : public testing::TestWithParam<std::string> {};

TEST_P(Golden, PrintOfParseIsTheInput) {
  std::string text = read_file(std::filesystem::path(EMBER_IR_TESTDATA) / GetParam());
  ASSERT_FALSE(text.empty()) << GetParam();
  StatusOr<std::unique_ptr<Program>> p = parse_program(text);
  ASSERT_TRUE(p.ok()) << p.status().message();
  std::string printed = print_program(**p, {.weight_data = true});
  EXPECT_EQ(printed, strip_comments(text));
  StatusOr<std::unique_ptr<Program>> again = parse_program(printed);
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(print_program(**again, {.weight_data = true}), printed);
}

INSTANTIATE_TEST_SUITE_P(Text, Golden,
                         testing::Values("mlp.ir", "inplace_view.ir", "cond.ir", "constants.ir"),
                         [](const auto& test) {
                           return test.param.substr(0, test.param.find('.'));
                         });

TEST(Text, ParsedProgramHasStructure) {
  std::string text = read_file(std::filesystem::path(EMBER_IR_TESTDATA) / "inplace_view.ir");
  StatusOr<std::unique_ptr<Program>> parsed = parse_program(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status().message();
  Program& p = **parsed;
  EXPECT_EQ(p.input_spec(0).kind, InputKind::Buffer);
  EXPECT_EQ(p.input_spec(0).target, "buf");
  EXPECT_FALSE(p.input_spec(1).persistent);
  EXPECT_EQ(p.output_spec(1).kind, OutputKind::BufferMutation);
  EXPECT_EQ(p.mutated_buffers, (std::vector<std::string>{"buf", "buf_alias"}));
  Value* buf = p.graph().inputs()[0];
  ASSERT_EQ(buf->users().size(), 1u);
  Node* slice = buf->users()[0];
  EXPECT_TRUE(slice->schema()->is_view());
  Node* add = p.graph().next(p.graph().next(slice));
  EXPECT_EQ(add->qualified_op(), "aten::add_.Tensor");
  EXPECT_EQ(add->schema()->mutated_arguments(), std::vector<size_t>{0});
  EXPECT_EQ(p.find_weight("buf_alias")->alias_of, "buf");
}

TEST(Text, WeightDataIsExact) {
  std::string text = read_file(std::filesystem::path(EMBER_IR_TESTDATA) / "mlp.ir");
  StatusOr<std::unique_ptr<Program>> p = parse_program(text);
  ASSERT_TRUE(p.ok()) << p.status().message();
  const Weight* bias = (*p)->find_weight("fc1.bias");
  ASSERT_NE(bias, nullptr);
  ASSERT_EQ(bias->nbytes, 32u);
  float values[8];
  std::memcpy(values, bias->bytes().data(), sizeof(values));
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[3], 4.0f);
  EXPECT_EQ(values[7], -1.0f);
  EXPECT_FALSE((*p)->find_weight("fc1.weight")->has_data());
  // Without data the weight line carries only the type.
  EXPECT_EQ(print_program(**p).find("hex"), std::string::npos);
}

TEST(Text, FloatsRoundTripExactly) {
  for (double d : {0.1, 1e-05, 1e300, -2.5, 0.0, 3.0, 1.0 / 3.0, 5e-324}) {
    std::string text =
        "graph(\n    %x: f32[]\n) {\n  %y: f32[] = aten::add.Scalar(self=%x, other=" +
        print_arg(Arg::floating(d)) + ", alpha=1)\n  return (%y)\n}\n";
    StatusOr<std::unique_ptr<Program>> p = parse_program(text);
    ASSERT_TRUE(p.ok()) << p.status().message();
    Node* n = *(*p)->graph().nodes().begin();
    EXPECT_EQ(n->arg("other")->as_float(), d);
    EXPECT_EQ(print_program(**p), text);
  }
}

// Whatever the damage, the parser answers with a program or an error (the sanitizer build checks
// memory); and what it accepts is consistent: it prints, and the print parses back the same.
TEST(Text, DamagedTextNeverCrashes) {
  std::string good = read_file(std::filesystem::path(EMBER_IR_TESTDATA) / "constants.ir") +
                     read_file(std::filesystem::path(EMBER_IR_TESTDATA) / "cond.ir");
  const std::string alphabet = "%()[]{}<>=,:.^@\"#\n -0123456789abcefinxz";
  uint32_t state = 7;
  auto next = [&] {
    state = state * 1103515245u + 12345u;
    return state >> 8;
  };
  for (int round = 0; round < 4000; ++round) {
    std::string text = good;
    for (int k = 0; k < 1 + round % 4; ++k) {
      size_t at = next() % text.size();
      switch (next() % 3) {
        case 0:
          text[at] = alphabet[next() % alphabet.size()];
          break;
        case 1:
          text.erase(at, 1 + next() % 8);
          break;
        default:
          text.insert(at, 1, alphabet[next() % alphabet.size()]);
      }
    }
    auto p = parse_program(text);
    if (!p.ok()) {
      EXPECT_EQ(p.status().message().rfind("line ", 0), 0u) << p.status().message();
      continue;
    }
    std::string printed = print_program(**p, {.weight_data = true});
    auto again = parse_program(printed);
    ASSERT_TRUE(again.ok()) << again.status().message() << "\n" << printed;
    EXPECT_EQ(print_program(**again, {.weight_data = true}), printed);
  }
}

struct BadText {
  const char* text;
  const char* error;  // expected prefix of the message: position, then reason
};

void PrintTo(const BadText& b, std::ostream* os) { *os << b.error; }

class Errors : public testing::TestWithParam<BadText> {};

TEST_P(Errors, SayLineAndColumn) {
  StatusOr<std::unique_ptr<Program>> p = parse_program(GetParam().text);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().message().substr(0, std::string(GetParam().error).size()), GetParam().error)
      << p.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Text, Errors,
    testing::Values(
        BadText{"", "line 1, column 1: expected 'sym', 'weight', 'mutated' or 'graph'"},
        BadText{"graph() {\n  return (%y)\n}\n", "line 2, column 11: unknown value %y"},
        BadText{"graph(\n    %x: f32[2]\n) {\n  %y: f32[2] = aten::relu.default(self=%z)\n"
                "  return (%y)\n}\n",
                "line 4, column 40: unknown value %z"},
        BadText{"graph(%x: f33[2]) {\n  return (%x)\n}\n", "line 1, column 11: unknown dtype"},
        BadText{"graph(%x: f32[b<=4]) {\n  return (%x)\n}\n",
                "line 1, column 15: unknown symbol 'b'"},
        BadText{"graph(%x: f32[2], %x: f32[2]) {\n  return (%x)\n}\n",
                "line 1, column 19: value %x is defined twice"},
        BadText{"graph(%x: f32[2, 3]{0, 0}) {\n  return (%x)\n}\n",
                "line 1, column 20: the dim order must be a permutation"},
        BadText{"graph(%x: f32[2]) {\n  %y: f32[2] = relu(self=%x)\n  return (%y)\n}\n",
                "line 2, column 16: expected an op as namespace::name.overload"},
        BadText{"graph(%x: f32[2]) {\n  %y: f32[2] = aten::add.Tensor(self=%x, other=%x, "
                "alpha=99999999999999999999)\n  return (%y)\n}\n",
                "line 2, column 58: bad integer"},
        BadText{
            "graph(%x: f32[2]) {\n  %y: f32[2] = aten::gelu.default(self=%x, approximate=\"a)\n",
            "line 2, column 56: unterminated string"},
        BadText{"weight \"w\": f32[2] = hex\"00\"\ngraph() {\n  return ()\n}\n",
                "line 1, column 25: weight \"w\": 1 bytes of data for f32[2]"},
        BadText{"graph(%x: f32[2]) {\n  %y: f32[2] = higher_order::cond.default(pred=%x, "
                "true_graph=^3, false_graph=^0, operands=[])\n  return (%y)\n}\n",
                "line 2, column 63: ^3 names a subgraph the node does not have"},
        BadText{"graph(%x: f32[2]) {\n  %y: f32[2] = aten::relu.default(self=%x)\n",
                "line 3, column 1: expected 'return'"},
        BadText{"graph() {\n  return ()\n}\nextra", "line 4, column 1: unexpected text"}));

}  // namespace
}  // namespace ember::ir
