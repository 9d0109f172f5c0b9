// The attention kernel with AVX2 and FMA (x86-64 only; run_attention picks it by cpu_isa()):
// vectors of 8 floats, 16 registers.
#define EMBER_LLM_VARIANT kAttentionAvx2
#define EMBER_LLM_NAME "avx2"
#define EMBER_LLM_VBYTES 32
#define EMBER_LLM_SCORE_MI2 6
#define EMBER_LLM_SCORE_MI1 8
#define EMBER_LLM_VALUE_MI2 6
#define EMBER_LLM_VALUE_MI1 12
#include "runtime/kernels/llm/attention_rows.inc"
