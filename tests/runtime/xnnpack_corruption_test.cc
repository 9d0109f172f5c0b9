// ExecuTorch's XNNPACK-delegated programs (backends/xnnpack/testdata/programs, exported by
// ExecuTorch's XnnpackPartitioner), corrupted: every byte of add's and mlp's delegate payloads and
// every other byte of convnet's, overwritten five ways; the rest of add.pte; every truncation of
// the payload's segment. Each ends in a run (outputs of any value) or an Error with a message:
// never a crash. CI runs this under ASan and UBSan, so an out-of-bounds read or undefined
// behaviour fails it.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/builtin_runtime.h"
#include "tests/runtime/load_and_run.h"
#include "tests/runtime/test_util.h"

namespace ember::testing {
namespace {

const std::string kTestdata = EMBER_XNNPACK_TESTDATA;

class XnnpackCorruption : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(backends::register_builtin_runtime_backends(), Error::Ok) << last_error_message();
  }
};

// Where the delegate's payload sits in the program: the same run of make_testdata.py wrote it as
// fuzz_seeds/NAME.xnn, so its bytes are found in the .pte.
struct Fixture {
  std::vector<uint8_t> file;
  size_t payload_begin = 0, payload_end = 0;
};

Fixture load_fixture(const std::string& name) {
  Fixture f;
  f.file = read_bytes(kTestdata + "/programs/" + name + ".pte");
  const std::vector<uint8_t> payload = read_bytes(kTestdata + "/fuzz_seeds/" + name + ".xnn");
  EXPECT_FALSE(f.file.empty());
  EXPECT_FALSE(payload.empty());
  const auto at = std::search(f.file.begin(), f.file.end(), payload.begin(), payload.end());
  EXPECT_NE(at, f.file.end()) << name << ".xnn is not inside " << name << ".pte";
  f.payload_begin = static_cast<size_t>(at - f.file.begin());
  f.payload_end = f.payload_begin + payload.size();
  return f;
}

struct Tally {
  size_t ran = 0, refused_at_load = 0, refused_by_method = 0;
  ~Tally() {
    std::printf("  %zu ran, %zu refused at load, %zu refused by load_method or execute\n", ran,
                refused_at_load, refused_by_method);
  }
};

// One corrupted program: it runs, or it is refused with a message.
void probe(const std::vector<uint8_t>& bad, size_t at, Tally& t) {
  clear_error_message();
  const Outcome o = load_and_run(bad);
  if (o.ran) {
    ++t.ran;
  } else if (!o.loaded) {
    ++t.refused_at_load;
  } else if (o.refused) {
    ++t.refused_by_method;
    EXPECT_FALSE(o.error.empty()) << "byte " << at << ": refused without a message";
  }
}

void sweep_payload(const std::string& name, size_t stride, Tally& t) {
  const Fixture f = load_fixture(name);
  ASSERT_NE(f.payload_end, 0u);
  for (size_t at = f.payload_begin; at < f.payload_end; at += stride) {
    for (uint8_t value : {uint8_t(f.file[at] ^ 0xff), uint8_t(0x00), uint8_t(0x7f), uint8_t(0x80),
                          uint8_t(f.file[at] + 1)}) {
      if (value == f.file[at]) continue;
      std::vector<uint8_t> bad = f.file;
      bad[at] = value;
      probe(bad, at, t);
    }
  }
}

TEST_F(XnnpackCorruption, IntactProgramsRun) {
  for (const char* name : {"add", "mlp", "convnet"}) {
    const Fixture f = load_fixture(name);
    const Outcome o = load_and_run(f.file);
    EXPECT_TRUE(o.ran) << name << ": " << o.error;
  }
}

// The quantized program is refused at load (its nodes are not translated yet), with the node.
TEST_F(XnnpackCorruption, AnUntranslatedProgramIsRefusedNamingTheNode) {
  const Fixture f = load_fixture("mlp_qs8");
  const Outcome o = load_and_run(f.file);
  EXPECT_TRUE(o.loaded);
  if (!o.ran) {
    EXPECT_NE(o.error.find("XNNPACK delegate: node "), std::string::npos) << o.error;
  }
}

// x + y * y: every byte of its payload, each overwritten five ways.
TEST_F(XnnpackCorruption, EveryPayloadByteOfAddLoadsOrFailsCleanly) {
  Tally t;
  sweep_payload("add", 1, t);
  // Both outcomes occur: a broken table is refused, a changed scalar (a debug handle) still runs.
  EXPECT_GT(t.refused_by_method, 0u);
  EXPECT_GT(t.ran, 0u);
}

// mlp: every byte; convnet: every other one (under ASan, about 10 s in all).
TEST_F(XnnpackCorruption, PayloadBytesOfMlpAndConvnetLoadOrFailCleanly) {
  Tally t;
  sweep_payload("mlp", 1, t);
  sweep_payload("convnet", 2, t);
  EXPECT_GT(t.refused_by_method, 0u);
  EXPECT_GT(t.ran, 0u);
}

// The rest of the file, every byte (the program's tables, the delegate's reference to its
// segment), one way.
TEST_F(XnnpackCorruption, EveryByteAroundThePayloadOfAddFlippedLoadsOrFailsCleanly) {
  const Fixture f = load_fixture("add");
  Tally t;
  for (size_t at = 0; at < f.file.size(); ++at) {
    if (at == f.payload_begin) at = f.payload_end;
    if (at >= f.file.size()) break;
    std::vector<uint8_t> bad = f.file;
    bad[at] ^= 0xff;
    probe(bad, at, t);
  }
  EXPECT_GT(t.refused_at_load + t.refused_by_method, 0u);
}

// Every truncation inside the payload's segment: the program's segment table then points past the
// end, and the loader must say so.
TEST_F(XnnpackCorruption, EveryTruncationOfThePayloadIsRefused) {
  const Fixture f = load_fixture("add");
  for (size_t length = f.payload_begin; length < f.payload_end; ++length) {
    const std::vector<uint8_t> cut(f.file.begin(), f.file.begin() + static_cast<long>(length));
    const Outcome o = load_and_run(cut);
    EXPECT_FALSE(o.ran) << "a program cut to " << length << " bytes ran";
  }
}

}  // namespace
}  // namespace ember::testing
