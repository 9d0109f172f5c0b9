// A tokenizer.json (Hugging Face `tokenizers`): added tokens, normalizer, pre-tokenizer, BPE model,
// post-processor and decoder, run in the order and with the rules of tokenizers' encode and decode.
#include <algorithm>
#include <array>
#include <exception>
#include <new>

#include "runtime/core/error.h"
#include "runtime/llm/bpe_model.h"
#include "runtime/llm/hf_components.h"
#include "runtime/llm/tokenizer_impl.h"
#include "runtime/llm/unicode.h"

namespace ember::llm {
namespace {

struct AddedToken {
  std::string content;
  // What decode reads for it: the content, normalized when the token is (Hugging Face's
  // id_to_token gives "▁quick▁fox" for a normalized "quick fox" under Llama 2's normalizer).
  std::string decoded;
  int32_t id = 0;
  bool special = false;
  bool single_word = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = false;
};

// Added tokens found in text: leftmost-longest, as the Aho-Corasick automaton of tokenizers'
// AddedVocabulary finds them, then widened by lstrip/rstrip and filtered by single_word.
class AddedTokenMatcher {
 public:
  void add(std::string pattern, const AddedToken* token) {
    if (pattern.empty()) return;
    const auto first = static_cast<unsigned char>(pattern[0]);
    by_first_byte_[first].push_back({std::move(pattern), token});
  }
  void finish() {
    for (auto& list : by_first_byte_) {
      std::stable_sort(list.begin(), list.end(), [](const Entry& a, const Entry& b) {
        return a.pattern.size() > b.pattern.size();
      });
    }
  }
  bool empty() const {
    return std::all_of(by_first_byte_.begin(), by_first_byte_.end(),
                       [](const auto& list) { return list.empty(); });
  }

  // Splits `piece` into pieces with a token (id >= 0) and pieces without (id -1).
  void split(const Piece& piece, std::vector<std::pair<Piece, int32_t>>& out) const {
    const std::string& s = piece.text;
    size_t start_offset = 0;
    for (size_t i = 0; i < s.size();) {
      const Entry* hit = nullptr;
      for (const Entry& e : by_first_byte_[static_cast<unsigned char>(s[i])]) {
        if (s.compare(i, e.pattern.size(), e.pattern) == 0) {
          hit = &e;
          break;
        }
      }
      if (hit == nullptr) {
        ++i;
        continue;
      }
      size_t start = i, stop = i + hit->pattern.size();
      i = stop;
      const AddedToken& token = *hit->token;
      if (token.single_word) {
        const bool start_space = start == 0 || !ends_with_word(s.substr(0, start));
        const bool stop_space = stop == s.size() || !starts_with_word(s.substr(stop));
        if (!start_space || !stop_space) continue;
      }
      if (token.lstrip) {
        start = std::max(start - trailing_space_bytes(std::string_view(s).substr(0, start)),
                         start_offset);
      }
      if (token.rstrip) stop += leading_space_bytes(std::string_view(s).substr(stop));
      if (start_offset < start) {
        out.push_back({Piece{s.substr(start_offset, start - start_offset),
                             piece.at_origin && start_offset == 0},
                       -1});
      }
      out.push_back({Piece{s.substr(start, stop - start), false}, token.id});
      start_offset = stop;
    }
    if (start_offset < s.size()) {
      out.push_back({Piece{s.substr(start_offset), piece.at_origin && start_offset == 0}, -1});
    }
  }

 private:
  struct Entry {
    std::string pattern;
    const AddedToken* token;
  };

  static char32_t last_code_point(std::string_view s, size_t* bytes) {
    size_t i = s.size();
    while (i > 0 && (static_cast<unsigned char>(s[i - 1]) & 0xC0) == 0x80) --i;
    if (i > 0) --i;
    *bytes = s.size() - i;
    size_t k = i;
    return next_code_point(s, k);
  }
  static bool is_word(char32_t c) { return c == U'_' || is_alphanumeric(c); }
  static bool ends_with_word(std::string_view s) {
    size_t n = 0;
    return !s.empty() && is_word(last_code_point(s, &n));
  }
  static bool starts_with_word(std::string_view s) {
    size_t i = 0;
    return !s.empty() && is_word(next_code_point(s, i));
  }
  static size_t trailing_space_bytes(std::string_view s) {
    size_t total = 0;
    while (!s.empty()) {
      size_t n = 0;
      if (!is_white_space(last_code_point(s, &n))) break;
      total += n;
      s.remove_suffix(n);
    }
    return total;
  }
  static size_t leading_space_bytes(std::string_view s) {
    size_t i = 0;
    while (i < s.size()) {
      size_t k = i;
      if (!is_white_space(next_code_point(s, k))) break;
      i = k;
    }
    return i;
  }

  std::array<std::vector<Entry>, 256> by_first_byte_;
};

class HfTokenizer : public Tokenizer {
 public:
  HfTokenizer(BpeModel model, std::string name)
      : model_(std::move(model)), name_(std::move(name)) {}

  void load_rest(const json& doc);

  Result<std::vector<int32_t>> encode(std::string_view text,
                                      bool add_special_tokens) const override;
  Result<std::string> decode(std::span<const int32_t> ids, bool skip_special_tokens) const override;
  Result<std::string> token_bytes(int32_t id) const override;
  int32_t vocab_size() const override { return vocab_size_; }
  std::optional<int32_t> token_id(std::string_view token) const override;
  bool is_special(int32_t id) const override {
    const AddedToken* t = added_by_id(id);
    return t != nullptr && t->special;
  }

 private:
  const AddedToken* added_by_id(int32_t id) const {
    if (id < 0 || static_cast<size_t>(id) >= added_index_.size() || added_index_[id] < 0) {
      return nullptr;
    }
    return &added_[added_index_[id]];
  }
  // The token text of `id`, or null when no token has that id.
  const std::string* token_of(int32_t id) const {
    const AddedToken* t = added_by_id(id);
    return t != nullptr ? &t->decoded : model_.id_to_token(id);
  }
  Error check_id(int32_t id, const char* call) const {
    if (token_of(id) == nullptr) {
      return fail(Error::InvalidArgument, "%s: %s: token id %d is out of range (vocabulary of %d)",
                  name_.c_str(), call, id, vocab_size_);
    }
    return Error::Ok;
  }

  BpeModel model_;
  std::string name_;
  std::vector<AddedToken> added_;
  std::vector<int32_t> added_index_;      // id -> index in added_, or -1
  AddedTokenMatcher raw_matcher_;         // added tokens with normalized=false, on the raw text
  AddedTokenMatcher normalized_matcher_;  // normalized=true, on the normalized text
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<PostProcessor> post_processor_;
  std::unique_ptr<Decoder> decoder_;
  int32_t vocab_size_ = 0;
};

void HfTokenizer::load_rest(const json& doc) {
  if (const json* n = optional_field(doc, "normalizer"))
    normalizer_ = parse_normalizer(*n, "normalizer");
  if (const json* p = optional_field(doc, "pre_tokenizer")) {
    pre_tokenizer_ = parse_pre_tokenizer(*p, "pre_tokenizer");
  }
  if (const json* p = optional_field(doc, "post_processor")) {
    post_processor_ = parse_post_processor(*p, "post_processor");
  }
  if (const json* d = optional_field(doc, "decoder")) decoder_ = parse_decoder(*d, "decoder");
  // Truncation and padding change what encode returns; a runner asks for neither.
  if (optional_field(doc, "truncation") != nullptr) {
    load_unsupported("truncation", "truncation is set; Ember's tokenizer does not truncate");
  }
  if (optional_field(doc, "padding") != nullptr) {
    load_unsupported("padding", "padding is set; Ember's tokenizer does not pad");
  }

  vocab_size_ = model_.id_end();
  if (const json* list = optional_field(doc, "added_tokens")) {
    as_array(*list, "added_tokens");
    for (size_t i = 0; i < list->size(); ++i) {
      const std::string where = at("added_tokens", i);
      const json& t = (*list)[i];
      AddedToken token;
      token.id = as_id(field(t, "id", where), dot(where, "id"));
      token.content = as_string(field(t, "content", where), dot(where, "content"));
      if (token.content.empty()) load_fail(dot(where, "content"), "an added token cannot be empty");
      token.special = bool_or(t, "special", false, where);
      token.single_word = bool_or(t, "single_word", false, where);
      token.lstrip = bool_or(t, "lstrip", false, where);
      token.rstrip = bool_or(t, "rstrip", false, where);
      token.normalized = bool_or(t, "normalized", !token.special, where);
      vocab_size_ = std::max(vocab_size_, token.id + 1);
      added_.push_back(std::move(token));
    }
  }
  added_index_.assign(static_cast<size_t>(vocab_size_), -1);
  for (size_t i = 0; i < added_.size(); ++i) {
    added_index_[added_[i].id] = static_cast<int32_t>(i);
  }
  for (AddedToken& token : added_) {
    token.decoded = token.content;
    if (!token.normalized) {
      raw_matcher_.add(token.content, &token);
      continue;
    }
    // A normalized token is matched in normalized text, so its pattern is normalized too.
    if (normalizer_ && !normalizer_->normalize(token.decoded)) throw std::bad_alloc();
    normalized_matcher_.add(token.decoded, &token);
  }
  raw_matcher_.finish();
  normalized_matcher_.finish();
}

Result<std::vector<int32_t>> HfTokenizer::encode(std::string_view text,
                                                 bool add_special_tokens) const {
  if (auto bad = first_invalid_utf8(text)) {
    return fail(Error::InvalidArgument, "%s: encode: the text is not valid UTF-8 (at byte %zu)",
                name_.c_str(), *bad);
  }
  std::vector<int32_t> ids;
  std::vector<std::pair<Piece, int32_t>> raw_split, normalized_split;
  raw_matcher_.split(Piece{std::string(text), true}, raw_split);
  std::vector<Piece> words;
  for (auto& [piece, id] : raw_split) {
    if (id >= 0) {
      ids.push_back(id);
      continue;
    }
    if (normalizer_ && !normalizer_->normalize(piece.text)) {
      return fail(Error::MemoryAllocationFailed, "%s: encode: out of memory normalizing the text",
                  name_.c_str());
    }
    normalized_split.clear();
    normalized_matcher_.split(piece, normalized_split);
    for (auto& [sub, sub_id] : normalized_split) {
      if (sub_id >= 0) {
        ids.push_back(sub_id);
        continue;
      }
      words.clear();
      words.push_back(std::move(sub));
      if (pre_tokenizer_) pre_tokenizer_->pre_tokenize(words);
      for (const Piece& word : words) model_.tokenize(word.text, ids);
    }
  }
  if (add_special_tokens && post_processor_) post_processor_->add_special_tokens(ids);
  return ids;
}

Result<std::string> HfTokenizer::decode(std::span<const int32_t> ids,
                                        bool skip_special_tokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    EMBER_TRY(check_id(id, "decode"));
    if (skip_special_tokens && is_special(id)) continue;
    tokens.push_back(*token_of(id));
  }
  std::string text;
  if (decoder_) {
    DecodeState state;
    decoder_->decode_chain(tokens, state);
    for (const std::string& t : tokens) text += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i > 0) text += ' ';
      text += tokens[i];
    }
  }
  return text;
}

Result<std::string> HfTokenizer::token_bytes(int32_t id) const {
  EMBER_TRY(check_id(id, "token_bytes"));
  if (is_special(id)) return std::string();
  std::vector<std::string> tokens{*token_of(id)};
  if (decoder_) {
    DecodeState state{DecodeMode::TokenBytes, false};
    decoder_->decode_chain(tokens, state);
  }
  std::string bytes;
  for (const std::string& t : tokens) bytes += t;
  return bytes;
}

std::optional<int32_t> HfTokenizer::token_id(std::string_view token) const {
  for (const AddedToken& t : added_) {
    if (t.content == token) return t.id;
  }
  return model_.token_to_id(token);
}

}  // namespace

Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(std::string_view json_text,
                                                     const std::string& name) {
  try {
    const json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) {
      return fail(Error::InvalidArgument, "%s: not valid JSON", name.c_str());
    }
    if (!doc.is_object()) {
      return fail(Error::InvalidArgument, "%s: expected a JSON object (a tokenizer.json)",
                  name.c_str());
    }
    const json& model = field(doc, "model", "tokenizer.json");
    std::string type;
    if (const json* t = optional_field(model, "type")) {
      type = as_string(*t, "model.type");
    } else if (model.is_object() && model.contains("merges")) {
      type = "BPE";  // files from before the model had a "type" field
    }
    if (type != "BPE") {
      load_unsupported("model.type", "model \"" + type +
                                         "\" is not supported (Ember implements BPE only; "
                                         "WordPiece, WordLevel and Unigram are refused)");
    }
    auto tokenizer = std::make_unique<HfTokenizer>(BpeModel::from_json(model, "model"), name);
    tokenizer->load_rest(doc);
    return std::unique_ptr<Tokenizer>(std::move(tokenizer));
  } catch (const LoadError& e) {
    return fail(e.unsupported ? Error::NotSupported : Error::InvalidArgument, "%s: %s",
                name.c_str(), e.message.c_str());
  } catch (const std::bad_alloc&) {
    return fail(Error::MemoryAllocationFailed, "%s: out of memory", name.c_str());
  } catch (const std::exception& e) {
    return fail(Error::InvalidArgument, "%s: %s", name.c_str(), e.what());
  }
}

}  // namespace ember::llm
