# SPDX-FileCopyrightText: Copyright (c) 2026 The dsgd authors
# SPDX-License-Identifier: Apache-2.0
#
# cmake -DMODE=<find_package|subdirectory|fetchcontent> -DDSGD_SOURCE_DIR=... -DDSGD_BINARY_DIR=...
#       -DWORK_DIR=... -P run_consumer.cmake
# Builds and runs test/consumer/project against dsgd obtained the way MODE says.
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " cmd)
    message(FATAL_ERROR "consumer (${MODE}): command failed (${rc}): ${cmd}")
  endif()
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(args -DDSGD_CONSUME=${MODE} -DCMAKE_BUILD_TYPE=Release)
if(MODE STREQUAL "find_package")
  run(${CMAKE_COMMAND} --install ${DSGD_BINARY_DIR} --prefix ${WORK_DIR}/prefix)
  list(APPEND args -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
elseif(MODE STREQUAL "fetchcontent")
  # A clean clone of the committed tree, as a user's FetchContent would see it.
  run(git clone --quiet ${DSGD_SOURCE_DIR} ${WORK_DIR}/repo)
  list(APPEND args -DDSGD_SOURCE_DIR=${WORK_DIR}/repo)
else()
  list(APPEND args -DDSGD_SOURCE_DIR=${DSGD_SOURCE_DIR})
endif()
run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR}/project -B ${WORK_DIR}/build ${args})
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
