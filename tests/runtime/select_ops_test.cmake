# The selective build's tool on ExecuTorch's add.pte (CTest select_ops): the output must hold the
# ops.inc lines of the ops the program uses (aten::add.out) plus those named with --op, and no
# other; an op without a portable kernel is reported, a prim op is not; a missing program must
# fail.
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
# An op Ember lacks is reported; a prim op is not (the prim ops are always registered).
execute_process(COMMAND ${TOOL} --ops-inc ${OPS_INC} --out ${OUT}.prim
  --op executorch_prim::et_view.default --op aten::no_such_op.out
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT err MATCHES "no portable kernel for aten::no_such_op.out:"
   OR err MATCHES "et_view")
  message(FATAL_ERROR "missing ops misreported (${rc}): ${err}")
endif()
execute_process(COMMAND ${TOOL} --ops-inc ${OPS_INC} --out ${OUT}.missing ${PTE}.missing
  RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "cannot read")
  message(FATAL_ERROR "a missing program was not refused (${rc}): ${err}")
endif()
message(STATUS "ok: ${lines}")
