// The attention row kernel at the baseline instruction set (SSE2 on x86-64).
#define EMBER_LLM_ROWS_FN attend_rows_generic
#include "runtime/kernels/llm/attention_rows.inc"
