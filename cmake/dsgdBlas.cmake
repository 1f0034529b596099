# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# dsgd::blas: a CBLAS implementation (OpenBLAS preferred) with its cblas.h.
if(NOT TARGET dsgd::blas)
  if(NOT DEFINED BLA_VENDOR)
    set(BLA_VENDOR OpenBLAS)
  endif()
  find_package(BLAS QUIET)
  if(NOT BLAS_FOUND)
    unset(BLA_VENDOR)
    find_package(BLAS)
  endif()
  find_path(DSGD_CBLAS_INCLUDE_DIR cblas.h
    PATH_SUFFIXES openblas x86_64-linux-gnu aarch64-linux-gnu
    DOC "Directory holding cblas.h")
  if(NOT BLAS_FOUND OR NOT DSGD_CBLAS_INCLUDE_DIR)
    message(FATAL_ERROR "dsgd's models need CBLAS: install Debian's libopenblas-dev")
  endif()
  add_library(dsgd::blas INTERFACE IMPORTED)
  set_target_properties(dsgd::blas PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${DSGD_CBLAS_INCLUDE_DIR}"
    INTERFACE_LINK_LIBRARIES "${BLAS_LIBRARIES}")
  if(BLA_VENDOR STREQUAL "OpenBLAS")
    set_property(TARGET dsgd::blas PROPERTY INTERFACE_COMPILE_DEFINITIONS DSGD_HAS_OPENBLAS=1)
  endif()
endif()
