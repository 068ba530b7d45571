# Every public header compiles alone, in a translation unit of its own that includes nothing
# else: no header leans on another that its user happened to include first. Run as
#   cmake -DINCLUDE_DIR=<dir holding nonlocal/> -DCOMPILER=<c++> -DSCRATCH=<dir>
#         [-DFLAGS=<flags, ;-separated>] [-DSKIP=<regex of headers to leave out>] -P tests/headers_alone.cmake
# It compiles with -fsyntax-only (no code is generated), prints each header that fails with
# the compiler's first lines, and fails if one does.
foreach(var INCLUDE_DIR COMPILER SCRATCH)
  if(NOT ${var})
    message(FATAL_ERROR "headers_alone.cmake: pass -D${var}=...")
  endif()
endforeach()
get_filename_component(INCLUDE_DIR "${INCLUDE_DIR}" ABSOLUTE)
file(MAKE_DIRECTORY "${SCRATCH}")
file(GLOB_RECURSE headers RELATIVE "${INCLUDE_DIR}" "${INCLUDE_DIR}/nonlocal/*.hpp")
list(SORT headers)
set(failed 0)
set(compiled 0)
foreach(header ${headers})
  if(SKIP AND header MATCHES "${SKIP}")
    continue()
  endif()
  string(REPLACE "/" "_" unit "${header}")
  set(source "${SCRATCH}/${unit}.cpp")
  file(WRITE "${source}" "#include <${header}>\n")
  execute_process(COMMAND ${COMPILER} -std=c++20 -fsyntax-only ${FLAGS} -I${INCLUDE_DIR} ${source}
                  RESULT_VARIABLE rc ERROR_VARIABLE errors OUTPUT_VARIABLE errors)
  math(EXPR compiled "${compiled} + 1")
  if(NOT rc EQUAL 0)
    string(SUBSTRING "${errors}" 0 600 first)
    message("${header} does not compile alone:\n${first}")
    math(EXPR failed "${failed} + 1")
  endif()
endforeach()
if(failed GREATER 0)
  message(FATAL_ERROR "${failed} of ${compiled} headers do not compile alone")
endif()
message("${compiled} headers, each compiles alone")
