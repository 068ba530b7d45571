# The headers' layers (docs/architecture.md): a header includes only headers of its own
# layer or of layers below it. Run as
#   cmake -DINCLUDE_DIR=<dir holding nonlocal/> -P tests/layers.cmake
# It prints each include that reaches up, and fails if there is one or if a header has no layer.

# The layer of a header, by its path below nonlocal/ (bottom: 1).
function(nonlocal_layer path out)
  set(layers
    "1:config.hpp|concepts.hpp|concepts/.*|execution.hpp|buffer.hpp|row_matrix.hpp|simd/.*|detail/.*"
    "2:image/.*"
    "3:similarity/.*|neighborhood/.*|normalization.hpp"
    "4:kernel/.*"
    "5:weighted_aggregate.hpp|attention.hpp|pairwise.hpp"
    "6:solve/.*"
    "7:filter/.*|depth/.*"
    "8:nn/.*|io/.*"
    "9:nonlocal.hpp|depth.hpp|filter.hpp|nn.hpp")
  foreach(entry ${layers})
    string(REGEX MATCH "^([0-9]):(.*)$" _ "${entry}")
    set(number ${CMAKE_MATCH_1})
    if(path MATCHES "^(${CMAKE_MATCH_2})$")
      set(${out} ${number} PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out} "" PARENT_SCOPE)
endfunction()

if(NOT INCLUDE_DIR)
  message(FATAL_ERROR "layers.cmake: pass -DINCLUDE_DIR=<the folder that holds nonlocal/>")
endif()
get_filename_component(INCLUDE_DIR "${INCLUDE_DIR}" ABSOLUTE)
file(GLOB_RECURSE headers RELATIVE "${INCLUDE_DIR}/nonlocal" "${INCLUDE_DIR}/nonlocal/*.hpp")
set(problems 0)
foreach(header ${headers})
  nonlocal_layer("${header}" layer)
  if(layer STREQUAL "")
    message("nonlocal/${header} has no layer: add it to tests/layers.cmake and docs/architecture.md")
    math(EXPR problems "${problems} + 1")
    continue()
  endif()
  file(STRINGS "${INCLUDE_DIR}/nonlocal/${header}" includes REGEX "^#include \"nonlocal/")
  foreach(line ${includes})
    string(REGEX MATCH "\"nonlocal/([^\"]+)\"" _ "${line}")
    set(included ${CMAKE_MATCH_1})
    nonlocal_layer("${included}" included_layer)
    if(included_layer STREQUAL "" OR included_layer GREATER layer)
      message("nonlocal/${header} (layer ${layer}) includes nonlocal/${included} (layer ${included_layer})")
      math(EXPR problems "${problems} + 1")
    endif()
  endforeach()
endforeach()
list(LENGTH headers count)
if(problems GREATER 0)
  message(FATAL_ERROR "${problems} include(s) break the layers, of ${count} headers")
endif()
message("${count} headers, every include within its layer or below")
