# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# Finds what dsgd's headers need. Included by the top-level CMakeLists.txt and, after
# installation, by dsgdConfig.cmake, so a consumer finds the same dependencies the same way.
include(CMakeFindDependencyMacro)

find_dependency(Threads)
find_dependency(Boost 1.74 COMPONENTS serialization)
find_dependency(OpenSSL)
find_dependency(ZLIB)
find_dependency(nlohmann_json 3.10)
# The hash map of the embedding tables' rows (embedding/row_table.hpp): header-only (Debian:
# robin-map-dev), target tsl::robin_map.
find_dependency(tsl-robin-map)
find_package(OpenMP QUIET COMPONENTS CXX)
find_package(CUDAToolkit QUIET)

# Thrust: CCCL from the CUDA toolkit when there is one (Thrust 3), else Debian's libthrust-dev.
if(NOT TARGET dsgd::thrust)
  set(dsgd_thrust_hints "")
  if(CUDAToolkit_INCLUDE_DIRS)
    foreach(dir IN LISTS CUDAToolkit_INCLUDE_DIRS)
      list(APPEND dsgd_thrust_hints "${dir}/cccl" "${dir}")
    endforeach()
  endif()
  find_path(DSGD_THRUST_INCLUDE_DIR thrust/version.h
    HINTS ${dsgd_thrust_hints}
    PATHS /usr/local/cuda/include/cccl /usr/local/cuda/include
    DOC "Directory holding thrust/version.h (CCCL or libthrust-dev)")
  if(NOT DSGD_THRUST_INCLUDE_DIR)
    message(FATAL_ERROR "dsgd needs Thrust: install the CUDA toolkit (CCCL) or Debian's "
                        "libthrust-dev, or set DSGD_THRUST_INCLUDE_DIR")
  endif()
  add_library(dsgd::thrust INTERFACE IMPORTED)
  # sqrtf may set errno, which keeps GCC and Clang from vectorising the Adagrad and Adam
  # kernels (0.4x of memory bandwidth instead of 1.2x; docs/benchmarks.md). No result changes;
  # only errno stops being set by math functions in translation units that use dsgd.
  option(DSGD_NO_MATH_ERRNO "Compile users of dsgd with -fno-math-errno" ON)
  if(DSGD_NO_MATH_ERRNO)
    set_property(TARGET dsgd::thrust APPEND PROPERTY INTERFACE_COMPILE_OPTIONS
      "$<$<AND:$<COMPILE_LANGUAGE:CXX>,$<OR:$<CXX_COMPILER_ID:GNU>,$<CXX_COMPILER_ID:Clang>>>:-fno-math-errno>")
  endif()
  set_target_properties(dsgd::thrust PROPERTIES
    INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${DSGD_THRUST_INCLUDE_DIR}"
    INTERFACE_INCLUDE_DIRECTORIES "${DSGD_THRUST_INCLUDE_DIR}"
    # Host compilers see Thrust's "device" system as the sequential host backend; nvcc keeps CUDA.
    INTERFACE_COMPILE_DEFINITIONS
      "$<$<COMPILE_LANGUAGE:CXX>:THRUST_DEVICE_SYSTEM=THRUST_DEVICE_SYSTEM_CPP>")
  if(OpenMP_CXX_FOUND)
    # FindOpenMP guards its compile flag by language, so nvcc translation units are unaffected.
    set_property(TARGET dsgd::thrust APPEND PROPERTY INTERFACE_LINK_LIBRARIES OpenMP::OpenMP_CXX)
  endif()
endif()
