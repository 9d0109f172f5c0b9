// Normalizers, pre-tokenizers and post-processors of tokenizer.json (hf_components.h).
#include "runtime/llm/hf_components.h"

#include <map>

#include "runtime/llm/unicode.h"

namespace ember::llm {
namespace {

// GPT-2's pre-tokenization pattern, which the ByteLevel pre-tokenizer applies when use_regex is
// set.
constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string type_of(const json& j, const std::string& where) {
  if (!j.is_object()) load_fail(where, "expected an object");
  return as_string(field(j, "type", where), dot(where, "type"));
}

// ---- Normalizers ----

class UnicodeNormalizer : public Normalizer {
 public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  bool normalize(std::string& s) const override {
    std::optional<std::string> out = normalize_unicode(s, form_);
    if (!out) return false;
    s = std::move(*out);
    return true;
  }

 private:
  NormalForm form_;
};

class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prepend) : prepend_(std::move(prepend)) {}
  bool normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prepend_);
    return true;
  }

 private:
  std::string prepend_;
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  bool normalize(std::string& s) const override {
    s = replace_all(s, pattern_, content_);
    return true;
  }

 private:
  Pattern pattern_;
  std::string content_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  bool normalize(std::string& s) const override {
    size_t begin = 0, end = s.size();
    if (left_) {
      for (size_t i = 0; i < s.size(); begin = i) {
        if (!is_white_space(next_code_point(s, i))) break;
      }
    }
    if (right_) {
      size_t i = begin;
      size_t last_non_space_end = begin;
      while (i < s.size()) {
        if (!is_white_space(next_code_point(s, i))) last_non_space_end = i;
      }
      end = last_non_space_end;
    }
    s = s.substr(begin, end - begin);
    return true;
  }

 private:
  bool left_, right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  bool normalize(std::string& s) const override {
    for (const auto& step : steps_) {
      if (!step->normalize(s)) return false;
    }
    return true;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

// ---- Splitting (Hugging Face's NormalizedString::split) ----

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

SplitBehavior parse_behavior(const json& j, const std::string& where) {
  static const std::map<std::string, SplitBehavior> names = {
      {"Removed", SplitBehavior::Removed},
      {"Isolated", SplitBehavior::Isolated},
      {"MergedWithPrevious", SplitBehavior::MergedWithPrevious},
      {"MergedWithNext", SplitBehavior::MergedWithNext},
      {"Contiguous", SplitBehavior::Contiguous}};
  const std::string name = as_string(j, where);
  auto it = names.find(name);
  if (it == names.end()) load_fail(where, "unknown split behavior \"" + name + "\"");
  return it->second;
}

struct Span {
  size_t begin, end;
  bool flag;  // a match (before the behavior), or "remove" (after it)
};

// Splits `piece` around `matches` and appends the non-empty parts that are kept to `out`.
void split_piece(const Piece& piece, const std::vector<std::pair<size_t, size_t>>& matches,
                 SplitBehavior behavior, bool invert, std::vector<Piece>& out) {
  const std::string& text = piece.text;
  std::vector<Span> spans;
  size_t prev = 0;
  for (auto [begin, end] : matches) {
    if (prev != begin) spans.push_back({prev, begin, invert});
    spans.push_back({begin, end, !invert});
    prev = end;
  }
  if (prev != text.size()) spans.push_back({prev, text.size(), invert});

  std::vector<Span> parts;
  switch (behavior) {
    case SplitBehavior::Isolated:
      for (const Span& s : spans) parts.push_back({s.begin, s.end, false});
      break;
    case SplitBehavior::Removed:
      parts = spans;
      break;
    case SplitBehavior::Contiguous: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.flag == previous_match && !parts.empty()) {
          parts.back().end = s.end;
        } else {
          parts.push_back({s.begin, s.end, false});
        }
        previous_match = s.flag;
      }
      break;
    }
    case SplitBehavior::MergedWithPrevious: {
      bool previous_match = false;
      for (const Span& s : spans) {
        if (s.flag && !previous_match && !parts.empty()) {
          parts.back().end = s.end;
        } else {
          parts.push_back({s.begin, s.end, false});
        }
        previous_match = s.flag;
      }
      break;
    }
    case SplitBehavior::MergedWithNext: {
      bool previous_match = false;
      for (auto it = spans.rbegin(); it != spans.rend(); ++it) {
        if (it->flag && !previous_match && !parts.empty()) {
          parts.back().begin = it->begin;
        } else {
          parts.push_back({it->begin, it->end, false});
        }
        previous_match = it->flag;
      }
      std::reverse(parts.begin(), parts.end());
      break;
    }
  }
  for (const Span& p : parts) {
    if (p.flag || p.end == p.begin) continue;
    out.push_back(Piece{text.substr(p.begin, p.end - p.begin), piece.at_origin && p.begin == 0});
  }
}

// ---- Pre-tokenizers ----

class SplitPreTokenizer : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (const Piece& piece : pieces) {
      split_piece(piece, pattern_.find_all(piece.text), behavior_, invert_, out);
    }
    pieces = std::move(out);
  }

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, std::optional<Regex> regex)
      : add_prefix_space_(add_prefix_space), regex_(std::move(regex)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> split;
    split.reserve(pieces.size());
    for (Piece& piece : pieces) {
      if (add_prefix_space_ && (piece.text.empty() || piece.text[0] != ' ')) {
        piece.text.insert(0, 1, ' ');
      }
      if (regex_) {
        split_piece(piece, regex_->find_all(piece.text), SplitBehavior::Isolated, false, split);
      } else if (!piece.text.empty()) {
        split.push_back(std::move(piece));
      }
    }
    const auto& chars = byte_level_chars();
    for (Piece& piece : split) {
      std::string mapped;
      mapped.reserve(piece.text.size() * 2);
      for (char c : piece.text) append_utf8(mapped, chars[static_cast<unsigned char>(c)]);
      piece.text = std::move(mapped);
    }
    pieces = std::move(split);
  }

 private:
  bool add_prefix_space_;
  std::optional<Regex> regex_;
};

enum class PrependScheme { Always, First, Never };

PrependScheme parse_prepend_scheme(const json& j, const std::string& where) {
  if (const json* scheme = optional_field(j, "prepend_scheme")) {
    const std::string name = as_string(*scheme, dot(where, "prepend_scheme"));
    if (name == "always") return PrependScheme::Always;
    if (name == "first") return PrependScheme::First;
    if (name == "never") return PrependScheme::Never;
    load_fail(dot(where, "prepend_scheme"), "unknown prepend scheme \"" + name + "\"");
  }
  // Files written before prepend_scheme existed say add_prefix_space.
  return bool_or(j, "add_prefix_space", true, where) ? PrependScheme::Always : PrependScheme::Never;
}

std::string parse_replacement(const json& j, const std::string& where) {
  const std::string r = as_string(field(j, "replacement", where), dot(where, "replacement"));
  if (r.empty() || first_invalid_utf8(r) || utf8_sequence_length(r, 0) != r.size()) {
    load_fail(dot(where, "replacement"), "expected one character");
  }
  return r;
}

class MetaspacePreTokenizer : public PreTokenizer {
 public:
  MetaspacePreTokenizer(std::string replacement, PrependScheme scheme, bool split)
      : replacement_(std::move(replacement)), scheme_(scheme), split_(split) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    std::vector<Piece> out;
    out.reserve(pieces.size());
    for (Piece& piece : pieces) {
      std::string text;
      text.reserve(piece.text.size() + replacement_.size());
      for (char c : piece.text) {
        if (c == ' ') {
          text += replacement_;
        } else {
          text += c;
        }
      }
      const bool starts = text.compare(0, replacement_.size(), replacement_) == 0;
      if (!starts && (scheme_ == PrependScheme::Always ||
                      (scheme_ == PrependScheme::First && piece.at_origin))) {
        text.insert(0, replacement_);
      }
      Piece rewritten{std::move(text), piece.at_origin};
      if (split_) {
        split_piece(rewritten, find_all_literal(rewritten.text, replacement_),
                    SplitBehavior::MergedWithNext, false, out);
      } else if (!rewritten.text.empty()) {
        out.push_back(std::move(rewritten));
      }
    }
    pieces = std::move(out);
  }

 private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void pre_tokenize(std::vector<Piece>& pieces) const override {
    for (const auto& step : steps_) step->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

// ---- Post-processors ----

class TemplateProcessor : public PostProcessor {
 public:
  // The template as a list of id runs; an empty optional marks where the sequence goes.
  explicit TemplateProcessor(std::vector<std::optional<std::vector<int32_t>>> parts)
      : parts_(std::move(parts)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    std::vector<int32_t> out;
    for (const auto& part : parts_) {
      if (part) {
        out.insert(out.end(), part->begin(), part->end());
      } else {
        out.insert(out.end(), ids.begin(), ids.end());
      }
    }
    ids = std::move(out);
  }

 private:
  std::vector<std::optional<std::vector<int32_t>>> parts_;
};

class NoOpProcessor : public PostProcessor {
 public:
  void add_special_tokens(std::vector<int32_t>&) const override {}
};

class SequenceProcessor : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  void add_special_tokens(std::vector<int32_t>& ids) const override {
    for (const auto& step : steps_) step->add_special_tokens(ids);
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

std::unique_ptr<PostProcessor> parse_template(const json& j, const std::string& where) {
  const json& special = field(j, "special_tokens", where);
  if (!special.is_object()) load_fail(dot(where, "special_tokens"), "expected an object");
  const json& single = as_array(field(j, "single", where), dot(where, "single"));
  std::vector<std::optional<std::vector<int32_t>>> parts;
  bool has_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string at_i = at(dot(where, "single"), i);
    const json& piece = single[i];
    if (const json* seq = piece.is_object() ? optional_field(piece, "Sequence") : nullptr) {
      const std::string id =
          as_string(field(*seq, "id", at_i + ".Sequence"), at_i + ".Sequence.id");
      if (id != "A") load_fail(at_i, "the single-sequence template may use sequence A only");
      parts.emplace_back(std::nullopt);
      has_sequence = true;
    } else if (const json* tok =
                   piece.is_object() ? optional_field(piece, "SpecialToken") : nullptr) {
      const std::string name =
          as_string(field(*tok, "id", at_i + ".SpecialToken"), at_i + ".SpecialToken.id");
      const json* entry = optional_field(special, name.c_str());
      if (entry == nullptr) {
        load_fail(at_i, "special token \"" + name + "\" is not in special_tokens");
      }
      const std::string entry_where = dot(where, "special_tokens") + "[\"" + name + "\"]";
      const json& ids = as_array(field(*entry, "ids", entry_where), entry_where + ".ids");
      std::vector<int32_t> run;
      for (size_t k = 0; k < ids.size(); ++k)
        run.push_back(as_id(ids[k], at(entry_where + ".ids", k)));
      parts.emplace_back(std::move(run));
    } else {
      load_fail(at_i, "expected {\"Sequence\": ...} or {\"SpecialToken\": ...}");
    }
  }
  if (!has_sequence) load_fail(dot(where, "single"), "the template has no sequence ($A)");
  return std::make_unique<TemplateProcessor>(std::move(parts));
}

// BertProcessing and RobertaProcessing: [cls] A [sep] for one sequence.
std::unique_ptr<PostProcessor> parse_cls_sep(const json& j, const std::string& where) {
  const auto id_of = [&](const char* key) {
    const json& pair = field(j, key, where);
    if (!pair.is_array() || pair.size() != 2) load_fail(dot(where, key), "expected [token, id]");
    return as_id(pair[1], dot(where, key) + "[1]");
  };
  const int32_t cls = id_of("cls"), sep = id_of("sep");
  return std::make_unique<TemplateProcessor>(std::vector<std::optional<std::vector<int32_t>>>{
      std::vector<int32_t>{cls}, std::nullopt, std::vector<int32_t>{sep}});
}

}  // namespace

std::vector<std::pair<size_t, size_t>> Pattern::find_all(std::string_view text) const {
  return regex ? regex->find_all(text) : find_all_literal(text, literal);
}

Pattern parse_pattern(const json& j, const std::string& where) {
  Pattern pattern;
  if (const json* literal = j.is_object() ? optional_field(j, "String") : nullptr) {
    pattern.literal = as_string(*literal, dot(where, "String"));
  } else if (const json* re = j.is_object() ? optional_field(j, "Regex") : nullptr) {
    std::string error;
    pattern.regex = Regex::compile(as_string(*re, dot(where, "Regex")), &error);
    if (!pattern.regex) load_fail(dot(where, "Regex"), "the pattern does not compile: " + error);
  } else {
    load_fail(where, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  return pattern;
}

std::string replace_all(std::string_view s, const Pattern& pattern, std::string_view content) {
  std::string out;
  size_t prev = 0;
  for (auto [begin, end] : pattern.find_all(s)) {
    out.append(s.substr(prev, begin - prev));
    out.append(content);
    prev = end;
  }
  out.append(s.substr(prev));
  return out;
}

std::unique_ptr<Normalizer> parse_normalizer(const json& j, const std::string& where) {
  const std::string type = type_of(j, where);
  if (type == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
  if (type == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
  if (type == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
  if (type == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
  if (type == "Prepend") {
    return std::make_unique<PrependNormalizer>(
        as_string(field(j, "prepend", where), dot(where, "prepend")));
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceNormalizer>(
        parse_pattern(field(j, "pattern", where), dot(where, "pattern")),
        as_string(field(j, "content", where), dot(where, "content")));
  }
  if (type == "Strip") {
    return std::make_unique<StripNormalizer>(bool_or(j, "strip_left", true, where),
                                             bool_or(j, "strip_right", true, where));
  }
  if (type == "Sequence") {
    const json& list = as_array(field(j, "normalizers", where), dot(where, "normalizers"));
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      steps.push_back(parse_normalizer(list[i], at(dot(where, "normalizers"), i)));
    }
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  load_unsupported(where, "normalizer \"" + type +
                              "\" is not supported (supported: NFC, NFD, "
                              "NFKC, NFKD, Prepend, Replace, Strip, Sequence)");
}

std::unique_ptr<PreTokenizer> parse_pre_tokenizer(const json& j, const std::string& where) {
  const std::string type = type_of(j, where);
  if (type == "ByteLevel") {
    std::optional<Regex> regex;
    if (bool_or(j, "use_regex", true, where)) {
      std::string error;
      regex = Regex::compile(kGpt2Pattern, &error);
      if (!regex) load_fail(where, "GPT-2's pattern does not compile: " + error);
    }
    return std::make_unique<ByteLevelPreTokenizer>(bool_or(j, "add_prefix_space", true, where),
                                                   std::move(regex));
  }
  if (type == "Split") {
    const json* behavior = optional_field(j, "behavior");
    return std::make_unique<SplitPreTokenizer>(
        parse_pattern(field(j, "pattern", where), dot(where, "pattern")),
        behavior == nullptr ? SplitBehavior::Isolated
                            : parse_behavior(*behavior, dot(where, "behavior")),
        bool_or(j, "invert", false, where));
  }
  if (type == "Metaspace") {
    return std::make_unique<MetaspacePreTokenizer>(parse_replacement(j, where),
                                                   parse_prepend_scheme(j, where),
                                                   bool_or(j, "split", true, where));
  }
  if (type == "Sequence") {
    const json& list = as_array(field(j, "pretokenizers", where), dot(where, "pretokenizers"));
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      steps.push_back(parse_pre_tokenizer(list[i], at(dot(where, "pretokenizers"), i)));
    }
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  load_unsupported(where, "pre-tokenizer \"" + type +
                              "\" is not supported (supported: ByteLevel, "
                              "Split, Metaspace, Sequence)");
}

std::unique_ptr<PostProcessor> parse_post_processor(const json& j, const std::string& where) {
  const std::string type = type_of(j, where);
  if (type == "TemplateProcessing") return parse_template(j, where);
  if (type == "ByteLevel") return std::make_unique<NoOpProcessor>();
  if (type == "BertProcessing" || type == "RobertaProcessing") return parse_cls_sep(j, where);
  if (type == "Sequence") {
    const json& list = as_array(field(j, "processors", where), dot(where, "processors"));
    std::vector<std::unique_ptr<PostProcessor>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      steps.push_back(parse_post_processor(list[i], at(dot(where, "processors"), i)));
    }
    return std::make_unique<SequenceProcessor>(std::move(steps));
  }
  load_unsupported(where, "post-processor \"" + type +
                              "\" is not supported (supported: "
                              "TemplateProcessing, ByteLevel, "
                              "BertProcessing, RobertaProcessing, "
                              "Sequence)");
}

}  // namespace ember::llm
