// What a backend cannot run exactly stays portable (C14), tensor lists element by element (C15):
// the partitioner's use of a backend's support table (backend_support.h).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "compiler/partition/partitioner.h"
#include "compiler/partition/partitioner_testing.h"

namespace ember::partition {
namespace {

using ir::DType;

// ---- C14: what the backend cannot run exactly stays portable --------------------------------

const char* kBf16Matmul = R"(graph(%a: f32[2, 3], %b: f32[3, 2]) {
    %a16: bf16[2, 3] = aten::_to_copy.default(self=%a, dtype=dtype(bf16))
    %b16: bf16[3, 2] = aten::_to_copy.default(self=%b, dtype=dtype(bf16))
    %mm: bf16[2, 2] = aten::mm.default(self=%a16, mat2=%b16)
    %out: f32[2, 2] = aten::_to_copy.default(self=%mm, dtype=dtype(f32))
    return (%out)
  })";

TEST(C14, Bfloat16StaysPortable) {
  auto p = parse(kBf16Matmul);
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(partition_of(*r, "mm"), -1);
  EXPECT_NE(reason_of(*r, "mm").find("dtype bfloat16 not supported"), std::string::npos)
      << reason_of(*r, "mm");
  EXPECT_EQ(r->partitions.size(), 0u) << describe_partitions(*r);
}

TEST(C14, WholeGraphRequestFailsNamingNodeAndReason) {
  auto p = parse(kBf16Matmul);
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend, {.require_all = true});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("node mm (aten::mm.default)"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find("dtype bfloat16 not supported"), std::string::npos);
}

TEST(C14, DataDependentShapesStayPortable) {
  // x[x > 0].sum(), nonzero, and an op whose result size is a fresh (unbacked) symbol.
  auto p = parse(R"(sym u0 in [0, 4]
sym u1 in [0, 4]
sym u2 in [0, 4]
graph(%x: f32[4]) {
    %gt: bool[4] = aten::gt.Scalar(self=%x, other=0)
    %index: f32[u0<=4] = aten::index.Tensor(self=%x, indices=[%gt])
    %sum: f32[] = aten::sum.default(self=%index, dtype=none)
    %nz: i64[u1<=4, 1] = aten::nonzero.default(self=%x)
    %f: f32[u2<=4] = custom::filter.default(self=%x)
    %g: f32[u2<=4] = aten::mul.Tensor(self=%f, other=%f)
    return (%sum, %nz, %g)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const char* n : {"index", "nz", "f"}) {
    EXPECT_EQ(partition_of(*r, n), -1) << n;
    EXPECT_NE(reason_of(*r, n).find("data-dependent output shape"), std::string::npos)
        << n << ": " << reason_of(*r, n);
  }
  // Consumers of a data-dependent size are fine: the size is an input to them.
  EXPECT_GE(partition_of(*r, "g"), 0);
  EXPECT_GE(partition_of(*r, "sum"), 0);
}

TEST(C14, IndexWithIntegerIndicesIsNotDataDependent) {
  auto p = parse(R"(graph(%x: f32[4], %i: i64[2]) {
    %index: f32[2] = aten::index.Tensor(self=%x, indices=[%i])
    return (%index)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(partition_of(*r, "index"), 0) << describe_partitions(*r);
}

TEST(C14, RankAboveTheLimitStaysPortable) {
  // y = x.reshape(2,1,2,3,2,2) * 2 + 1; return y.sum(-1), with a rank limit of 5.
  auto p = parse(R"(graph(%x: f32[48]) {
    %v: f32[2, 1, 2, 3, 2, 2] = aten::view.default(self=%x, size=[2, 1, 2, 3, 2, 2])
    %m: f32[2, 1, 2, 3, 2, 2] = aten::mul.Scalar(self=%v, other=2)
    %y: f32[2, 1, 2, 3, 2, 2] = aten::add.Scalar(self=%m, other=1, alpha=1)
    %s: f32[2, 1, 2, 3, 2] = aten::sum.dim_IntList(self=%y, dim=[-1], keepdim=false, dtype=none)
    %t: f32[2, 1, 2, 3, 2] = aten::mul.Scalar(self=%s, other=3)
    return (%t)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend(5);
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (const char* n : {"v", "m", "y", "s"}) {
    EXPECT_EQ(partition_of(*r, n), -1) << n;
    EXPECT_NE(reason_of(*r, n).find("rank 6 above the limit of 5"), std::string::npos)
        << n << ": " << reason_of(*r, n);
  }
  EXPECT_GE(partition_of(*r, "t"), 0);
}

TEST(C14, ConstantAboveTheRankLimitKeepsItsUserPortable) {
  auto p = parse(R"(graph(%c_c: f32[1, 2, 3, 4, 5] constant "c", %x: f32[1, 2, 3, 4, 5]) {
    %add: f32[1, 2, 3, 4, 5] = aten::add.Tensor(self=%x, other=%c_c, alpha=1)
    return (%add)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable rank4 = test_backend(4);
  auto r = partition_by_capability(*p, rank4);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(partition_of(*r, "add"), -1);
  EXPECT_NE(reason_of(*r, "add").find("rank 5 above the limit of 4"), std::string::npos);
  OpSupportTable rank5 = test_backend(5);
  auto ok = partition_by_capability(*p, rank5);
  ASSERT_TRUE(ok.ok());
  EXPECT_GE(partition_of(*ok, "add"), 0);
}

TEST(C14, ConstantOnlyPartitionIsLeftForFolding) {
  // x.index_select(0, self.idx): the backend would take only the cast of the buffer idx.
  auto p = parse(R"(graph(%b_idx: i64[3] buffer "idx", %x: f32[5], %j: i64[3]) {
    %cast: i32[3] = aten::_to_copy.default(self=%b_idx, dtype=dtype(i32))
    %sel: f32[3] = aten::index_select.default(self=%x, dim=0, index=%cast)
    %m: i64[3] = aten::mul.Tensor(self=%b_idx, other=%j)
    return (%sel, %m)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  backend.add({.op = "aten::mul", .dtypes = {DType::Float32, DType::Int64}});
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(partition_of(*r, "cast"), -1) << describe_partitions(*r);
  EXPECT_NE(reason_of(*r, "cast").find("no runtime input"), std::string::npos);
  // A runtime partition reading the same buffer does not adopt the constant computation either.
  ASSERT_EQ(r->partitions.size(), 1u);
  EXPECT_EQ(names(r->partitions[0].inputs), (std::vector<std::string>{"b_idx", "j"}));
  EXPECT_EQ(r->partitions[0].nodes.size(), 1u);
}

TEST(C14, MutatedBufferIsRuntimeData) {
  auto p = parse(R"(mutated buffer "idx"
graph(%b_idx: i64[3] buffer "idx", %x: f32[5]) {
    %cast: i32[3] = aten::_to_copy.default(self=%b_idx, dtype=dtype(i32))
    %sel: f32[3] = aten::index_select.default(self=%x, dim=0, index=%cast)
    return (%sel)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(partition_of(*r, "cast"), 0) << describe_partitions(*r);
}

TEST(C14, AttributeValuesAreChecked) {
  auto p = parse(R"(graph(%x: f32[4]) {
    %e1: f32[4] = aten::elu.default(self=%x, alpha=1, scale=1.0, input_scale=1)
    %e2: f32[4] = aten::elu.default(self=%e1, alpha=0.5, scale=1, input_scale=1)
    %e3: f32[4] = aten::elu.default(self=%e2)
    return (%e3)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_GE(partition_of(*r, "e1"), 0);
  EXPECT_EQ(partition_of(*r, "e2"), -1);
  EXPECT_NE(reason_of(*r, "e2").find("attribute alpha=0.5 not supported (needs 1)"),
            std::string::npos)
      << reason_of(*r, "e2");
  EXPECT_GE(partition_of(*r, "e3"), 0) << "schema defaults alpha=1, scale=1";
}

// ---- C15: tensor lists are checked element by element ---------------------------------------

TEST(C15, CatChecksEveryElement) {
  auto p = parse(R"(graph(%a: f32[2], %b: f16[2], %c: f32[2]) {
    %mixed: f32[4] = aten::cat.default(tensors=[%a, %b], dim=0)
    %plain: f32[4] = aten::cat.default(tensors=[%a, %c], dim=0)
    return (%mixed, %plain)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend();
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(partition_of(*r, "mixed"), -1);
  EXPECT_NE(reason_of(*r, "mixed")
                .find("dtype float16 not supported (argument 'tensors' "
                      "element 1 %b)"),
            std::string::npos)
      << reason_of(*r, "mixed");
  EXPECT_GE(partition_of(*r, "plain"), 0);
}

TEST(C15, ListElementRankIsChecked) {
  auto p = parse(R"(graph(%a: f32[1, 1, 1, 1, 2], %b: f32[1, 1, 1, 1, 1, 2]) {
    %v: f32[1, 1, 1, 1, 2] = aten::view.default(self=%b, size=[1, 1, 1, 1, 2])
    %cat: f32[1, 1, 1, 1, 4] = aten::cat.default(tensors=[%a, %v, %b], dim=4)
    return (%cat)
  })");
  ASSERT_NE(p, nullptr);
  OpSupportTable backend = test_backend(5);
  auto r = partition_by_capability(*p, backend);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_NE(reason_of(*r, "cat").find("rank 6 above the limit of 5 (argument 'tensors' element 2"),
            std::string::npos)
      << reason_of(*r, "cat");
}

}  // namespace
}  // namespace ember::partition
