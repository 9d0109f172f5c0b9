// A SentencePiece model (.model), run by libsentencepiece itself (Debian's libsentencepiece-dev):
// the reference implementation, so encode and decode are sentencepiece's by construction.
#include <sentencepiece_processor.h>

#include <exception>

#include "runtime/core/error.h"
#include "runtime/llm/tokenizer_impl.h"
#include "runtime/llm/unicode.h"

namespace ember::llm {
namespace {

class SentencePieceTokenizer : public Tokenizer {
 public:
  explicit SentencePieceTokenizer(std::string name) : name_(std::move(name)) {}

  sentencepiece::SentencePieceProcessor& processor() { return processor_; }

  Result<std::vector<int32_t>> encode(std::string_view text,
                                      bool add_special_tokens) const override {
    if (auto bad = first_invalid_utf8(text)) {
      return fail(Error::InvalidArgument, "%s: encode: the text is not valid UTF-8 (at byte %zu)",
                  name_.c_str(), *bad);
    }
    std::vector<int> pieces;
    const auto status = processor_.Encode(text, &pieces);
    if (!status.ok()) {
      return fail(Error::InvalidArgument, "%s: encode: %s", name_.c_str(),
                  status.ToString().c_str());
    }
    std::vector<int32_t> ids;
    ids.reserve(pieces.size() + 1);
    if (add_special_tokens && processor_.bos_id() >= 0) ids.push_back(processor_.bos_id());
    ids.insert(ids.end(), pieces.begin(), pieces.end());
    return ids;
  }

  Result<std::string> decode(std::span<const int32_t> ids,
                             bool skip_special_tokens) const override {
    // Control tokens (<s>, </s>) decode to nothing in sentencepiece; kept, they are written as
    // their piece, with the runs between them decoded by sentencepiece.
    std::string text;
    std::vector<int> run;
    for (int32_t id : ids) {
      EMBER_TRY(check_id(id, "decode"));
      if (!processor_.IsControl(id)) {
        run.push_back(id);
        continue;
      }
      if (skip_special_tokens) continue;
      EMBER_TRY(decode_run(run, text));
      text += processor_.IdToPiece(id);
    }
    EMBER_TRY(decode_run(run, text));
    return text;
  }

  Result<std::string> token_bytes(int32_t id) const override {
    EMBER_TRY(check_id(id, "token_bytes"));
    if (processor_.IsControl(id)) return std::string();
    const std::string& piece = processor_.IdToPiece(id);
    if (processor_.IsByte(id) && piece.size() == 6) {
      return std::string(1, static_cast<char>(std::stoi(piece.substr(3, 2), nullptr, 16)));
    }
    if (processor_.IsUnknown(id)) {
      // The unknown piece's surface (" ⁇ " unless the model says otherwise), as decode writes it.
      std::string text;
      std::vector<int> run{id};
      EMBER_TRY(decode_run(run, text));
      return text;
    }
    std::string bytes;
    for (size_t i = 0; i < piece.size();) {
      if (piece.compare(i, 3, "\xE2\x96\x81") == 0) {
        bytes += ' ';
        i += 3;
      } else {
        bytes += piece[i++];
      }
    }
    return bytes;
  }

  int32_t vocab_size() const override { return processor_.GetPieceSize(); }

  std::optional<int32_t> token_id(std::string_view token) const override {
    const int id = processor_.PieceToId(token);
    if (id < 0 || id >= processor_.GetPieceSize() || processor_.IdToPiece(id) != token) {
      return std::nullopt;
    }
    return id;
  }

  bool is_special(int32_t id) const override {
    return id >= 0 && id < processor_.GetPieceSize() && processor_.IsControl(id);
  }

 private:
  Error check_id(int32_t id, const char* call) const {
    if (id < 0 || id >= processor_.GetPieceSize()) {
      return fail(Error::InvalidArgument, "%s: %s: token id %d is out of range (vocabulary of %d)",
                  name_.c_str(), call, id, processor_.GetPieceSize());
    }
    return Error::Ok;
  }
  // Appends sentencepiece's decoding of `run` to `text` and clears `run`.
  Error decode_run(std::vector<int>& run, std::string& text) const {
    if (run.empty()) return Error::Ok;
    std::string piece_text;
    const auto status = processor_.Decode(run, &piece_text);
    if (!status.ok()) {
      return fail(Error::InvalidArgument, "%s: decode: %s", name_.c_str(),
                  status.ToString().c_str());
    }
    text += piece_text;
    run.clear();
    return Error::Ok;
  }

  std::string name_;
  sentencepiece::SentencePieceProcessor processor_;
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_sentencepiece(std::string_view model,
                                                      const std::string& name) {
  try {
    auto tokenizer = std::make_unique<SentencePieceTokenizer>(name);
    const auto status = tokenizer->processor().LoadFromSerializedProto(model);
    if (!status.ok()) {
      return fail(Error::InvalidArgument,
                  "%s: neither a tokenizer.json nor a SentencePiece model (sentencepiece: %s)",
                  name.c_str(), status.ToString().c_str());
    }
    return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  } catch (const std::exception& e) {
    return fail(Error::InvalidArgument, "%s: %s", name.c_str(), e.what());
  }
}

}  // namespace ember::llm
