// The BPE model of tokenizer.json (internal to runtime/llm): a word -> token ids by the merge
// ranks, as Hugging Face's tokenizers computes it (byte fallback, <unk> fusing, ignore_merges,
// continuing-subword prefix and end-of-word suffix).
//
//   BpeModel model = BpeModel::from_json(doc["model"], "model");  // throws LoadError
//   std::vector<int32_t> ids;
//   model.tokenize("Ġhello", ids);
//
// The merge loop takes O(n log n) for a word of n characters (a heap of candidate merges, a linked
// list of symbols); words seen before come from a bounded cache. Safe to use from several threads.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "runtime/llm/json_util.h"

namespace ember::llm {

// std::string keys looked up by std::string_view without a copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using Vocab = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  static BpeModel from_json(const json& model, const std::string& where);
  BpeModel(BpeModel&& other) noexcept;

  // Appends the ids of `word` (a pre-tokenized piece, valid UTF-8) to `out`.
  void tokenize(std::string_view word, std::vector<int32_t>& out) const;

  std::optional<int32_t> token_to_id(std::string_view token) const;
  // The token of `id`, or null when the model's vocabulary has no such id.
  const std::string* id_to_token(int32_t id) const;
  // One past the largest id of the vocabulary.
  int32_t id_end() const { return static_cast<int32_t>(id_to_token_.size()); }

 private:
  BpeModel() = default;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  struct Merge {
    int32_t rank;
    int32_t new_id;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  Vocab vocab_;
  std::vector<std::string> id_to_token_;
  std::vector<bool> has_id_;
  std::unordered_map<uint64_t, Merge> merges_;
  std::optional<std::string> unk_token_;
  std::string continuing_subword_prefix_;
  std::string end_of_word_suffix_;
  bool fuse_unk_ = false;
  bool byte_fallback_ = false;
  bool ignore_merges_ = false;
  int32_t byte_ids_[256] = {};  // the id of <0xNN>, or -1

  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int32_t>, StringHash, std::equal_to<>> cache_;
};

}  // namespace ember::llm
