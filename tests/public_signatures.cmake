# What the public signatures may take. Run as
#   cmake -DINCLUDE_DIR=<dir holding nonlocal/> -P tests/public_signatures.cmake
# Outside `namespace detail` no public header may
# - declare an `int threads` parameter or field (the policy's own field in execution.hpp
#   aside) or take an execution policy after another parameter: every call that can run on
#   threads takes its policy first (docs/concepts/simd-and-threads.md);
# - take a parameter of a `detail::` type in a public member or free function: what a public
#   function takes is public;
# and no header, detail included, may fix the instruction set (`default_arch` other than as
# a template argument's default, or in the macros of the compiled-once instances) or choose
# by the register count inline (`vector_registers<Arch> >=`): the instruction set is a
# template argument, and what depends on it lives in simd/arch/.
# It prints each line that does and fails if there is one.

if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "public_signatures.cmake: pass -DINCLUDE_DIR=<the folder that holds nonlocal/>")
endif()
get_filename_component(INCLUDE_DIR "${INCLUDE_DIR}" ABSOLUTE)
file(GLOB_RECURSE headers RELATIVE "${INCLUDE_DIR}/nonlocal" "${INCLUDE_DIR}/nonlocal/*.hpp")
set(problems 0)
foreach(header ${headers})
  file(READ "${INCLUDE_DIR}/nonlocal/${header}" text)
  # Lines as list elements: no list separators inside, and no brackets, which would hold
  # the separators between them.
  string(REPLACE ";" "," text "${text}")
  string(REPLACE "\\" "#BS#" text "${text}")   # a backslash before a separator would escape it
  string(REPLACE "[" "_" text "${text}")
  string(REPLACE "]" "_" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(in_detail 0)
  set(in_private 0)
  set(number 0)
  foreach(line IN LISTS lines)
    math(EXPR number "${number} + 1")
    if(NOT header MATCHES "^(config.hpp|simd/arch/)" AND NOT line MATCHES "^ *//|#BS#$" AND
       (line MATCHES "default_arch" AND NOT line MATCHES "= default_arch" OR line MATCHES "vector_registers<[A-Za-z_]+> *[<>]"))
      message("nonlocal/${header}:${number}: an instruction set fixed or chosen in place: ${line}")
      math(EXPR problems "${problems} + 1")
    endif()
    if(header MATCHES "^detail/" OR line MATCHES "^namespace (nonlocal::)?detail {")
      set(in_detail 1)
    elseif(line MATCHES "^}  // namespace (nonlocal::)?detail")
      set(in_detail 0)
    elseif(line MATCHES "^ *(private|protected):")
      set(in_private 1)
    elseif(line MATCHES "^ *public:|^}")
      set(in_private 0)
    elseif(NOT in_detail AND NOT in_private AND NOT line MATCHES "^ *//")
      set(why "")
      if(line MATCHES "(^|[(,]) *int threads( |,|\\)|=|$)" AND NOT header STREQUAL "execution.hpp")
        set(why "an int threads parameter or field")
      elseif(line MATCHES ", *Ex policy|Ex policy = ")
        set(why "an execution policy after another parameter")
      elseif(line MATCHES "[(,] *(const )?detail::[a-z_]+(<[^()]*>)?[&*]* +[a-z_]+ *([,)]|= *{)")
        set(why "a parameter of a detail type")
      endif()
      if(why)
        message("nonlocal/${header}:${number}: ${why}: ${line}")
        math(EXPR problems "${problems} + 1")
      endif()
    endif()
  endforeach()
endforeach()
list(LENGTH headers count)
if(problems GREATER 0)
  message(FATAL_ERROR "${problems} public declaration(s) break these rules, in ${count} headers")
endif()
message("${count} headers: every threaded call takes its execution policy first, no public signature a detail type, the instruction set a template argument")
