// The two kinds of Tokenizer behind Tokenizer::load (internal to runtime/llm).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "runtime/llm/tokenizer.h"

namespace ember::llm {

// A tokenizer.json's text; `name` (the file) prefixes error messages.
Result<std::unique_ptr<Tokenizer>> load_hf_tokenizer(std::string_view json_text,
                                                     const std::string& name);

// A SentencePiece model (serialized ModelProto), through libsentencepiece.
Result<std::unique_ptr<Tokenizer>> load_sentencepiece(std::string_view model,
                                                      const std::string& name);

}  // namespace ember::llm
