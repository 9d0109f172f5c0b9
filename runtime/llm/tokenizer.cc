#include "runtime/llm/tokenizer.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/core/error.h"
#include "runtime/llm/tokenizer_impl.h"

namespace ember::llm {

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::load(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  if (fs::is_directory(path, ec)) {
    const fs::path dir(path);
    if (fs::is_regular_file(dir / "tokenizer.json", ec)) {
      file = (dir / "tokenizer.json").string();
    } else if (fs::is_regular_file(dir / "tokenizer.model", ec)) {
      file = (dir / "tokenizer.model").string();
    } else {
      return fail(Error::NotFound, "%s: a directory without tokenizer.json or tokenizer.model",
                  path.c_str());
    }
  }
  std::ifstream in(file, std::ios::binary);
  if (!in) return fail(Error::NotFound, "%s: cannot open the file", file.c_str());
  std::ostringstream bytes;
  bytes << in.rdbuf();
  if (in.bad()) return fail(Error::AccessFailed, "%s: cannot read the file", file.c_str());
  return load_from_bytes(bytes.str(), file);
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::load_from_bytes(std::string_view bytes,
                                                              const std::string& name) {
  // A tokenizer.json is a JSON object; a SentencePiece model is a protobuf, whose first byte is a
  // field tag (0x0A for its pieces), never '{' or whitespace.
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string_view::npos && bytes[first] == '{') {
    return load_hf_tokenizer(bytes, name);
  }
  if (bytes.empty()) return fail(Error::InvalidArgument, "%s: the file is empty", name.c_str());
  return load_sentencepiece(bytes, name);
}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

namespace {
bool ends_with_replacement(const std::string& s) {
  return s.size() >= 3 && s.compare(s.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}
}  // namespace

Result<std::string> StreamDecoder::step(int32_t id) {
  ids_.push_back(id);
  Result<std::string> text = tokenizer_.decode(ids_, skip_special_tokens_);
  if (!text.ok()) {
    ids_.pop_back();
    return text.error();
  }
  // Held back while the text ends in U+FFFD: the next token may complete the character.
  if (text->size() <= prefix_.size() || ends_with_replacement(*text)) return std::string();
  if (text->compare(0, prefix_.size(), prefix_) != 0) {
    return fail(Error::InvalidState,
                "StreamDecoder: token %d changes the text already returned (\"%s\" is now \"%s\")",
                id, prefix_.c_str(), text->c_str());
  }
  std::string new_text = text->substr(prefix_.size());
  // The ids of the text just returned become the next step's context window.
  const size_t new_prefix_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(prefix_index_));
  Result<std::string> prefix = tokenizer_.decode(ids_, skip_special_tokens_);
  if (!prefix.ok()) return prefix.error();
  prefix_ = std::move(*prefix);
  prefix_index_ = new_prefix_index;
  return new_text;
}

Result<std::string> StreamDecoder::flush() {
  Result<std::string> text = tokenizer_.decode(ids_, skip_special_tokens_);
  if (!text.ok()) return text.error();
  std::string rest;
  if (text->size() > prefix_.size()) {
    if (text->compare(0, prefix_.size(), prefix_) != 0) {
      return fail(Error::InvalidState,
                  "StreamDecoder: the held-back tokens change the text "
                  "already returned");
    }
    rest = text->substr(prefix_.size());
  }
  reset();
  return rest;
}

void StreamDecoder::reset() {
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
}

}  // namespace ember::llm
