// `ember generate`: text from an LLM program (runtime/llm/generator.h), streamed to stdout.
//
//   GenerateOptions o; o.model = "qwen.pte"; o.tokenizer = "Qwen2.5/tokenizer.json";
//   o.prompt = "Once upon a time"; o.max_new_tokens = 64;
//   int status = generate_command(o);   // the text on stdout, the numbers on stderr
#pragma once

#include <cstdint>
#include <string>

namespace ember::tools {

struct GenerateOptions {
  std::string model;
  std::string ptd;
  std::string tokenizer;  // tokenizer.json, a SentencePiece .model, or a directory with one
  std::string prompt;
  int max_new_tokens = 128;
  float temperature = 0.0f;  // 0: greedy
  int top_k = 0;
  float top_p = 1.0f;
  uint64_t seed = 0;
  int threads = 0;
  bool chat = false;  // the prompt as a user message in the program's chat template
  bool ignore_eos = false;
  bool quiet = false;  // no statistics on stderr
};

// Returns the process exit status; prints one line "error: ..." on failure.
int generate_command(const GenerateOptions& options);

}  // namespace ember::tools
