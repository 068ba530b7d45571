# Runs COMMAND with ARGS (a list) and passes when its exit status is EXPECTED.
#   cmake -DCOMMAND=<program> -DARGS=<a;b> -DEXPECTED=<status> -P exit_status.cmake
execute_process(COMMAND ${COMMAND} ${ARGS} RESULT_VARIABLE status OUTPUT_QUIET ERROR_QUIET)
if(NOT status STREQUAL EXPECTED)
  message(FATAL_ERROR "${COMMAND} ${ARGS}: exit status ${status}, expected ${EXPECTED}")
endif()
