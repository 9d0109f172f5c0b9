#include "tools/generate.h"

#include <sys/resource.h>

#include <cstdio>

#include "runtime/executor/module.h"
#include "runtime/llm/generator.h"
#include "runtime/llm/tokenizer.h"
#include "runtime/platform/clock.h"
#include "tools/run.h"

namespace ember::tools {
namespace {

int report(Error e) {
  std::fprintf(stderr, "error: %s (%s)\n", last_error_message(), to_string(e));
  return 1;
}

double peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;  // kB on Linux
}

}  // namespace

int generate_command(const GenerateOptions& o) {
  if (register_runtime() != Error::Ok) return report(Error::Internal);
  const uint64_t start = now_ns();
  Result<std::unique_ptr<llm::Tokenizer>> tokenizer = llm::Tokenizer::load(o.tokenizer);
  if (!tokenizer.ok()) return report(tokenizer.error());
  ModuleOptions options;
  options.data_path = o.ptd;
  options.num_threads = o.threads;
  Module module(o.model, options);
  if (Error e = module.load(); e != Error::Ok) return report(e);
  Result<std::unique_ptr<llm::TextGenerator>> generator =
      llm::TextGenerator::load(module, **tokenizer);
  if (!generator.ok()) return report(generator.error());
  if (Error e = module.load_method("forward"); e != Error::Ok) return report(e);
  const double load_ms = static_cast<double>(now_ns() - start) / 1e6;

  llm::GenerationOptions g;
  g.max_new_tokens = o.max_new_tokens;
  g.chat = o.chat;
  g.ignore_eos = o.ignore_eos;
  g.sampling = {.temperature = o.temperature, .top_k = o.top_k, .top_p = o.top_p, .seed = o.seed};
  Result<llm::GenerationStats> stats =
      (*generator)->generate(o.prompt, g, [](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stdout);
        std::fflush(stdout);
      });
  std::fputs("\n", stdout);
  std::fflush(stdout);
  if (!stats.ok()) return report(stats.error());
  if (!o.quiet) {
    std::fprintf(stderr,
                 "prompt: %lld tokens, prefill %.1f tokens/s (%.1f ms)\n"
                 "generated: %lld tokens, decode %.1f tokens/s, stop: %s\n"
                 "time to first token: %.1f ms (load: %.1f ms)\n"
                 "peak memory: %.1f MiB\n",
                 static_cast<long long>(stats->prompt_tokens), stats->prefill_tokens_per_s(),
                 stats->prefill_ms, static_cast<long long>(stats->generated_tokens),
                 stats->decode_tokens_per_s(), stats->stop_reason.c_str(), stats->first_token_ms,
                 load_ms, peak_rss_mib());
  }
  return 0;
}

}  // namespace ember::tools
