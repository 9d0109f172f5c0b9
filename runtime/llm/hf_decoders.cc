// Decoders of tokenizer.json (hf_components.h): ids' tokens -> text, as Hugging Face's
// decode_chain computes it, and the raw bytes of one token for streaming (DecodeMode::TokenBytes).
#include <string_view>

#include "runtime/llm/hf_components.h"
#include "runtime/llm/unicode.h"

namespace ember::llm {
namespace {

constexpr std::string_view kReplacementChar = "\xEF\xBF\xBD";

class ByteLevelDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    std::string bytes;
    for (const std::string& token : tokens) {
      // A token with a character outside the byte-level alphabet (an added token such as "日本")
      // stands for its own UTF-8 bytes.
      std::string mapped;
      bool all = true;
      for (size_t i = 0; i < token.size() && all;) {
        const size_t n = utf8_sequence_length(token, i);
        if (n == 0) {
          all = false;
          break;
        }
        const int b = byte_level_byte(next_code_point(token, i));
        if (b < 0) {
          all = false;
        } else {
          mapped += static_cast<char>(b);
        }
      }
      bytes += all ? mapped : token;
    }
    tokens.assign(1, state.mode == DecodeMode::Text ? utf8_lossy(bytes) : bytes);
  }
};

class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool prepends)
      : replacement_(std::move(replacement)), prepends_(prepends) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    for (size_t t = 0; t < tokens.size(); ++t) {
      // The first token of a text loses every replacement character (Hugging Face's rule: the
      // prepended "▁" goes, and so does any other in that token).
      const bool drop = t == 0 && prepends_ && state.mode == DecodeMode::Text;
      std::string out;
      const std::string& token = tokens[t];
      for (size_t i = 0; i < token.size();) {
        if (token.compare(i, replacement_.size(), replacement_) == 0) {
          if (!drop) out += ' ';
          i += replacement_.size();
        } else {
          out += token[i++];
        }
      }
      tokens[t] = std::move(out);
    }
  }

 private:
  std::string replacement_;
  bool prepends_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState&) const override {
    for (std::string& token : tokens) {
      // Raw bytes (TokenBytes mode) that are not UTF-8 are left alone by a regex pattern.
      if (pattern_.regex && first_invalid_utf8(token)) continue;
      token = replace_all(token, pattern_, content_);
    }
  }

 private:
  Pattern pattern_;
  std::string content_;
};

// "<0xNN>" -> the byte, as Hugging Face parses it (Rust's u8::from_str_radix on the two
// characters: hex digits of either case, or a '+' and one digit).
std::optional<unsigned char> byte_token(const std::string& token) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return std::nullopt;
  const auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = token[3] == '+' ? 0 : hex(token[3]), lo = hex(token[4]);
  if (hi < 0 || lo < 0) return std::nullopt;
  return static_cast<unsigned char>(hi * 16 + lo);
}

class ByteFallbackDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    std::vector<std::string> out;
    std::string run;
    const auto flush = [&] {
      if (run.empty()) return;
      if (state.mode == DecodeMode::TokenBytes || !first_invalid_utf8(run)) {
        out.push_back(run);
      } else {
        // An invalid run: one U+FFFD per byte (not per maximal subpart), as Hugging Face does.
        for (size_t i = 0; i < run.size(); ++i) out.emplace_back(kReplacementChar);
      }
      run.clear();
    };
    for (std::string& token : tokens) {
      if (auto b = byte_token(token)) {
        run += static_cast<char>(*b);
      } else {
        flush();
        out.push_back(std::move(token));
      }
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.assign(1, std::move(all));
    state.fused = true;
  }
};

class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    // After a Fuse the strip is a rule of the whole text, which one token's bytes are not.
    if (state.mode == DecodeMode::TokenBytes && state.fused) return;
    const size_t n = content_.size();
    for (std::string& token : tokens) {
      size_t begin = 0, end = token.size();
      for (size_t k = 0; k < start_ && begin + n <= end && token.compare(begin, n, content_) == 0;
           ++k) {
        begin += n;
      }
      for (size_t k = 0; k < stop_ && end >= begin + n && token.compare(end - n, n, content_) == 0;
           ++k) {
        end -= n;
      }
      token = token.substr(begin, end - begin);
    }
  }

 private:
  std::string content_;
  size_t start_, stop_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodeState& state) const override {
    for (const auto& step : steps_) step->decode_chain(tokens, state);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::string parse_char(const json& j, const char* key, const std::string& where) {
  const std::string c = as_string(field(j, key, where), dot(where, key));
  if (c.empty() || first_invalid_utf8(c) || utf8_sequence_length(c, 0) != c.size()) {
    load_fail(dot(where, key), "expected one character");
  }
  return c;
}

}  // namespace

std::unique_ptr<Decoder> parse_decoder(const json& j, const std::string& where) {
  if (!j.is_object()) load_fail(where, "expected an object");
  const std::string type = as_string(field(j, "type", where), dot(where, "type"));
  if (type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (type == "Metaspace") {
    bool prepends = true;
    if (const json* scheme = optional_field(j, "prepend_scheme")) {
      const std::string name = as_string(*scheme, dot(where, "prepend_scheme"));
      if (name != "always" && name != "first" && name != "never") {
        load_fail(dot(where, "prepend_scheme"), "unknown prepend scheme \"" + name + "\"");
      }
      prepends = name != "never";
    } else {
      prepends = bool_or(j, "add_prefix_space", true, where);
    }
    return std::make_unique<MetaspaceDecoder>(parse_char(j, "replacement", where), prepends);
  }
  if (type == "Replace") {
    return std::make_unique<ReplaceDecoder>(
        parse_pattern(field(j, "pattern", where), dot(where, "pattern")),
        as_string(field(j, "content", where), dot(where, "content")));
  }
  if (type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse") return std::make_unique<FuseDecoder>();
  if (type == "Strip") {
    return std::make_unique<StripDecoder>(parse_char(j, "content", where),
                                          as_count(field(j, "start", where), dot(where, "start")),
                                          as_count(field(j, "stop", where), dot(where, "stop")));
  }
  if (type == "Sequence") {
    const json& list = as_array(field(j, "decoders", where), dot(where, "decoders"));
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      steps.push_back(parse_decoder(list[i], at(dot(where, "decoders"), i)));
    }
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  load_unsupported(where, "decoder \"" + type +
                              "\" is not supported (supported: ByteLevel, "
                              "Metaspace, Replace, ByteFallback, Fuse, Strip, "
                              "Sequence)");
}

}  // namespace ember::llm
