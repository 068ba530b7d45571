# Cross-compiling for 64-bit Arm (xsimd's NEON path) with Debian's cross compiler
# (g++-aarch64-linux-gnu), the programs run under qemu-user (qemu-aarch64), as the neon preset
# does: cmake --preset neon && cmake --build --preset neon && ctest --preset neon
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
# Libraries come from the target's tree; headers may come from the build machine's too.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# xtensor, xsimd and Boost's headers serve every target: their package files are the build
# machine's (Debian installs them under its own multiarch folder).
foreach(package xsimd xtensor)
  set(${package}_DIR /usr/lib/${CMAKE_HOST_SYSTEM_PROCESSOR}-linux-gnu/cmake/${package} CACHE PATH "")
endforeach()
