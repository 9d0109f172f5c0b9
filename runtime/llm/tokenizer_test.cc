// The tokenizers against their references: testdata/<name>.expected.json holds what Hugging Face's
// `tokenizers` (or `sentencepiece`) returned for testdata/<name>.json (.model), written by
// testdata/make_tokenizers.py. Ids are compared id for id, texts byte for byte.
#include "runtime/llm/tokenizer.h"

#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "runtime/core/error.h"

namespace ember::llm {
namespace {

using nlohmann::json;

std::string testdata(const std::string& name) {
  return std::string(EMBER_LLM_TESTDATA) + "/" + name;
}

json read_json(const std::string& path) {
  std::ifstream in(path);
  return json::parse(in);
}

std::unique_ptr<Tokenizer> load_ok(const std::string& path) {
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(path);
  EXPECT_TRUE(tok.ok()) << path << ": " << last_error_message();
  return tok.ok() ? std::move(*tok) : nullptr;
}

std::vector<int32_t> ids_of(const json& j) { return j.get<std::vector<int32_t>>(); }

std::string show(const std::string& s) {
  return json(s).dump(-1, ' ', false, json::error_handler_t::replace);
}

struct Reference {
  std::string name;
  std::string file;
  bool hf;  // a tokenizer.json (with DecodeStream steps in the expected file)
};

class ReferenceTest : public ::testing::TestWithParam<Reference> {
 protected:
  void SetUp() override {
    tok_ = load_ok(testdata(GetParam().file));
    ASSERT_NE(tok_, nullptr);
    expected_ = read_json(testdata(GetParam().name + ".expected.json"));
  }
  std::unique_ptr<Tokenizer> tok_;
  json expected_;
};

TEST_P(ReferenceTest, VocabularyAndSpecialTokens) {
  EXPECT_EQ(tok_->vocab_size(), expected_["vocab_size"].get<int32_t>());
  for (auto& [token, id] : expected_["token_ids"].items()) {
    EXPECT_EQ(tok_->token_id(token), std::optional<int32_t>(id.get<int32_t>())) << token;
  }
  EXPECT_EQ(tok_->token_id("no such token, surely"), std::nullopt);
  std::vector<int32_t> special;
  for (int32_t id = 0; id < tok_->vocab_size(); ++id) {
    if (tok_->is_special(id)) special.push_back(id);
  }
  EXPECT_EQ(special, ids_of(expected_["special"]));
}

TEST_P(ReferenceTest, EncodeAndDecodeText) {
  for (const json& c : expected_["cases"]) {
    const std::string text = c["text"];
    SCOPED_TRACE("text " + show(text));
    Result<std::vector<int32_t>> ids = tok_->encode(text, false);
    ASSERT_TRUE(ids.ok()) << last_error_message();
    EXPECT_EQ(*ids, ids_of(c["ids"]));
    Result<std::vector<int32_t>> with_special = tok_->encode(text, true);
    ASSERT_TRUE(with_special.ok()) << last_error_message();
    EXPECT_EQ(*with_special, ids_of(c["ids_special"]));

    const std::vector<int32_t> ref_ids = ids_of(c["ids"]);
    Result<std::string> text_out = tok_->decode(ref_ids, false);
    ASSERT_TRUE(text_out.ok()) << last_error_message();
    EXPECT_EQ(show(*text_out), show(c["decode"]));
    Result<std::string> skipped = tok_->decode(ref_ids, true);
    ASSERT_TRUE(skipped.ok()) << last_error_message();
    EXPECT_EQ(show(*skipped), show(c["decode_skip"]));
  }
}

// The stream decoder's pieces: each step as DecodeStream's (tokenizer.json), and all of them with
// flush() adding up to decode.
TEST_P(ReferenceTest, StreamText) {
  for (const json& c : expected_["cases"]) {
    SCOPED_TRACE("text " + show(c["text"]));
    const std::vector<int32_t> ids = ids_of(c["ids_special"]);
    StreamDecoder stream(*tok_, true);
    std::string all;
    for (size_t i = 0; i < ids.size(); ++i) {
      Result<std::string> piece = stream.step(ids[i]);
      ASSERT_TRUE(piece.ok()) << last_error_message();
      if (GetParam().hf) {
        EXPECT_EQ(show(*piece), show(c["stream_skip"][i])) << "step " << i;
      }
      all += *piece;
    }
    Result<std::string> rest = stream.flush();
    ASSERT_TRUE(rest.ok()) << last_error_message();
    all += *rest;
    Result<std::string> whole = tok_->decode(ids, true);
    ASSERT_TRUE(whole.ok());
    EXPECT_EQ(show(all), show(*whole));
  }
}

// Id sequences no text produces (every id; random runs that cut characters and put special tokens
// anywhere): decode, and DecodeStream's steps up to the one it refuses.
TEST_P(ReferenceTest, DecodeIds) {
  for (const json& c : expected_["decodes"]) {
    const std::vector<int32_t> ids = ids_of(c["ids"]);
    SCOPED_TRACE("ids " + c["ids"].dump());
    Result<std::string> text = tok_->decode(ids, false);
    ASSERT_TRUE(text.ok()) << last_error_message();
    EXPECT_EQ(show(*text), show(c["decode"]));
    Result<std::string> skipped = tok_->decode(ids, true);
    ASSERT_TRUE(skipped.ok()) << last_error_message();
    EXPECT_EQ(show(*skipped), show(c["decode_skip"]));
    if (!GetParam().hf) continue;
    for (const char* key : {"stream", "stream_skip"}) {
      StreamDecoder stream(*tok_, std::string(key) == "stream_skip");
      const json& steps = c[key];
      for (size_t i = 0; i < steps.size(); ++i) {
        Result<std::string> piece = stream.step(ids[i]);
        if (steps[i].is_null()) {
          EXPECT_FALSE(piece.ok()) << key << " step " << i;
          EXPECT_EQ(piece.error(), Error::InvalidState);
          break;
        }
        ASSERT_TRUE(piece.ok()) << key << " step " << i << ": " << last_error_message();
        EXPECT_EQ(show(*piece), show(steps[i])) << key << " step " << i;
      }
    }
  }
}

// token_bytes of the ids of a text, concatenated, is the text (byte-level), or the text with the
// leading space that decode drops (SentencePiece style).
// A text whose ids hold <unk> (which stands for no bytes, and decodes as its text) is left out.
TEST_P(ReferenceTest, TokenBytes) {
  const std::optional<int32_t> unk = tok_->token_id("<unk>");
  int checked = 0;
  for (const json& c : expected_["cases"]) {
    SCOPED_TRACE("text " + show(c["text"]));
    const std::vector<int32_t> ids = ids_of(c["ids"]);
    if (unk && std::find(ids.begin(), ids.end(), *unk) != ids.end()) continue;
    ++checked;
    std::string bytes;
    for (int32_t id : ids) {
      Result<std::string> b = tok_->token_bytes(id);
      ASSERT_TRUE(b.ok()) << last_error_message();
      bytes += *b;
    }
    std::string expected = c["decode_skip"];
    const bool byte_level = GetParam().name != "llama2" && GetParam().name != "sentencepiece" &&
                            GetParam().name != "metaspace_unk";
    if (!byte_level && !bytes.empty() && bytes[0] == ' ') bytes.erase(0, 1);
    EXPECT_EQ(show(bytes), show(expected));
  }
  EXPECT_GT(checked, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Tokenizers, ReferenceTest,
    ::testing::Values(Reference{"llama3", "llama3.json", true},
                      Reference{"qwen2", "qwen2.json", true}, Reference{"gpt2", "gpt2.json", true},
                      Reference{"llama2", "llama2.json", true},
                      Reference{"metaspace_unk", "metaspace_unk.json", true},
                      Reference{"components", "components.json", true},
                      Reference{"sentencepiece", "sentencepiece.model", false}),
    [](const ::testing::TestParamInfo<Reference>& param) { return param.param.name; });

// ---- Specific behaviors ----

TEST(Tokenizer, TokenBytesOfBytePiecesAndSpecials) {
  auto llama2 = load_ok(testdata("llama2.json"));
  ASSERT_NE(llama2, nullptr);
  const int32_t byte_e4 = *llama2->token_id("<0xE4>");
  EXPECT_EQ(*llama2->token_bytes(byte_e4), "\xE4");
  EXPECT_EQ(*llama2->token_bytes(*llama2->token_id("<s>")), "");
  auto qwen = load_ok(testdata("qwen2.json"));
  ASSERT_NE(qwen, nullptr);
  EXPECT_EQ(*qwen->token_bytes(*qwen->token_id("<|im_end|>")), "");
  EXPECT_EQ(*qwen->token_bytes(*qwen->token_id("<tool_call>")), "<tool_call>");
  EXPECT_EQ(*qwen->token_bytes(*qwen->token_id("\xC4\xA0")), " ");  // "Ġ"
  auto sp = load_ok(testdata("sentencepiece.model"));
  ASSERT_NE(sp, nullptr);
  EXPECT_EQ(*sp->token_bytes(*sp->token_id("<0x0A>")), "\n");
  EXPECT_EQ(*sp->token_bytes(*sp->token_id("</s>")), "");
}

// A streamed character cut across byte tokens comes out whole, once complete; flush() writes what
// decode writes for a character still cut at the end.
TEST(Tokenizer, StreamHoldsBackIncompleteCharacters) {
  auto llama3 = load_ok(testdata("llama3.json"));
  ASSERT_NE(llama3, nullptr);
  // The byte-level characters of the bytes E6 9D B1 (東): "æ", "Ŀ", "±".
  const int32_t e6 = *llama3->token_id("\xC3\xA6"), x9d = *llama3->token_id("\xC4\xBF"),
                b1 = *llama3->token_id("\xC2\xB1");
  StreamDecoder stream(*llama3, true);
  EXPECT_EQ(*stream.step(e6), "");
  EXPECT_EQ(*stream.step(x9d), "");
  EXPECT_EQ(*stream.step(b1), "\xE6\x9D\xB1");
  EXPECT_EQ(*stream.step(e6), "");
  EXPECT_EQ(*stream.flush(), "\xEF\xBF\xBD");
  // flush() started afresh: a lone continuation byte is held too (its text ends in U+FFFD).
  EXPECT_EQ(*stream.step(b1), "");
  EXPECT_EQ(*stream.flush(), "\xEF\xBF\xBD");
}

// Byte fallback writes one U+FFFD per byte of an invalid run, so a character cut and then followed
// by another token changes the text already streamed: DecodeStream raises, and so does step().
TEST(Tokenizer, StreamRefusesWhatDecodeStreamRefuses) {
  auto llama2 = load_ok(testdata("llama2.json"));
  ASSERT_NE(llama2, nullptr);
  StreamDecoder stream(*llama2, true);
  for (const char* byte : {"<0xE6>", "<0x9D>"})
    EXPECT_EQ(*stream.step(*llama2->token_id(byte)), "");
  EXPECT_EQ(*stream.step(*llama2->token_id("<0xB1>")), "\xE6\x9D\xB1");
  EXPECT_EQ(*stream.step(*llama2->token_id("<0xE6>")), "");
  Result<std::string> next = stream.step(*llama2->token_id("\xE2\x96\x81the"));  // "▁the"
  ASSERT_FALSE(next.ok());
  EXPECT_EQ(next.error(), Error::InvalidState);
  stream.reset();
  EXPECT_EQ(*stream.step(*llama2->token_id("\xE2\x96\x81the")), "the");
}

TEST(Tokenizer, SeveralThreadsShareOneTokenizer) {
  auto tok = load_ok(testdata("llama3.json"));
  ASSERT_NE(tok, nullptr);
  const json expected = read_json(testdata("llama3.expected.json"));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (const json& c : expected["cases"]) {
        Result<std::vector<int32_t>> ids = tok->encode(c["text"].get<std::string>(), false);
        if (!ids.ok() || *ids != ids_of(c["ids"])) ++mismatches[t];
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(Tokenizer, LoadsFromDirectory) {
  namespace fs = std::filesystem;
  const fs::path json_dir = fs::path(::testing::TempDir()) / "ember_tok_json";
  const fs::path sp_dir = fs::path(::testing::TempDir()) / "ember_tok_sp";
  fs::create_directories(json_dir);
  fs::create_directories(sp_dir);
  fs::copy_file(testdata("gpt2.json"), json_dir / "tokenizer.json",
                fs::copy_options::overwrite_existing);
  fs::copy_file(testdata("sentencepiece.model"), json_dir / "tokenizer.model",
                fs::copy_options::overwrite_existing);
  fs::copy_file(testdata("sentencepiece.model"), sp_dir / "tokenizer.model",
                fs::copy_options::overwrite_existing);
  auto from_json_dir = load_ok(json_dir.string());
  auto from_sp_dir = load_ok(sp_dir.string());
  ASSERT_NE(from_json_dir, nullptr);
  ASSERT_NE(from_sp_dir, nullptr);
  EXPECT_EQ(from_json_dir->token_id("<|endoftext|>"), std::optional<int32_t>(0));  // tokenizer.json
  EXPECT_EQ(from_sp_dir->vocab_size(), 800);
}

// ---- Errors ----

std::string write_temp(const std::string& name, const std::string& content) {
  const std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << content;
  return path;
}

// The gpt2 tokenizer.json with one change.
std::string gpt2_with(const std::function<void(json&)>& edit) {
  json doc = read_json(testdata("gpt2.json"));
  edit(doc);
  return doc.dump();
}

void expect_load_error(const std::string& path, Error error, const std::string& in_message) {
  Result<std::unique_ptr<Tokenizer>> tok = Tokenizer::load(path);
  ASSERT_FALSE(tok.ok()) << path;
  EXPECT_EQ(tok.error(), error) << last_error_message();
  EXPECT_NE(std::string(last_error_message()).find(in_message), std::string::npos)
      << "message: " << last_error_message() << "; expected it to contain: " << in_message;
}

TEST(TokenizerErrors, MissingFileAndDirectory) {
  expect_load_error(testdata("no_such_file.json"), Error::NotFound, "cannot open");
  const std::string empty_dir = ::testing::TempDir() + "/ember_tok_empty";
  std::filesystem::create_directories(empty_dir);
  expect_load_error(empty_dir, Error::NotFound, "without tokenizer.json or tokenizer.model");
}

TEST(TokenizerErrors, MalformedFiles) {
  expect_load_error(write_temp("bad.json", "{\"model\": {\"type\": \"BPE\", "),
                    Error::InvalidArgument, "not valid JSON");
  expect_load_error(write_temp("empty.json", ""), Error::InvalidArgument, "empty");
  expect_load_error(write_temp("garbage.model", "\x01\x02garbage, not a model"),
                    Error::InvalidArgument, "neither a tokenizer.json nor a SentencePiece model");
  expect_load_error(write_temp("no_model.json", "{\"version\": \"1.0\"}"), Error::InvalidArgument,
                    "missing field 'model'");
  expect_load_error(
      write_temp("bad_merge.json", gpt2_with([](json& d) { d["model"]["merges"][3] = "a b c"; })),
      Error::InvalidArgument, "model.merges[3]");
  expect_load_error(write_temp("unknown_merge.json",
                               gpt2_with([](json& d) { d["model"]["merges"][0] = "zz qq"; })),
                    Error::InvalidArgument, "not in the vocabulary");
  expect_load_error(
      write_temp("bad_id.json", gpt2_with([](json& d) { d["model"]["vocab"]["!"] = -4; })),
      Error::InvalidArgument, "model.vocab[\"!\"]");
  expect_load_error(write_temp("bad_regex.json", gpt2_with([](json& d) {
                                 d["pre_tokenizer"] = {{"type", "Split"},
                                                       {"pattern", {{"Regex", "(unclosed"}}},
                                                       {"behavior", "Isolated"},
                                                       {"invert", false}};
                               })),
                    Error::InvalidArgument, "pre_tokenizer.pattern.Regex");
}

TEST(TokenizerErrors, UnsupportedComponents) {
  expect_load_error(
      write_temp("wordpiece.json", gpt2_with([](json& d) {
                   d["model"] = {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}, {"unk_token", "a"}};
                 })),
      Error::NotSupported, "model \"WordPiece\" is not supported");
  expect_load_error(write_temp("unigram.json", gpt2_with([](json& d) {
                                 d["model"] = {{"type", "Unigram"}, {"vocab", json::array()}};
                               })),
                    Error::NotSupported, "model \"Unigram\"");
  expect_load_error(write_temp("lowercase.json", gpt2_with([](json& d) {
                                 d["normalizer"] = {{"type", "Lowercase"}};
                               })),
                    Error::NotSupported, "normalizer \"Lowercase\"");
  expect_load_error(write_temp("bert_pre.json", gpt2_with([](json& d) {
                                 d["pre_tokenizer"] = {{"type", "BertPreTokenizer"}};
                               })),
                    Error::NotSupported, "pre-tokenizer \"BertPreTokenizer\"");
  expect_load_error(write_temp("wp_decoder.json", gpt2_with([](json& d) {
                                 d["decoder"] = {{"type", "WordPiece"}, {"prefix", "##"}};
                               })),
                    Error::NotSupported, "decoder \"WordPiece\"");
  expect_load_error(
      write_temp("dropout.json", gpt2_with([](json& d) { d["model"]["dropout"] = 0.1; })),
      Error::NotSupported, "dropout");
  expect_load_error(write_temp("truncation.json", gpt2_with([](json& d) {
                                 d["truncation"] = {{"max_length", 8}};
                               })),
                    Error::NotSupported, "truncation");
}

TEST(TokenizerErrors, OutOfRangeIdsAndInvalidText) {
  for (const char* file : {"gpt2.json", "sentencepiece.model"}) {
    auto tok = load_ok(testdata(file));
    ASSERT_NE(tok, nullptr);
    const std::vector<int32_t> bad{1, tok->vocab_size()};
    Result<std::string> text = tok->decode(bad, false);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.error(), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find("out of range"), std::string::npos);
    EXPECT_FALSE(tok->decode(std::vector<int32_t>{-1}, true).ok());
    EXPECT_FALSE(tok->token_bytes(tok->vocab_size()).ok());
    EXPECT_FALSE(tok->token_bytes(-5).ok());
    StreamDecoder stream(*tok, true);
    EXPECT_FALSE(stream.step(tok->vocab_size() + 7).ok());
    Result<std::vector<int32_t>> ids = tok->encode("ok \xFF\xFE not UTF-8", false);
    ASSERT_FALSE(ids.ok());
    EXPECT_EQ(ids.error(), Error::InvalidArgument);
    EXPECT_NE(std::string(last_error_message()).find("not valid UTF-8 (at byte 3)"),
              std::string::npos)
        << last_error_message();
  }
}

}  // namespace
}  // namespace ember::llm
