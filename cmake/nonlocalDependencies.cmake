# Finds nonlocal's dependencies; shared by the build tree and the installed package.
# Order matters: xsimd 8.1's package config does not find xtl by itself, and its
# target links -lxtl unless the xtl target already exists.
include(CMakeFindDependencyMacro)
macro(_nonlocal_find name)
  if(CMAKE_FIND_PACKAGE_NAME)        # inside find_package(nonlocal)
    find_dependency(${name} ${ARGN})
  else()                             # configuring nonlocal itself
    find_package(${name} ${ARGN} REQUIRED)
  endif()
endmacro()
_nonlocal_find(xtl)
_nonlocal_find(xsimd 8)
_nonlocal_find(xtensor 0.24)
# OpenMP runs `execution::par`; without it `par` runs sequentially.
find_package(OpenMP QUIET COMPONENTS CXX)
