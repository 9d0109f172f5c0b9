# The selective build's tool on ExecuTorch's add.pte (CTest select_ops): the output must hold the
# ops.inc lines of the ops the program uses (aten::add.out) plus those named with --op, and no
# other; a missing program must fail.
execute_process(COMMAND ${TOOL} --ops-inc ${OPS_INC} --out ${OUT} --op aten::mm.out ${PTE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ember_select_ops failed (${rc}): ${out}${err}")
endif()
file(STRINGS ${OUT} lines REGEX "^EMBER_OP")
set(want "EMBER_OP(\"aten::add.out\", add_out, \"ttstt\")" "EMBER_OP(\"aten::mm.out\", mm_out, \"tttt\")")
if(NOT lines STREQUAL want)
  message(FATAL_ERROR "selected:\n${lines}\nexpected:\n${want}")
endif()
execute_process(COMMAND ${TOOL} --ops-inc ${OPS_INC} --out ${OUT}.missing ${PTE}.missing
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "cannot read")
  message(FATAL_ERROR "a missing program was not refused (${rc}): ${err}")
endif()
message(STATUS "ok: ${lines}")
