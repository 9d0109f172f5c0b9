#include "runtime/llm/bpe_model.h"

#include <cstdio>
#include <queue>

#include "runtime/llm/unicode.h"

namespace ember::llm {
namespace {

// Hugging Face's cache holds 10,000 words and stops inserting when full; so does this one.
constexpr size_t kCacheCapacity = 10000;
// Longer words are not cached (a long run of one character is no word to reuse).
constexpr size_t kCacheMaxWordBytes = 256;

std::string optional_string(const json& model, const char* key, const std::string& where) {
  const json* value = optional_field(model, key);
  return value == nullptr ? std::string() : as_string(*value, dot(where, key));
}

}  // namespace

BpeModel::BpeModel(BpeModel&& other) noexcept
    : vocab_(std::move(other.vocab_)),
      id_to_token_(std::move(other.id_to_token_)),
      has_id_(std::move(other.has_id_)),
      merges_(std::move(other.merges_)),
      unk_token_(std::move(other.unk_token_)),
      continuing_subword_prefix_(std::move(other.continuing_subword_prefix_)),
      end_of_word_suffix_(std::move(other.end_of_word_suffix_)),
      fuse_unk_(other.fuse_unk_),
      byte_fallback_(other.byte_fallback_),
      ignore_merges_(other.ignore_merges_) {
  std::copy(std::begin(other.byte_ids_), std::end(other.byte_ids_), byte_ids_);
}

BpeModel BpeModel::from_json(const json& model, const std::string& where) {
  BpeModel bpe;
  if (const json* dropout = optional_field(model, "dropout")) {
    if (!dropout->is_number()) load_fail(dot(where, "dropout"), "expected a number or null");
    if (dropout->get<double>() != 0.0) {
      load_unsupported(dot(where, "dropout"),
                       "BPE dropout (random merges, for training) is not supported");
    }
  }
  const json& vocab = field(model, "vocab", where);
  if (!vocab.is_object()) load_fail(dot(where, "vocab"), "expected an object (token -> id)");
  int32_t max_id = -1;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int32_t id = as_id(it.value(), dot(where, "vocab") + "[\"" + it.key() + "\"]");
    bpe.vocab_[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  bpe.id_to_token_.resize(static_cast<size_t>(max_id + 1));
  bpe.has_id_.assign(static_cast<size_t>(max_id + 1), false);
  for (const auto& [token, id] : bpe.vocab_) {
    bpe.id_to_token_[id] = token;
    bpe.has_id_[id] = true;
  }

  if (const json* unk = optional_field(model, "unk_token")) {
    bpe.unk_token_ = as_string(*unk, dot(where, "unk_token"));
    if (!bpe.vocab_.contains(*bpe.unk_token_)) {
      load_fail(dot(where, "unk_token"), "\"" + *bpe.unk_token_ + "\" is not in the vocabulary");
    }
  }
  bpe.continuing_subword_prefix_ = optional_string(model, "continuing_subword_prefix", where);
  bpe.end_of_word_suffix_ = optional_string(model, "end_of_word_suffix", where);
  bpe.fuse_unk_ = bool_or(model, "fuse_unk", false, where);
  bpe.byte_fallback_ = bool_or(model, "byte_fallback", false, where);
  bpe.ignore_merges_ = bool_or(model, "ignore_merges", false, where);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    auto it = bpe.vocab_.find(std::string_view(name));
    bpe.byte_ids_[b] = it == bpe.vocab_.end() ? -1 : it->second;
  }

  // Merges: "a b" strings (the format before tokenizers 0.20) or ["a", "b"] pairs; a merge's rank
  // is its position. A later duplicate of a pair replaces the earlier one, as in Hugging Face's
  // map.
  const std::string merges_where = dot(where, "merges");
  const json* merges = optional_field(model, "merges");
  if (merges != nullptr) as_array(*merges, merges_where);
  int32_t rank = 0;
  const size_t prefix_len = bpe.continuing_subword_prefix_.size();
  for (size_t i = 0; merges != nullptr && i < merges->size(); ++i) {
    const json& merge = (*merges)[i];
    std::string a, b;
    if (merge.is_string()) {
      const std::string line = merge.get<std::string>();
      if (line.rfind("#version", 0) == 0) continue;
      const size_t space = line.find(' ');
      if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
        load_fail(at(merges_where, i),
                  "expected \"a b\" (two tokens and one space), got \"" + line + "\"");
      }
      a = line.substr(0, space);
      b = line.substr(space + 1);
    } else if (merge.is_array() && merge.size() == 2) {
      a = as_string(merge[0], at(merges_where, i) + "[0]");
      b = as_string(merge[1], at(merges_where, i) + "[1]");
    } else {
      load_fail(at(merges_where, i), "expected \"a b\" or [\"a\", \"b\"]");
    }
    std::string merged = a;
    merged.append(b.size() >= prefix_len &&
                          b.compare(0, prefix_len, bpe.continuing_subword_prefix_) == 0
                      ? b.substr(prefix_len)
                      : b);
    const auto ia = bpe.vocab_.find(a), ib = bpe.vocab_.find(b), im = bpe.vocab_.find(merged);
    if (ia == bpe.vocab_.end() || ib == bpe.vocab_.end() || im == bpe.vocab_.end()) {
      load_fail(at(merges_where, i), "merge \"" + a + "\" + \"" + b +
                                         "\": a token of it or the merged token \"" + merged +
                                         "\" is not in the vocabulary");
    }
    bpe.merges_[pair_key(ia->second, ib->second)] = Merge{rank++, im->second};
  }
  return bpe;
}

std::optional<int32_t> BpeModel::token_to_id(std::string_view token) const {
  auto it = vocab_.find(token);
  if (it == vocab_.end()) return std::nullopt;
  return it->second;
}

const std::string* BpeModel::id_to_token(int32_t id) const {
  if (id < 0 || id >= id_end() || !has_id_[id]) return nullptr;
  return &id_to_token_[id];
}

void BpeModel::tokenize(std::string_view word, std::vector<int32_t>& out) const {
  if (word.empty()) return;
  if (ignore_merges_) {
    auto it = vocab_.find(word);
    if (it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  const bool cacheable = word.size() <= kCacheMaxWordBytes;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(word);
    if (it != cache_.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  const size_t first = out.size();
  merge_word(word, out);
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity) {
      cache_.emplace(std::string(word), std::vector<int32_t>(out.begin() + first, out.end()));
    }
  }
}

void BpeModel::merge_word(std::string_view word, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool removed;
  };
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  const auto add = [&](int32_t id) {
    const auto n = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, n - 1, n + 1, false});
  };
  // Pending <unk>: fused with the next unknown characters when fuse_unk is set. (A character
  // taken by byte fallback does not flush it, as in Hugging Face's loop.)
  int32_t unk = -1;                                                           // -1: none pending
  const int32_t unk_id = unk_token_ ? vocab_.find(*unk_token_)->second : -1;  // checked at load
  std::string key;
  for (size_t i = 0; i < word.size();) {
    const size_t n = std::max<size_t>(1, utf8_sequence_length(word, i));
    const std::string_view ch = word.substr(i, n);
    const bool is_first = i == 0, is_last = i + n == word.size();
    i += n;
    std::string_view lookup = ch;
    if ((!is_first && !continuing_subword_prefix_.empty()) ||
        (is_last && !end_of_word_suffix_.empty())) {
      key.clear();
      if (!is_first) key += continuing_subword_prefix_;
      key += ch;
      if (is_last) key += end_of_word_suffix_;
      lookup = key;
    }
    auto it = vocab_.find(lookup);
    if (it != vocab_.end()) {
      if (unk >= 0) {
        add(unk);
        unk = -1;
      }
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : lookup) all = all && byte_ids_[static_cast<unsigned char>(c)] >= 0;
      if (all) {
        for (char c : lookup) add(byte_ids_[static_cast<unsigned char>(c)]);
        continue;
      }
    }
    if (unk_token_) {
      if (unk >= 0 && !fuse_unk_) add(unk);
      if (unk < 0 || !fuse_unk_) unk = unk_id;
    }
  }
  if (unk >= 0) add(unk);
  if (symbols.empty()) return;
  symbols.back().next = -1;

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t new_id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  const auto push_pair = [&](int32_t pos) {
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    auto it = merges_.find(pair_key(symbols[pos].id, symbols[next].id));
    if (it != merges_.end()) queue.push(Candidate{it->second.rank, pos, it->second.new_id});
  };
  for (int32_t pos = 0; pos + 1 < static_cast<int32_t>(symbols.size()); ++pos) push_pair(pos);
  while (!queue.empty()) {
    const Candidate top = queue.top();
    queue.pop();
    Symbol& left = symbols[top.pos];
    if (left.removed || left.next < 0) continue;
    // A stale candidate: one of its symbols was merged since it was queued.
    auto it = merges_.find(pair_key(left.id, symbols[left.next].id));
    if (it == merges_.end() || it->second.new_id != top.new_id) continue;
    Symbol& right = symbols[left.next];
    left.id = top.new_id;
    right.removed = true;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.pos;
    if (left.prev >= 0) push_pair(left.prev);
    push_pair(top.pos);
  }
  for (const Symbol& s : symbols) {
    if (!s.removed) out.push_back(s.id);
  }
}

}  // namespace ember::llm
