// The writer against ExecuTorch's own files: a program written by Ember with the contents of
// add.pte decodes (with flatc and ExecuTorch's schema layout) to exactly what add.pte decodes to,
// and a program with constants gets the segment, header and alignment rules of pte-format.md §8.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "compiler/emit/pte_writer.h"
#include "ember/schema/program_generated.h"
#include "runtime/executor/header.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

using namespace ember::emit;

std::string flatc_json(const std::string& dir, const std::string& pte) {
  const std::string command = std::string(EMBER_FLATC) + " --json --strict-json --defaults-json " +
                              "--raw-binary -o " + dir + " " + EMBER_SCHEMA_DIR +
                              "/program.fbs -- " + pte + " 2>&1";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  const std::string base = pte.substr(pte.find_last_of('/') + 1);
  std::ifstream in(dir + "/" + base.substr(0, base.rfind('.')) + ".json");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Writer, AddProgramDecodesExactlyLikeExecuTorchsAddPte) {
  EMBER_REQUIRE_FIXTURES();
  MethodSpec m;
  const int32_t a = m.add(TensorSpec::planned(ScalarType::Float, {1}, 0));
  const int32_t b = m.add(TensorSpec::planned(ScalarType::Float, {1}, 16));
  const int32_t out = m.add(TensorSpec::planned(ScalarType::Float, {1}, 32));
  const int32_t alpha = m.add(int64_t{1});
  m.inputs = {a, b};
  m.outputs = {out};
  m.call("aten::add", "out", {a, b, alpha, out, out});
  m.arena_sizes = {48};
  m.input_spec = "T2#2#0(T2#1#1($,$),D0())";
  m.output_spec = "$";
  Result<WrittenProgram> w = write_program(ProgramSpec{{m}});
  ASSERT_TRUE(w.ok()) << last_error_message();
  const std::string dir = ::testing::TempDir() + "/ember_writer_test";
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  ASSERT_EQ(write_file(dir + "/ours.pte", w->pte), Error::Ok);
  const std::string ours = flatc_json(dir, dir + "/ours.pte");
  const std::string theirs = flatc_json(dir, fixture_dir() + "/add.pte");
  ASSERT_FALSE(theirs.empty());
  EXPECT_EQ(ours, theirs);
  // No segment data, so no extended header, as EXIR writes it.
  EXPECT_NE(std::string(reinterpret_cast<const char*>(w->pte.data()) + 8, 4), "eh00");
}

TEST(Writer, ConstantsGoInAnAlignedSegmentBehindTheHeader) {
  MethodSpec m;
  std::vector<uint8_t> c1(12, 1), c2(8, 2);  // 3 floats, 2 floats
  const int32_t k1 = m.add(TensorSpec::constant(ScalarType::Float, {3}, c1));
  const int32_t k2 = m.add(TensorSpec::constant(ScalarType::Float, {2}, c2));
  m.outputs = {k1, k2};
  Result<WrittenProgram> w = write_program(ProgramSpec{{m}});
  ASSERT_TRUE(w.ok()) << last_error_message();
  Result<ExtendedHeader> h = ExtendedHeader::parse(w->pte.data(), w->pte.size());
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h->present);
  EXPECT_EQ(h->length, 32u);
  EXPECT_EQ(h->segment_base_offset % 128, 0u);
  EXPECT_GE(h->segment_base_offset, h->program_size);
  EXPECT_EQ(h->segment_data_size, 16u + 8u);  // second constant aligned to 16
  EXPECT_EQ(w->pte.size(), h->segment_base_offset + h->segment_data_size);
  EXPECT_EQ(w->pte[h->segment_base_offset], 1);
  EXPECT_EQ(w->pte[h->segment_base_offset + 16], 2);

  // And the runtime reads them back.
  AlignedBytes bytes(w->pte);
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  MethodMemory memory(*program->method_meta("forward"));
  Result<Method> method = program->load_method("forward", &memory.manager);
  ASSERT_TRUE(method.ok()) << last_error_message();
  EXPECT_EQ(method->get_output(1)->to_tensor().data<uint8_t>()[7], 2);
}

TEST(Writer, NamedDataIsStoredOncePerKeyAndReadBack) {
  MethodSpec m;
  std::vector<uint8_t> c(12, 1);
  m.outputs = {m.add(TensorSpec::constant(ScalarType::Float, {3}, c))};
  ProgramSpec spec{{m}};
  const std::vector<uint8_t> w1 = {1, 2, 3, 4, 5}, w2 = {9, 8, 7, 6};
  spec.named_data.push_back({"a", w1});
  spec.named_data.push_back({"a", w1});  // the same key again: stored once
  spec.named_data.push_back({"b", w1});  // other key, same bytes: one segment
  spec.named_data.push_back({"c", w2, /*external=*/true, ScalarType::Byte, {}});
  Result<WrittenProgram> w = write_program(spec);
  ASSERT_TRUE(w.ok()) << last_error_message();
  EXPECT_FALSE(w->ptd.empty());  // "c" went to the .ptd

  AlignedBytes bytes(w->pte);
  BufferDataLoader loader(bytes.data.get(), bytes.size);
  Result<Program> program = Program::load(&loader);
  ASSERT_TRUE(program.ok()) << last_error_message();
  const NamedDataMap* named = program->named_data();
  ASSERT_NE(named, nullptr);
  ASSERT_EQ(named->num_keys(), 2u);
  EXPECT_EQ(*named->key(0), "a");
  EXPECT_EQ(*named->key(1), "b");
  for (const char* key : {"a", "b"}) {
    Result<FreeableBuffer> data = named->get_data(key);
    ASSERT_TRUE(data.ok()) << last_error_message();
    EXPECT_EQ(std::vector<uint8_t>(data->bytes(), data->bytes() + data->size()), w1) << key;
  }
  EXPECT_EQ(named->get_data("c").error(), Error::NotFound);
  // Copied into a caller's buffer (how a delegate loads its weights), never past the stored size.
  uint8_t copy[5] = {};
  ASSERT_EQ(named->load_data_into("a", copy, 4), Error::Ok) << last_error_message();
  EXPECT_EQ(std::vector<uint8_t>(copy, copy + 5), (std::vector<uint8_t>{1, 2, 3, 4, 0}));
  EXPECT_EQ(named->load_data_into("a", copy, 6), Error::InvalidArgument);
  EXPECT_EQ(named->load_data_into("c", copy, 1), Error::NotFound);
  // constants, then one segment for the bytes "a" and "b" share.
  EXPECT_EQ(program->flatbuffer()->segments()->size(), 2u);

  // One key with two different contents is refused, naming it.
  spec.named_data.push_back({"a", w2});
  Result<WrittenProgram> bad = write_program(spec);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(last_error_message()).find("'a'"), std::string::npos);
}

TEST(Writer, RefusesSpecsTheFormatCannotHold) {
  MethodSpec m;
  const int32_t t = m.add(TensorSpec::planned(ScalarType::Float, {2}, 0));
  m.add(TensorListSpec{{t, 5}});  // member after the list
  EXPECT_EQ(write_program(ProgramSpec{{m}}).error(), Error::InvalidArgument);
  MethodSpec bad_constant;
  bad_constant.add(TensorSpec::constant(ScalarType::Float, {4}, std::vector<uint8_t>(3)));
  EXPECT_EQ(write_program(ProgramSpec{{bad_constant}}).error(), Error::InvalidArgument);
}

}  // namespace
}  // namespace ember::testing
