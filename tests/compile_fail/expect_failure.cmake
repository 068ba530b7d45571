# Compiles SOURCE and passes only if compilation fails with a message naming the
# concept given on the file's first line ("// expect: <regex>").
file(STRINGS ${SOURCE} _first LIMIT_COUNT 1)
string(REGEX REPLACE "^// expect: " "" _expect "${_first}")
execute_process(
  COMMAND ${COMPILER} -std=c++20 -fsyntax-only -I${INCLUDE_DIR} ${SOURCE}
  RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
if(_rc EQUAL 0)
  message(FATAL_ERROR "${SOURCE} compiled, but it must not")
endif()
if(NOT "${_err}" MATCHES "${_expect}")
  message(FATAL_ERROR "${SOURCE} failed to compile without naming '${_expect}':\n${_err}")
endif()
message(STATUS "${SOURCE}: rejected as expected ('${_expect}')")
