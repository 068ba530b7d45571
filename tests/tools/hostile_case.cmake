# One hostile-input case: runs COMMAND with ARGS (separated by |), and passes when it exits with
# STATUS (the tools' documented 1 unless given), prints a line matching EXPECT, and leaves
# no file OUT (nor OUT.partial) behind when OUT is given.
#   cmake -DCOMMAND=<program> -DARGS=<a|b> -DEXPECT=<regex> [-DSTATUS=1] [-DOUT=<path>] -P hostile_case.cmake
cmake_minimum_required(VERSION 3.20)
if(NOT DEFINED STATUS)
  set(STATUS 1)
endif()
string(REPLACE "|" ";" ARGS "${ARGS}")
if(OUT)
  file(REMOVE "${OUT}" "${OUT}.partial")
endif()
execute_process(COMMAND ${COMMAND} ${ARGS} RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(said "${out}${err}")
if(NOT status STREQUAL STATUS)
  message(FATAL_ERROR "exit status ${status}, expected ${STATUS}; it said:\n${said}")
endif()
if(NOT said MATCHES "${EXPECT}")
  message(FATAL_ERROR "expected a line matching '${EXPECT}'; it said:\n${said}")
endif()
if(OUT AND (EXISTS "${OUT}" OR EXISTS "${OUT}.partial"))
  message(FATAL_ERROR "${OUT} was written")
endif()
message("${said}")
