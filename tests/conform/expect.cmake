# Runs MXA with ARGS ('|'-separated) and checks its exit status (RC) and, when
# given, that its output matches REGEX: what ctest alone cannot check together.
#   cmake -DMXA=<mxa> -DARGS="conform|-b|hip" -DRC=0 [-DREGEX=...] -P expect.cmake
string(REPLACE "|" ";" args "${ARGS}")
execute_process(COMMAND ${MXA} ${args} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "${RC}")
  message(FATAL_ERROR "mxa ${args}: exit status ${rc}, expected ${RC}")
endif()
if(DEFINED REGEX AND NOT "${out}${err}" MATCHES "${REGEX}")
  message(FATAL_ERROR "mxa ${args}: output does not match '${REGEX}'")
endif()
