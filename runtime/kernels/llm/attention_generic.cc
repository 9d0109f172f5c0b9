// The attention kernel at the baseline instruction set (SSE2 on x86-64; any CPU): vectors of 4
// floats, which a target without vector registers computes lane by lane.
#define EMBER_LLM_VARIANT kAttentionGeneric
#define EMBER_LLM_NAME "generic"
#define EMBER_LLM_VBYTES 16
#define EMBER_LLM_SCORE_MI2 4
#define EMBER_LLM_SCORE_MI1 8
#define EMBER_LLM_VALUE_MI2 4
#define EMBER_LLM_VALUE_MI1 8
#include "runtime/kernels/llm/attention_rows.inc"
