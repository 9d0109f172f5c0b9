// The attention row kernel with AVX2 and FMA (x86-64 only; run_attention picks it by cpu_isa()).
#define EMBER_LLM_ROWS_FN attend_rows_avx2
#include "runtime/kernels/llm/attention_rows.inc"
