#include "compiler/ir/op_schema.h"

#include <gtest/gtest.h>

namespace ember::ir {
namespace {

constexpr const char* kTable[] = {
#include "compiler/ir/aten_schemas.inc"
};

TEST(OpSchema, EveryBuiltinSchemaParsesAndPrintsBack) {
  for (const char* text : kTable) {
    StatusOr<OpSchema> s = OpSchema::parse(text);
    ASSERT_TRUE(s.ok()) << s.status().message();
    EXPECT_EQ(s->to_string(), text);
  }
  EXPECT_GE(OpRegistry::builtin().size(), std::size(kTable));
}

TEST(OpSchema, InPlaceOpMutatesAndAliasesSelf) {
  const OpSchema* s = OpRegistry::builtin().find("aten::add_", "Tensor");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->mutated_arguments(), std::vector<size_t>{0});
  EXPECT_EQ(s->aliased_argument(0), 0u);
  EXPECT_FALSE(s->is_view());
  EXPECT_TRUE(s->arguments()[2].kwarg_only);
  EXPECT_EQ(s->arguments()[2].default_value, "1");
  EXPECT_EQ(s->arguments()[2].kind, TypeKind::Scalar);
}

TEST(OpSchema, ViewsAliasWithoutWriting) {
  for (const char* op : {"aten::select", "aten::slice", "aten::view", "aten::t"}) {
    const OpSchema* s = nullptr;
    for (const char* overload : {"int", "Tensor", "default"}) {
      s = s ? s : OpRegistry::builtin().find(op, overload);
    }
    ASSERT_NE(s, nullptr) << op;
    EXPECT_TRUE(s->is_view()) << op;
    EXPECT_FALSE(s->is_mutating()) << op;
    EXPECT_EQ(s->aliased_argument(0), 0u) << op;
  }
  const OpSchema* add = OpRegistry::builtin().find("aten::add", "Tensor");
  ASSERT_NE(add, nullptr);
  EXPECT_FALSE(add->is_view());
  EXPECT_EQ(add->aliased_argument(0), std::nullopt);
}

TEST(OpSchema, TypesListsAndOptionals) {
  StatusOr<OpSchema> s = OpSchema::parse(
      "aten::f.x(Tensor?[] indices, int[1]? dim, SymInt[] size, Tensor(a -> *) y, *, "
      "ScalarType? dtype=None, str mode=\"a, b\") -> (Tensor(a) values, Tensor indices)");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const auto& a = s->arguments();
  ASSERT_EQ(a.size(), 6u);
  EXPECT_TRUE(a[0].is_list && a[0].kind == TypeKind::Tensor && !a[0].is_optional);
  EXPECT_TRUE(a[1].is_list && a[1].is_optional && a[1].kind == TypeKind::Int);
  EXPECT_TRUE(a[2].is_list && a[2].kind == TypeKind::SymInt);
  EXPECT_EQ(a[3].alias_set, "a");
  EXPECT_TRUE(a[4].kwarg_only && a[4].kind == TypeKind::ScalarType);
  EXPECT_EQ(a[5].default_value, "\"a, b\"");
  ASSERT_EQ(s->returns().size(), 2u);
  EXPECT_EQ(s->returns()[0].name, "values");
  EXPECT_EQ(s->aliased_argument(0), 3u);
  EXPECT_EQ(s->overload(), "x");
}

TEST(OpSchema, MalformedSchemasAreErrors) {
  for (const char* text : {"", "add(Tensor self) -> Tensor", "aten::add(Tensor self -> Tensor",
                           "aten::add(Tensor self)", "aten::add(Tensor) -> Tensor",
                           "aten::add(Tensor self) ->", "aten::.x(Tensor self) -> Tensor"}) {
    EXPECT_FALSE(OpSchema::parse(text).ok()) << text;
  }
}

TEST(OpRegistry, AddsOnTopOfTheBuiltinsAndRefusesConflicts) {
  OpRegistry r(&OpRegistry::builtin());
  EXPECT_NE(r.find("aten::relu", "default"), nullptr);
  StatusOr<const OpSchema*> mine = r.add("my::op(Tensor self) -> Tensor");
  ASSERT_TRUE(mine.ok());
  EXPECT_EQ(r.find("my::op", "default"), *mine);
  EXPECT_EQ(OpRegistry::builtin().find("my::op", "default"), nullptr);
  EXPECT_TRUE(r.add("aten::relu(Tensor self) -> Tensor").ok());  // identical: fine
  StatusOr<const OpSchema*> clash = r.add("aten::relu(Tensor self, int x) -> Tensor");
  ASSERT_FALSE(clash.ok());
  EXPECT_NE(clash.status().message().find("already known"), std::string::npos);
}

}  // namespace
}  // namespace ember::ir
