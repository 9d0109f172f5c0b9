// The `ember` command: inspect and run programs.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "runtime/executor/module.h"
#include "runtime/platform/loaders.h"
#include "tools/compile.h"
#include "tools/generate.h"
#include "tools/inspect.h"
#include "tools/inspect_memory.h"
#include "tools/run.h"

namespace {

constexpr const char* kUsage =
    "usage:\n"
    "  ember compile MODEL.ep|MODEL.pt2 -o MODEL.pte [--ptd MODEL.ptd] [--print-ir FILE|-]\n"
    "                [--backend NAME [--backend-spec KEY=VALUE]...]... [--precision fp32|bf16]\n"
    "                [--verify[=fallback] [--verify-input FILE.npy]... [--verify-tolerance X]\n"
    "                 [--verify-seed N]] [--quiet|--verbose]\n"
    "  ember inspect MODEL.pte [--json] [--plan FILE.svg [--method NAME]]\n"
    "  ember inspect MODEL.pte --memory [--ptd FILE] [--threads N] [--json]\n"
    "  ember inspect MODEL.ep|MODEL.pt2 [--backend NAME [--backend-spec KEY=VALUE]...]...\n"
    "                [--verbose]\n"
    "  ember run MODEL.pte [--method NAME] [--ptd FILE] [--input FILE.npy]... [--output-dir DIR]\n"
    "            [--repeat N] [--threads N] [--seed N] [--load-mode file|mmap|mlock|mlock-ignore]\n"
    "            [--profile] [--trace FILE.json]\n"
    "  ember generate MODEL.pte --tokenizer FILE|DIR --prompt TEXT [--ptd FILE]\n"
    "                 [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P] [--seed N]\n"
    "                 [--threads N] [--chat] [--ignore-eos] [--quiet]\n"
    "  ember --version\n"
    "\n"
    "compile  compiles an exported program (python -m ember / ember.export, or the .pt2 archive\n"
    "         of torch.export.save: no Python needed) to a .pte program, weights in the .ptd\n"
    "         with --ptd; prints planned memory against its lower bound; --backend delegates\n"
    "         what NAME supports (repeatable, priority order; `loopback` is the reference\n"
    "         backend) and prints a line per partition and per kind of node left portable, with\n"
    "         the reason (--verbose: every node, and every item behind each note; --quiet:\n"
    "         nothing but errors); --backend-spec gives the last --backend a compile spec\n"
    "         (exclude_ops=aten::cumsum,... keeps those ops portable for any backend);\n"
    "         backends: loopback, and cpu (oneDNN) when built with it; --precision bf16 runs the\n"
    "         cpu backend's convolutions and matmuls in bfloat16 (fp32 inputs and outputs);\n"
    "         --verify runs each delegate alone and the whole program against the portable\n"
    "         kernels on sample inputs (the .npy files, or random ones of the declared shapes)\n"
    "         and prints each one's error (largest difference over the output's scale); a\n"
    "         delegate beyond the tolerance (default 1e-4) fails the compile, or with\n"
    "         --verify=fallback its partition is compiled on the portable kernels instead\n"
    "inspect  of a .pte: methods, inputs and outputs, operator calls, delegates (with their\n"
    "         nodes), constants and planned memory; --plan draws a method's memory plan as SVG\n"
    "         (tensors over instructions and arena offsets, with the lower bound); of an\n"
    "         exported program: its inputs (names, dynamic ranges), outputs, weights and\n"
    "         operators, whether Ember compiles it, and with --backend what each backend would\n"
    "         take and why every other node stays portable; writes nothing but the --plan file;\n"
    "         --memory loads every method (weights from --ptd) and prints what it takes: the\n"
    "         method allocator's bytes, its own and each delegate's (the cpu backend's by use:\n"
    "         weights, activations, scratchpad, and what its init left on the heap)\n"
    "run      runs a method with inputs from .npy files (random ones of the declared shape when\n"
    "         none are given), prints each output and writes DIR/output_N.npy; --repeat N runs\n"
    "         the method N times in all (a stateful program's outputs and state are those after\n"
    "         the N-th call) and prints the first call's latency and the median of the others;\n"
    "         --profile prints time per op kind, per delegate step and per instruction, and\n"
    "         --trace writes Chrome trace events (Perfetto, chrome://tracing), both over the\n"
    "         calls the median covers\n"
    "generate runs an LLM program (python -m ember export-llm, or ExecuTorch's export_llama)\n"
    "         on a prompt: the new text only on stdout, streamed (UTF-8 whole), and on stderr\n"
    "         prefill and decode tokens/s, time to first token and peak memory (--quiet: none);\n"
    "         --tokenizer is a Hugging Face tokenizer.json or a SentencePiece .model (or a\n"
    "         directory with one); temperature 0 (the default) is greedy; stops at an EOS id,\n"
    "         --max-new-tokens (default 128) or the end of the program's context; --chat\n"
    "         puts the prompt in the model's chat template (rendered by export-llm);\n"
    "         --ignore-eos generates --max-new-tokens whatever comes (benchmarks)\n";

// A usage error: the problem and where the usage is, in two lines (exit 2).
int usage_error(const char* message) {
  std::fprintf(stderr, "error: %s\nrun `ember --help` (or `ember COMMAND --help`) for usage\n",
               message);
  return 2;
}

bool is_help(const char* arg) {
  return std::strcmp(arg, "--help") == 0 || std::strcmp(arg, "-h") == 0;
}

// Whether `path` is an exported program (Ember's .ep, magic "EMBEREP\0", or a .pt2 ZIP archive)
// rather than a .pte: read only when it is a regular file.
bool is_exported_program(const std::string& path) {
  if (!ember::regular_file_size(path.c_str()).ok()) return false;
  std::ifstream in(path, std::ios::binary);
  char magic[8] = {};
  in.read(magic, sizeof(magic));
  const std::streamsize n = in.gcount();
  return (n == 8 && std::memcmp(magic, "EMBEREP", 8) == 0) ||
         (n >= 4 && std::memcmp(magic, "PK\x03\x04", 4) == 0);
}

// The most threads `ember run --threads` takes: more than any machine Ember targets has cores.
constexpr int kMaxThreads = 256;

// Whether `a` and `b` name the same file (an existing one, by device and inode; else by text).
bool same_file(const std::string& a, const std::string& b) {
  std::error_code ea, eb;
  const bool both = std::filesystem::exists(a, ea) && std::filesystem::exists(b, eb);
  if (both) return std::filesystem::equivalent(a, b, ea);
  return std::filesystem::weakly_canonical(a, ea) == std::filesystem::weakly_canonical(b, eb);
}

bool parse_int(const char* s, int* out) {
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (end == s || *end != '\0' || v < 0 || v > 1000000000) return false;
  *out = static_cast<int>(v);
  return true;
}

int inspect_main(int argc, char** argv) {
  std::string model;
  bool json = false;
  ember::tools::CompileCommand plan;        // of an exported program
  std::string picture, method = "forward";  // --plan FILE.svg [--method NAME], of a .pte
  bool memory = false;                      // --memory [--ptd FILE] [--threads N], of a .pte
  std::string ptd;
  int threads = 0;
  for (int i = 0; i < argc; ++i) {
    if (is_help(argv[i])) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--memory") == 0) {
      memory = true;
    } else if (std::strcmp(argv[i], "--ptd") == 0 || std::strcmp(argv[i], "--threads") == 0) {
      if (i + 1 >= argc) return usage_error((std::string(argv[i]) + " needs a value").c_str());
      if (std::strcmp(argv[i], "--ptd") == 0) {
        ptd = argv[i + 1];
      } else if (!parse_int(argv[i + 1], &threads) || threads < 1 || threads > kMaxThreads) {
        return usage_error("--threads needs an integer from 1 to 256");
      }
      ++i;
    } else if (std::strcmp(argv[i], "--plan") == 0 || std::strcmp(argv[i], "--method") == 0) {
      if (i + 1 >= argc) return usage_error((std::string(argv[i]) + " needs a value").c_str());
      (std::strcmp(argv[i], "--plan") == 0 ? picture : method) = argv[i + 1];
      ++i;
    } else if (std::strcmp(argv[i], "--verbose") == 0 || std::strcmp(argv[i], "-v") == 0) {
      plan.verbosity = ember::tools::Verbosity::Verbose;
    } else if (std::strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
      plan.backends.push_back({argv[++i], {}});
    } else if (std::strcmp(argv[i], "--backend-spec") == 0 && i + 1 < argc &&
               !plan.backends.empty()) {
      const std::string spec = argv[++i];
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) return usage_error("--backend-spec needs KEY=VALUE");
      plan.backends.back().second.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (argv[i][0] == '-') {
      return usage_error((std::string("unknown option ") + argv[i]).c_str());
    } else if (model.empty()) {
      model = argv[i];
    } else {
      return usage_error("inspect takes one program");
    }
  }
  if (model.empty()) return usage_error("inspect needs a program file");
  const bool exported = is_exported_program(model) ||
                        (model.size() > 3 && model.compare(model.size() - 3, 3, ".ir") == 0);
  if (exported || !plan.backends.empty()) {
    if (json) return usage_error("--json describes a .pte; an exported program has text only");
    if (!picture.empty()) return usage_error("--plan draws a .pte's memory plan; compile first");
    plan.model = model;
    return ember::tools::inspect_exported_command(plan);
  }
  if (plan.verbosity != ember::tools::Verbosity::Normal) {
    return usage_error("--verbose applies to an exported program; a .pte report is complete");
  }
  if (!memory && (!ptd.empty() || threads > 0)) {
    return usage_error("--ptd and --threads go with --memory (loading the methods)");
  }
  if (memory && !picture.empty()) return usage_error("--memory and --plan are two reports");
  ember::ModuleOptions options;
  options.load_mode = ember::LoadMode::File;
  options.data_path = ptd;
  options.num_threads = threads;
  ember::Module module(model, options);
  if (ember::Error e = module.load(); e != ember::Error::Ok) {
    std::fprintf(stderr, "error: %s (%s)\n", ember::last_error_message(), ember::to_string(e));
    return 1;
  }
  if (!picture.empty()) {
    const ember::Error e = ember::tools::write_plan_picture(*module.program(), method, picture);
    if (e != ember::Error::Ok) {
      std::fprintf(stderr, "error: %s (%s)\n", ember::last_error_message(), ember::to_string(e));
      return 1;
    }
    std::fprintf(stderr, "plan of method '%s' drawn in %s\n", method.c_str(), picture.c_str());
  }
  ember::Result<std::string> report = memory
                                          ? ember::tools::inspect_memory(module, json)
                                          : ember::tools::inspect_program(*module.program(), json);
  if (!report.ok()) {
    std::fprintf(stderr, "error: %s (%s)\n", ember::last_error_message(),
                 ember::to_string(report.error()));
    return 1;
  }
  std::fputs(report->c_str(), stdout);
  return 0;
}

int run_main(int argc, char** argv) {
  ember::tools::RunOptions o;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help(argv[i])) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    auto value = [&](const char* name) -> const char* {
      if (i + 1 >= argc) return nullptr;
      (void)name;
      return argv[++i];
    };
    const bool takes_value = arg == "--method" || arg == "--ptd" || arg == "--input" ||
                             arg == "--output-dir" || arg == "--repeat" || arg == "--threads" ||
                             arg == "--seed" || arg == "--load-mode" || arg == "--trace";
    if (takes_value) {
      const char* v = value(arg.c_str());
      if (v == nullptr) return usage_error((arg + " needs a value").c_str());
      int n = 0;
      if (arg == "--method") o.method = v;
      if (arg == "--ptd") o.ptd = v;
      if (arg == "--input") o.inputs.emplace_back(v);
      if (arg == "--output-dir") o.output_dir = v;
      if (arg == "--load-mode") o.load_mode = v;
      if (arg == "--trace") o.trace = v;
      if (arg == "--repeat" || arg == "--threads" || arg == "--seed") {
        if (!parse_int(v, &n)) return usage_error((arg + " needs a non-negative integer").c_str());
        if (arg == "--repeat" && n < 1) return usage_error("--repeat needs at least 1 run");
        if (arg == "--repeat") o.repeat = n;
        if (arg == "--threads" && n > kMaxThreads) {
          return usage_error(("--threads takes at most " + std::to_string(kMaxThreads) +
                              " (0: the default, one per core up to 8)")
                                 .c_str());
        }
        if (arg == "--threads") o.threads = n;
        if (arg == "--seed") o.seed = static_cast<unsigned>(n);
      }
    } else if (arg == "--profile") {
      o.profile = true;
    } else if (arg[0] == '-') {
      return usage_error(("unknown option " + arg).c_str());
    } else if (o.model.empty()) {
      o.model = arg;
    } else {
      return usage_error("run takes one program; pass inputs with --input");
    }
  }
  if (o.model.empty()) return usage_error("run needs a program file");
  return ember::tools::run_command(o);
}

int compile_main(int argc, char** argv) {
  ember::tools::CompileCommand c;
  std::string precision;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help(argv[i])) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "-o" || arg == "--ptd" || arg == "--print-ir") {
      if (i + 1 >= argc) return usage_error((arg + " needs a value").c_str());
      (arg == "-o" ? c.output : arg == "--ptd" ? c.ptd : c.print_ir) = argv[++i];
    } else if (arg == "--backend") {
      if (i + 1 >= argc) return usage_error("--backend needs a backend name");
      c.backends.push_back({argv[++i], {}});
    } else if (arg == "--backend-spec") {
      if (i + 1 >= argc) return usage_error("--backend-spec needs KEY=VALUE");
      if (c.backends.empty()) return usage_error("--backend-spec must follow a --backend");
      const std::string spec = argv[++i];
      const size_t eq = spec.find('=');
      if (eq == std::string::npos || eq == 0) return usage_error("--backend-spec needs KEY=VALUE");
      c.backends.back().second.emplace_back(spec.substr(0, eq), spec.substr(eq + 1));
    } else if (arg == "--quiet" || arg == "-q" || arg == "--verbose" || arg == "-v") {
      const auto level = arg == "--quiet" || arg == "-q" ? ember::tools::Verbosity::Quiet
                                                         : ember::tools::Verbosity::Verbose;
      if (c.verbosity != ember::tools::Verbosity::Normal && c.verbosity != level) {
        return usage_error("--quiet and --verbose contradict each other");
      }
      c.verbosity = level;
    } else if (arg == "--verify" || arg == "--verify=fallback") {
      c.verify = true;
      c.verify_fallback = arg == "--verify=fallback";
    } else if (arg == "--verify-input" || arg == "--verify-tolerance" || arg == "--verify-seed") {
      if (i + 1 >= argc) return usage_error((arg + " needs a value").c_str());
      const std::string v = argv[++i];
      char* end = nullptr;
      if (arg == "--verify-input") {
        c.verify_inputs.push_back(v);
      } else if (arg == "--verify-tolerance") {
        c.verify_tolerance = std::strtod(v.c_str(), &end);
        if (end == v.c_str() || *end != '\0' || !(c.verify_tolerance >= 0)) {
          return usage_error("--verify-tolerance takes a number >= 0");
        }
      } else {
        const unsigned long seed = std::strtoul(v.c_str(), &end, 10);
        if (end == v.c_str() || *end != '\0' || seed > 0xffffffffUL) {
          return usage_error("--verify-seed takes a number");
        }
        c.verify_seed = static_cast<unsigned>(seed);
      }
    } else if (arg == "--precision") {
      if (i + 1 >= argc) return usage_error("--precision needs fp32 or bf16");
      precision = argv[++i];
      if (precision != "fp32" && precision != "bf16") {
        return usage_error("--precision takes fp32 or bf16");
      }
    } else if (arg[0] == '-') {
      return usage_error(("unknown option " + arg).c_str());
    } else if (c.model.empty()) {
      c.model = arg;
    } else {
      return usage_error("compile takes one exported program");
    }
  }
  if (c.model.empty() || c.output.empty()) {
    return usage_error("compile needs MODEL.ep (or MODEL.pt2) -o MODEL.pte");
  }
  // Writing over the input, or the program and its weights into one file, loses data.
  if (same_file(c.model, c.output) || (!c.ptd.empty() && same_file(c.model, c.ptd))) {
    return usage_error(("the output would overwrite the input " + c.model).c_str());
  }
  if (!c.ptd.empty() && same_file(c.output, c.ptd)) {
    return usage_error("-o and --ptd name the same file; the program and its weights need two");
  }
  if (!c.verify && (!c.verify_inputs.empty() || c.verify_seed != 0)) {
    return usage_error("--verify-input and --verify-seed go with --verify");
  }
  // --precision is the cpu backend's `precision` compile spec (the only backend with a choice).
  if (!precision.empty()) {
    bool found = false;
    for (auto& [name, specs] : c.backends) {
      if (name != "cpu") continue;
      specs.emplace_back("precision", precision);
      found = true;
    }
    if (!found) return usage_error("--precision applies to the cpu backend: add --backend cpu");
  }
  return ember::tools::compile_command(c);
}

}  // namespace

#if EMBER_HAVE_LLM
int generate_main(int argc, char** argv) {
  ember::tools::GenerateOptions o;
  bool have_prompt = false;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (is_help(argv[i])) {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--quiet" || arg == "-q" || arg == "--chat" || arg == "--ignore-eos") {
      (arg == "--chat" ? o.chat : arg == "--ignore-eos" ? o.ignore_eos : o.quiet) = true;
      continue;
    }
    const bool takes_value = arg == "--ptd" || arg == "--tokenizer" || arg == "--prompt" ||
                             arg == "--max-new-tokens" || arg == "--temperature" ||
                             arg == "--top-k" || arg == "--top-p" || arg == "--seed" ||
                             arg == "--threads";
    if (!takes_value) {
      if (arg[0] == '-') return usage_error(("unknown option " + arg).c_str());
      if (!o.model.empty()) return usage_error("generate takes one program");
      o.model = arg;
      continue;
    }
    if (i + 1 >= argc) return usage_error((arg + " needs a value").c_str());
    const char* v = argv[++i];
    int n = 0;
    if (arg == "--ptd") o.ptd = v;
    if (arg == "--tokenizer") o.tokenizer = v;
    if (arg == "--prompt") {
      o.prompt = v;
      have_prompt = true;
    }
    if (arg == "--max-new-tokens" || arg == "--top-k" || arg == "--seed" || arg == "--threads") {
      if (!parse_int(v, &n)) return usage_error((arg + " needs a non-negative integer").c_str());
      if (arg == "--threads" && n > kMaxThreads) {
        return usage_error(("--threads takes at most " + std::to_string(kMaxThreads)).c_str());
      }
      if (arg == "--max-new-tokens") o.max_new_tokens = n;
      if (arg == "--top-k") o.top_k = n;
      if (arg == "--threads") o.threads = n;
      if (arg == "--seed") o.seed = static_cast<uint64_t>(n);
    }
    if (arg == "--temperature" || arg == "--top-p") {
      char* end = nullptr;
      const float f = std::strtof(v, &end);
      if (end == v || *end != '\0') return usage_error((arg + " needs a number").c_str());
      (arg == "--temperature" ? o.temperature : o.top_p) = f;
    }
  }
  if (o.model.empty()) return usage_error("generate needs MODEL.pte");
  if (o.tokenizer.empty()) return usage_error("generate needs --tokenizer FILE|DIR");
  if (!have_prompt) return usage_error("generate needs --prompt TEXT");
  return ember::tools::generate_command(o);
}
#endif

int main(int argc, char** argv) {
  if (argc < 2) return usage_error("no command given");
  const std::string command = argv[1];
  if (command == "--version") {
    std::printf("ember %s (programs: .pte ET12, weights: .ptd FT01)\n", EMBER_VERSION);
    return 0;
  }
  if (command == "compile") return compile_main(argc - 2, argv + 2);
  if (command == "inspect") return inspect_main(argc - 2, argv + 2);
  if (command == "run") return run_main(argc - 2, argv + 2);
#if EMBER_HAVE_LLM
  if (command == "generate") return generate_main(argc - 2, argv + 2);
#else
  if (command == "generate") {
    return usage_error(
        "this ember was built without the LLM runner (runtime/llm needs Debian's "
        "libpcre2-dev, libutf8proc-dev and libsentencepiece-dev)");
  }
#endif
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  return usage_error(("unknown command " + command).c_str());
}
